import type { CheckDefinition } from './checks.js'

/*
 * What a check's command sees of the runner's environment (pure): a minimal
 * set, never the model's key or the server's token, plus what its
 * definition passes through or sets; and the secrets to take out of the
 * output a run keeps (it goes into the trace's output note and to the next
 * worker).
 */

/**
 * The variables every check gets from the runner's environment, when set:
 * enough to find programs, a home, a temp folder, a locale and a terminal,
 * on POSIX and on Windows; `LC_*` too. Anything else is passed through by
 * name (`CheckDefinition.inheritEnv`, `--check-env NAME`) or set (`env`).
 */
export const CHECK_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TERM',
  'TZ',
  'TMPDIR',
  'CI',
  'NO_COLOR',
  // Windows: a program cannot start without some of these.
  'SYSTEMROOT',
  'WINDIR',
  'COMSPEC',
  'PATHEXT',
  'TEMP',
  'TMP',
  'USERPROFILE',
  'HOMEDRIVE',
  'HOMEPATH',
  'APPDATA',
  'LOCALAPPDATA',
  'PROGRAMDATA',
] as const

/** A variable name that says its value is a secret: `NPM_TOKEN`, `DB_PASSWORD`, `AWS_SECRET_ACCESS_KEY`. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE/i

/** The variables of the runner that always hold secrets: a model's key, the MCP server's token. */
const KNOWN_SECRET = /^(LLM_(\w+_)?API_KEY|OPENAI_API_KEY|VAULTPLAN_MCP_TOKEN)$/

/** The shortest value taken for a secret. */
const MIN_SECRET = 6

/** Names compared as the platform does: Windows' environment ignores case. */
function sameName(a: string, b: string, windows: boolean): boolean {
  return windows ? a.toUpperCase() === b.toUpperCase() : a === b
}

/**
 * The environment of a check's command: the {@link CHECK_ENV} variables
 * and `LC_*` of `runner`, the ones `definition.inheritEnv` names, then
 * `definition.env` over them.
 *
 * @param runner - the runner's environment (`process.env`)
 * @param windows - whether names ignore case (`process.platform === 'win32'`)
 */
export function checkEnv(
  definition: Pick<CheckDefinition, 'env' | 'inheritEnv'>,
  runner: Readonly<Record<string, string | undefined>>,
  windows = false,
): Record<string, string> {
  const wanted = [...CHECK_ENV, ...(definition.inheritEnv ?? [])]
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(runner)) {
    if (value === undefined) continue
    if (/^LC_/i.test(name) || wanted.some((each) => sameName(each, name, windows))) env[name] = value
  }
  return { ...env, ...definition.env }
}

/**
 * The values to take out of what a check printed before it is kept: every
 * value of `runner` the model's key or the MCP token is in
 * (`LLM_API_KEY`, `LLM_<ROLE>_API_KEY`, `OPENAI_API_KEY`,
 * `VAULTPLAN_MCP_TOKEN`), whether the check got it or not (a command may
 * read a file that holds it), and the values the definition passes
 * through or sets under a name that looks secret. Longest first, so that a
 * secret holding another is taken out whole.
 */
export function checkSecrets(
  definition: Pick<CheckDefinition, 'env' | 'inheritEnv'>,
  runner: Readonly<Record<string, string | undefined>>,
  windows = false,
): string[] {
  const secrets: string[] = []
  for (const [name, value] of Object.entries(runner)) {
    if (value === undefined) continue
    const passed = (definition.inheritEnv ?? []).some((each) => sameName(each, name, windows))
    if (KNOWN_SECRET.test(windows ? name.toUpperCase() : name) || (passed && SECRET_NAME.test(name))) secrets.push(value)
  }
  for (const [name, value] of Object.entries(definition.env ?? {})) if (SECRET_NAME.test(name)) secrets.push(value)
  // A value this short is no key, and taking it out would blank ordinary words of the output.
  return [...new Set(secrets)].filter((secret) => secret.length >= MIN_SECRET).sort((a, b) => b.length - a.length)
}
