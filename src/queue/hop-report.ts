/** What one job did to its run, as `onHop` reports it and `vaultplan worker` logs it. */
export interface HopReport {
  /** The run vault, absolute. */
  vault: string
  jobId: string
  /** The run id of the trace, once the run has one. */
  runId?: string
  /** The visit this job worked (its note by its path from the top vault), when it worked one (a job that only followed a person's decision, or found the run ended, worked none). */
  worked?: { node: string; visit: number; step: number; key: string }
  /**
   * What the run does now: `queued` (the next hop's job is sent), `busy`
   * (the run's other jobs hold its ready work, or work its other branches
   * while this one waits for a person: this job ends and they go on),
   * `waiting` (for a person; no job until the decision, or one that starts
   * at its `wait:` deadline to take the `timeout` edge), `completed`,
   * `stopped` (a budget), `failed` (the notes or the retries need a person;
   * also for a job that finished its visit after another job failed the
   * run), `retrying` (the hop failed; pg-boss tries it again), or
   * `superseded` (the job had expired and was taken over: another attempt
   * completes it, and this one changes nothing in the queue; the vault lock
   * and the step's key kept the vault consistent).
   */
  outcome: 'queued' | 'busy' | 'waiting' | 'completed' | 'stopped' | 'failed' | 'retrying' | 'superseded'
  /** The node the next hop works (`queued`, by its path from the top vault), the notes other jobs hold (`busy`), that wait (`waiting`), or the terminal (`completed`). */
  node?: string
  /** The ready notes of other branches that nobody held, each of which got a job of its own (`queued`): idle workers take them at once. */
  fannedOut?: string[]
  /** Why the hop failed (`failed`, `retrying`), or the budget that ran out (`stopped`). */
  error?: string
  /** Wall time of the job. */
  ms: number
}
