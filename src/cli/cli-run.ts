import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { displayPath, errorJson, EXIT, onlyPositional, printable, printableJson, UsageError, vaultFolder, type Io } from './cli-support.js'
import { sleep } from '../core/abort.js'
import { formatIssue, inFolder, PlanValidationError, RunStateError, StepError, VaultplanError } from '../core/errors.js'
import { DEFAULT_MAX_STEPS, type RunResult } from '../run/core/run-options.js'
import type { RunEvent } from '../core/types.js'
import { reasonFor } from '../run/core/reason-for.js'
import { personChoices } from '../run/core/deadline.js'
import { runnerChecks } from './cli-checks.js'
import { checksToGive, resumeCommand, undefinedChecks } from './cli-resume.js'
import { statOrNothing } from '../vault/stat-or-nothing.js'

export const RUN_HELP = `Usage: vaultplan run <vault> [--query "..."] [options]

Runs the plan in <vault> with the models configured in the environment
(LLM_MODEL, LLM_BASE_URL, LLM_API_KEY, or per role LLM_<ROLE>_MODEL ...),
printing each hop as it happens. Running a vault again resumes it.

Options:
  --query "..."      what the run is for (a resumed run reuses the recorded one)
  --max-steps N      node works allowed in the whole run (default ${DEFAULT_MAX_STEPS})
  --run-vault DIR    copy the plan to DIR and run the copy (resumes DIR if it holds one)
  --fresh            start over: statuses reset, the old trace archived
  --wait             when a person must decide, wait for the box to be ticked and go on
  --check NAME='CMD' define the check a note's \`check: NAME\` runs (may be repeated;
                     CMD is split into words like a shell would, never run by one);
                     wins over the \`checks\` of vaultplan.config.json in the working folder,
                     which is refused when that folder is in the vault being run
  --check-env NAME   pass the variable NAME of this environment to the checks (may
                     be repeated); they get only PATH, HOME, LANG and a few more,
                     and a secret-looking value is taken out of what they print
  --no-fsync         do not flush writes to the disk (faster; a power cut may lose the last hop)
  --dry-run          print the judge prompt the next hop would send; work,
                     judge and write nothing
  --json             print NDJSON on stdout: one event per line, then one result
                     (or one error object: name, code, message)
  -h, --help         show this help

Exit codes: 0 completed, 1 invalid plan, failed step or failed model call,
2 bad usage or no model configured, 3 stopped by a budget, 4 waiting for a
person, 70 internal error, 130 interrupted.`

/** How often `--wait` looks at the waiting note. */
const WAIT_POLL_MS = 500

