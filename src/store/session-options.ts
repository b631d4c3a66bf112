/** Options of a vault session. */
export interface SessionOptions {
  fsync: boolean
  /** Tool names the caller supplies, for validation warnings. */
  tools?: string[]
  /** Check names the runner defines, for the validation error `unknown-check`. */
  checks?: string[]
  /**
   * Watch the vault's folders for edits during the session (a run's whole
   * walk); a short call that is brought up to date by `resync` next time
   * (the stepping calls) need not.
   *
   * @default true
   */
  watch?: boolean
}
