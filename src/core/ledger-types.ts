/** The shapes of the ledger of facts and decisions, below every layer that reads or shows it. */

/** The kinds of entry, each with the letter of its ids (`F1`, `A2`, `D3`). */
export const LEDGER_KINDS = { fact: 'F', assumption: 'A', decision: 'D' } as const
/** What an entry records: a fact, an assumption (which can be invalidated) or a decision. */
export type LedgerKind = keyof typeof LEDGER_KINDS

/** One entry of the ledger, as replayed. */
export interface LedgerEntry {
  /** `F<n>`, `A<n>` or `D<n>`; never reused in a vault. */
  id: string
  text: string
  reason?: string
  /** The note whose work recorded it. */
  node?: string
  step?: number
  /** The run of the vault's trace when it was recorded. */
  run?: string
  /** When it was recorded (ISO 8601). */
  at: string
}

/** A change of an assumption's standing. */
export interface StandingChange {
  valid: boolean
  reason?: string
  node?: string
  step?: number
  at: string
}

/** An assumption with its standing: `valid` until invalidated, and again once revalidated. */
export interface Assumption extends LedgerEntry {
  valid: boolean
  /** Every invalidation and revalidation, oldest first. */
  changes: StandingChange[]
}

/** The ledger of a vault replayed: every entry in the order recorded. */
export interface LedgerView {
  facts: LedgerEntry[]
  assumptions: Assumption[]
  decisions: LedgerEntry[]
}