/** `vaultplan run`: runs or resumes a vault, hop by hop, with the env-configured models. */
export async function runCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      query: { type: 'string' },
      'max-steps': { type: 'string' },
      'run-vault': { type: 'string' },
      fresh: { type: 'boolean' },
      wait: { type: 'boolean' },
      'no-fsync': { type: 'boolean' },
      json: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      check: { type: 'string', multiple: true },
      'check-env': { type: 'string', multiple: true },
    },
    allowPositionals: true,
    strict: true,
  })
  const dir = onlyPositional(positionals, 'the vault folder')
  const vault = await vaultFolder(dir, io)
  let maxSteps: number | undefined
  if (values['max-steps'] !== undefined) {
    maxSteps = Number(values['max-steps'])
    if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new UsageError(`--max-steps takes an integer from 1 up, got '${values['max-steps']}'`)
  }
  const runVault = values['run-vault'] === undefined ? undefined : resolve(io.cwd, values['run-vault'])
  // A vault someone sent, run from inside it, brings no programs of its own: its config gives no checks.
  const flags = { check: values.check, checkEnv: values['check-env'] }
  const { checks } = await runnerChecks(flags, io.cwd, {
    folders: runVault === undefined ? [vault] : [vault, runVault],
    as: 'vault',
  })
  const json = values.json === true
  // A run vault not made yet would be a copy of the plan: the run starts as the plan does.
  const target = runVault !== undefined && (await statOrNothing(runVault))?.isDirectory() ? runVault : vault
  if (values['dry-run']) {
    const { dryRun } = await import('../run/read/dry-run.js')
    const preview = await dryRun(target, { checks, ...(values.query !== undefined && { query: values.query }), ...(maxSteps !== undefined && { maxSteps }) })
    if (json) io.stdout.write(`${printableJson({ type: 'dry-run', preview })}\n`)
    else if (!preview) io.stdout.write('The next hop asks no judge (no condition left for the model, a person decides, or the run is over).\n')
    else
      io.stdout.write(
        printable(
          `Dry run: the judge prompt of ${preview.node} (visit ${preview.visit}, step ${preview.step})${preview.worked ? '' : ', before its work'}` +
            `${preview.checks ? `; after the work the checks ${preview.checks.join(', ')} run first` : ''}\n\n--- ` +
            `system\n${preview.system}\n\n--- prompt\n${preview.prompt}`,
        ) + '\n',
      )
    return EXIT.ok
  }
  const fail = (error: unknown, code: number, text: string) => {
    if (json) io.stdout.write(`${printableJson(errorJson(error))}\n`)
    io.stderr.write(printable(text))
    return code
  }
  const [{ readRunStatus }, { createLLM, ModelConfigError, resolveModelConfig }, { runPlan }] = await Promise.all([
    import('../run/read/run-status.js'),
    import('../models/llm-client.js'),
    import('../run/entry/executor.js'),
  ])
  // Where the run stands decides what is needed: a query for a new run, a model for one that works.
  let status
  try {
    status = await readRunStatus(target)
  } catch (error) {
    if (error instanceof RunStateError) return fail(error, EXIT.invalid, `vaultplan: ${error.message}\n`)
    throw error
  }
  const fresh = values.fresh === true || status.run === null || target !== (runVault ?? vault)
  // A proposal records its query: its vault runs without one.
  if (fresh && values.query === undefined && status.proposal === undefined) throw new UsageError('--query is required for a new run')
  // An agent's proposal sent back (`plan` with `planner: agent`) waits for the agent: no model is needed to say so.
  const agentPlans = status.next.kind === 'plan' && status.proposal?.planner === 'agent'
  if (!agentPlans && (fresh || ['work', 'judge', 'waiting', 'fresh', 'plan'].includes(status.next.kind))) {
    try {
      resolveModelConfig(status.next.kind === 'plan' ? 'planning' : 'action', io.env)
    } catch (error) {
      if (!(error instanceof ModelConfigError)) throw error
      return fail(error, EXIT.usage, `vaultplan: ${error.message}\nNothing was written; set the variables and run again.\n`)
    }
  }

  const progress = json ? undefined : io.stdout
  const controller = new AbortController()
  // \`on\`, not \`once\`: proper-lockfile's signal-exit re-raises a signal when no other listener is left.
  const interrupt = () => {
    if (controller.signal.aborted) process.exit(EXIT.interrupted)
    controller.abort(new Error('interrupted'))
  }
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', interrupt)
  const shownVault = displayPath(io.cwd, runVault ?? vault)
  // What goes on with this run: its checks come from whoever runs it, so they are given again.
  const again = resumeCommand(io.self ?? 'vaultplan', shownVault, flags)
  const live = reporter(io.stdout, shownVault)
  try {
    for (let round = 0; ; round++) {
      const print = json ? (event: RunEvent) => io.stdout.write(`${printableJson(event)}\n`) : live.onEvent
      const options: Parameters<typeof runPlan>[1] = {
        llm: createLLM({ env: io.env }),
        signal: controller.signal,
        // The plan's warnings once, not again after each wait.
        onEvent: (event) => (event.type === 'warnings' && round > 0 ? undefined : print(event)),
        fsync: !values['no-fsync'],
        fresh: values.fresh === true && round === 0,
        checks,
      }
      if (values.query !== undefined && round === 0) options.query = values.query
      if (maxSteps !== undefined) options.maxSteps = maxSteps
      if (runVault !== undefined) options.runVault = runVault
      const result = await runPlan(vault, options)
      if (result.status === 'waiting' && values.wait) {
        await waitForEdit(result, controller.signal, () =>
          (progress ?? io.stderr).write(`Waiting: ${result.reason}\n(--wait: watching the note; Ctrl-C to stop, the run stays resumable)\n`),
        )
        continue
      }
      return finish(result, json, io, again)
    }
  } catch (error) {
    if (controller.signal.aborted) return fail(error, EXIT.interrupted, `\nInterrupted. The vault is resumable: run \`${again}\` to go on.\n`)
    if (error instanceof ModelConfigError) {
      // Only a run that needs a model asks for one: a completed vault answers without.
      return fail(error, EXIT.usage, `vaultplan: ${error.message}\nThe vault is resumable: set the variables and run again.\n`)
    }
    if (error instanceof PlanValidationError) {
      const issues = error.issues.map((issue) => `${formatIssue(inFolder(issue, displayPath(io.cwd, error.vault ?? runVault ?? vault)))}\n`).join('')
      const errors = error.issues.filter((issue) => issue.severity === 'error')
      // Only checks missing: the notes are fine, the command lacks what the run that started it was given.
      const missing = errors.every((issue) => issue.code === 'unknown-check') ? await undefinedChecks(error.vault ?? target, checks) : []
      const why =
        missing.length > 0
          ? checksToGive(missing, status.run !== null, resumeCommand(io.self ?? 'vaultplan', shownVault, flags, missing))
          : 'the plan is invalid; fix the notes above and run again.'
      return fail(error, EXIT.invalid, `${issues}vaultplan: ${why}\n`)
    }
    if (error instanceof StepError || error instanceof RunStateError || (error instanceof VaultplanError && error.code === 'llm-request-failed')) {
      return fail(error, EXIT.invalid, `vaultplan: ${error.message}\n`)
    }
    throw error
  } finally {
    live.stop()
    process.off('SIGINT', interrupt)
    process.off('SIGTERM', interrupt)
  }
}

