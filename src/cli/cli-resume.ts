import { shellWord } from './cli-support.js'
import { runnerChecks, type CheckFlags } from './cli-checks.js'

/*
 * The command a person types to go on with a run. A run's checks come from
 * whoever runs it (`--check`, `vaultplan.config.json`), never from the
 * vault, so a run that was given `--check` must be given it again: a
 * suggestion without it fails `unknown-check`.
 */

/**
 * `vaultplan run <vault>` as `self` names the CLI, with the check flags a
 * run needs to go on: each `--check` and `--check-env` as it was given,
 * then `NAME='...'` for each of `missing` (checks the notes name that no
 * flag or config here defines: their commands are for the person to give).
 */
export function resumeCommand(self: string, shown: string, flags: CheckFlags = {}, missing: readonly string[] = []): string {
  const given = [...(flags.check ?? []).flatMap((flag) => ['--check', shellWord(flag)]), ...(flags.checkEnv ?? []).flatMap((name) => ['--check-env', name])]
  const asked = missing.flatMap((name) => ['--check', `${shellWord(name)}='...'`])
  return [self, 'run', shellWord(shown), ...given, ...asked].join(' ')
}

/** The check names the notes of a plan tree use (`check:`), each once, in plan order. */
function checkNames(plans: Iterable<{ vault: { nodes: ReadonlyMap<string, { check?: string[] | undefined }> } }>): string[] {
  const names = new Set<string>()
  for (const { vault } of plans) for (const node of vault.nodes.values()) for (const name of node.check ?? []) names.add(name)
  return [...names]
}

/** What a run that stops on `unknown-check` is told: that the notes are fine, and how to give the checks they name. */
export function checksToGive(missing: readonly string[], ranBefore: boolean, again: string): string {
  const names = missing.map((name) => `\`${name}\``).join(', ')
  const they = missing.length === 1 ? `the check ${names}` : `the checks ${names}`
  const where = `(or define ${missing.length === 1 ? 'it' : 'them'} in vaultplan.config.json in the folder you run from)`
  return ranBefore
    ? `the notes are fine, but this run was not given ${they} they name: checks come from whoever runs the plan, never from the vault, so pass ${missing.length === 1 ? 'it' : 'them'} again as the run that started it did: \`${again}\` ${where}.`
    : `the notes name ${they}, which this run does not define: give each its command, \`${again}\` ${where}.`
}

/**
 * The checks the notes of a vault's plan tree name that no
 * `vaultplan.config.json` of `cwd` defines: a command that goes on with
 * the run must give them with `--check`, as the run that started it did.
 */
export async function checksToAsk(vault: string, cwd: string): Promise<string[]> {
  // A config inside the vault defines none (refused): every name is to be given then.
  const defined = await runnerChecks({}, cwd, { folders: [vault], as: 'vault' }).then(
    ({ checks }) => checks,
    () => ({}),
  )
  return undefinedChecks(vault, defined)
}

/** The checks the notes of a vault's plan tree name that `defined` does not: what a run of it must be given with `--check`. */
export async function undefinedChecks(vault: string, defined: Record<string, unknown>): Promise<string[]> {
  const [{ loadPlan }, { subplanTree }] = await Promise.all([import('../plan/load-plan.js'), import('../plan/subplan-tree.js')])
  const graph = await loadPlan(vault).catch(() => undefined)
  return graph ? checkNames(subplanTree(graph)).filter((name) => !Object.hasOwn(defined, name)) : []
}
