/** How long the scripted worker looks for its note's `status: active` before it logs what it found. */
export const STATUS_PATIENCE_MS: number

/** The harness's deterministic worker and judge; every call is logged through `log`. */
export function makeScript(options: {
  vault: string
  log: (entry: Record<string, unknown>) => void
  hook?: (label: string) => Promise<void> | void
  failed?: (label: string) => void
}): {
  work: (input: {
    node: { id: string; file?: string }
    visit: number
    step: number
    key: string
    plan?: string
    outputs: { node: string; visit: number }[]
  }) => Promise<string>
  llm: (prompt: string, options: { role: string }) => Promise<string>
}

/** A small seeded random number generator (mulberry32). */
export function mulberry32(seed: number): () => number