/** How often the live line on a terminal is redrawn. */
const LIVE_MS = 250

/**
 * Prints the plan's warnings (files shown inside `vault`), then one line per
 * hop: step, node, visit, edge, who decided, time spent.
 * On a terminal a live line below them shows the note being worked, its
 * visit against its budget, the time so far and the tokens reported so far,
 * redrawn in place; piped output gets the hop lines only.
 */
function reporter(out: Io['stdout'], vault: string): { onEvent: (event: RunEvent) => void; stop: () => void } {
  let entered = Date.now()
  let tokens = 0
  let live: { node: string; visit: number; maxVisits?: number } | undefined
  let timer: ReturnType<typeof setInterval> | undefined
  const tty = out.isTTY === true
  const clear = () => {
    if (tty && live) out.write('\r\x1b[2K')
  }
  const draw = () => {
    if (!tty || !live) return
    const budget = live.maxVisits === undefined ? '' : `/${live.maxVisits}`
    const spent = tokens > 0 ? ` · ${tokens.toLocaleString('en-US')} tokens so far` : ''
    out.write(`\r\x1b[2K  … ${printable(live.node)} (visit ${live.visit}${budget}) ${((Date.now() - entered) / 1000).toFixed(1)}s${spent}`)
  }
  const stop = () => {
    clear()
    live = undefined
    if (timer) clearInterval(timer)
    timer = undefined
  }
  const onEvent = (event: RunEvent) => {
    switch (event.type) {
      case 'warnings':
        for (const issue of event.issues) out.write(`${printable(formatIssue(inFolder(issue, vault)))}\n`)
        break
      case 'start':
        out.write(`run ${event.runId}${event.resumed ? ' (resumed)' : ''}\n`)
        break
      case 'enter':
        entered = Date.now()
        live = { node: event.node, visit: event.visit, ...(event.maxVisits !== undefined && { maxVisits: event.maxVisits }) }
        if (tty && !timer) {
          timer = setInterval(draw, LIVE_MS)
          timer.unref()
        }
        draw()
        break
      case 'transition': {
        clear()
        if (event.tokens) tokens += event.tokens.input + event.tokens.output
        const edge = event.edge
          ? `${event.edge.label ? `${event.edge.label} ` : ''}-> ${event.edge.target}`
          : event.decidedBy === 'terminal'
            ? 'end'
            : `-> ${event.node} (again)`
        const seconds = ((Date.now() - entered) / 1000).toFixed(1)
        out.write(
          printable(`  step ${String(event.step).padStart(3)}  ${event.node} (visit ${event.visit})  ${edge}  [${event.decidedBy}]  ${seconds}s`) + '\n',
        )
        draw()
        break
      }
      case 'waiting':
      case 'stop':
      case 'end':
        stop()
        break
    }
  }
  return { onEvent, stop }
}

