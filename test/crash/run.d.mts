/** Options of `runCrashTrials`. */
export interface CrashOptions {
  /** @default 200 */
  trials?: number
  /** Seeds every random choice of the trials. @default a random seed, printed */
  seed?: number
  /** Trials run at once. @default min(4, 2 × available parallelism) */
  jobs?: number
  /** Run only this trial (to reproduce a failure). */
  only?: number
  /** Keep every trial's vault. @default false */
  keep?: boolean
  /** Keep the vaults of failed trials (their path is printed). @default true */
  keepFailed?: boolean
  /** The library build to test. @default dist/index.js */
  dist?: string
  /** Kills timed after the child's k-th line (`event`), placed at its n-th file operation (`pause`), placed power cuts (`power`), timed and placed kills with a person's editor saving notes in place beside every trial (`editor`), or all of them (a fifth of the placed kills cut the power, every tenth trial from the 6th has the editor). @default 'mixed' */
  mode?: 'mixed' | 'event' | 'pause' | 'power' | 'editor'
  /** The vault: the flat fixture, or a plan inside a plan whose branches run at once (kills land inside a branch). @default 'flat' */
  plan?: 'flat' | 'nested'
  /** Run only the agent trials (agents.mjs): two agent processes on a branched plan, killed and restarted until the run completes. */
  scenario?: 'agents'
  /** Where progress and the summary line go. @default console.log */
  log?: (line: string) => void
}

export interface CrashProblem {
  kind: 'data-loss' | 'budget' | 'other'
  message: string
  /** A problem with the user's bytes (kept in an editor trial whose path is not compared). */
  bytes?: true
}

export interface CrashTrial {
  index: number
  kills: { attempt: number; mode: 'event' | 'pause'; point: string; how: string; label?: string }[]
  resumes: number
  staleLocks: { after: string; message: string }[]
  problems: CrashProblem[]
  /** A scenario trial: kills while a `fresh: true` start archives the last run, while the template is copied into a run vault, or while an in-memory plan is written out into one. */
  scenario?: 'fresh' | 'copy' | 'save'
  /** A kill trial's runs of the draft's check, the checks that ran again after their visit's verdict was saved, and the retry backoffs. */
  checks?: { runs: number; twice: number; backoffs: number }
  /** An editor trial's saves, and how many wrote back a status the run had moved on from. */
  editor?: { saves: number; stale: number }
}

export interface CrashReport {
  ok: boolean
  seed: number
  /** `crash: 200 trials, 12 kill points covered, 412 resumes, 0 data losses, 0 budget violations` */
  summary: string
  trials: number
  /** Kills per kill point. */
  killPoints: Record<string, number>
  kills: number
  resumes: number
  dataLosses: number
  budgetViolations: number
  /** Checks that ran again for a visit whose verdict was already saved (a check counted twice as passed). */
  checksTwice: number
  staleLocks: { index: number; after: string; message: string }[]
  failed: CrashTrial[]
  /** Seconds. */
  wall: number
}

/** Runs the crash trials: kill -9 at random points, resume, check nothing was lost. */
export function runCrashTrials(options?: CrashOptions): Promise<CrashReport>

/** What of a result must match the uninterrupted run's (compared as JSON): no run id or run vault, step numbers in the output left out, `visits` by note in one order. */
export function comparable<T extends object>(result: T): Partial<T>