/** The result for a person (or as JSON), and the exit code; `again` is the command that goes on once a person decided. */
function finish(result: RunResult, json: boolean, io: Io, again: string): number {
  if (json) io.stdout.write(`${printableJson({ type: 'result', ...result })}\n`)
  else {
    // A stop is at the note it refused, not at the last note worked (which may be deep in a subplan).
    const at = result.stop ? `${result.stop.node} (visit ${result.stop.visit} refused)` : result.lastNode
    // A proposal sent back to its agent waits before any note was worked: there is no note to name.
    const where = at === '' ? '' : ` at ${at}`
    io.stdout.write(
      printable(
        `\n${result.status} after ${result.steps} step${result.steps === 1 ? '' : 's'}${where}${result.reason ? `\n${reasonFor('cli', result.reason)}` : ''}`,
      ) + '\n\n',
    )
    if (result.status === 'waiting') {
      // The output of the note that waits is not a result: say what to decide, and where.
      for (const note of result.waiting ?? []) {
        const feedback = note.kind === 'proposal' && note.reason ? `; feedback: ${note.reason}` : ''
        // A `timeout` edge is the deadline's to take: not a choice to tick.
        const timesOut = note.choices.length > personChoices(note).length ? `; \`timeout\` is taken at ${note.deadline} unless decided` : ''
        const choices =
          note.choices.length > 0 ? `choices: ${personChoices(note).join(', ')}${timesOut}` : `nothing for a person to tick: it waits for an agent${feedback}`
        io.stdout.write(printable(`Waiting: ${note.file} (${choices})`) + '\n')
      }
      // A person decides, then this goes on (a proposal sent back to its agent waits for the agent instead).
      if ((result.waiting ?? []).some((note) => note.choices.length > 0)) io.stdout.write(printable(`Then go on: \`${again}\``) + '\n')
      io.stdout.write('\n')
    } else {
      const excerpt = result.output.length > 2000 ? `${result.output.slice(0, 2000)}\n[...]` : result.output
      io.stdout.write(`${printable(excerpt)}\n\n`)
    }
    io.stdout.write(`Open ${displayPath(io.cwd, result.runVault)} in Obsidian to see the statuses and 00_plan-trace/trace.md.\n`)
  }
  return result.status === 'completed' ? EXIT.ok : result.status === 'waiting' ? EXIT.waiting : EXIT.stopped
}

/**
 * Resolves when a note the run waits on changes on disk (a person ticked a
 * box) or the first `wait:` deadline with a `timeout` edge falls, or rejects
 * on abort. Every note `result.waiting` names is watched, inside subplans
 * too: their paths are from the vault the run wrote into.
 */
async function waitForEdit(result: RunResult, signal: AbortSignal, watching: () => void): Promise<void> {
  const files = (result.waiting ?? []).map((note) => resolve(result.runVault, note.file))
  // A note overdue has no `timeout` edge: its deadline wakes nothing.
  const deadlines = (result.waiting ?? []).filter((note) => note.deadline !== undefined && !note.overdue && note.choices.includes('timeout'))
  const due = Math.min(...deadlines.map((note) => Date.parse(note.deadline!)))
  const stampOf = async () => {
    const stamps = await Promise.all(
      files.map(async (file) => {
        const info = await statOrNothing(file)
        return info ? `${info.mtimeMs}:${info.size}` : ''
      }),
    )
    return stamps.join('|')
  }
  const before = await stampOf()
  // Said only once the notes' stamps are taken, so an edit made right after the message is not missed.
  watching()
  do await sleep(WAIT_POLL_MS, signal)
  while (Date.now() < due && (await stampOf()) === before)
}
