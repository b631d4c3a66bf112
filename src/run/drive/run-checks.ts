import { spawn } from 'node:child_process'
import { type CheckDefinition, type CheckResult, CHECK_TIMEOUT_MS } from '../core/checks.js'
import { checkEnv, checkSecrets } from '../core/check-env.js'
import { redact } from '../../models/secrets.js'

/*
 * Running a note's checks: each as an argument vector in a process group of
 * its own, so a timeout or an abort ends its children too, with a minimal
 * environment, and what it printed kept without the runner's secrets.
 */

/** How much of a check's output is kept: its last 4 KB. */
const TAIL_BYTES = 4096

/**
 * Runs a note's checks one after the other, each as its definition says.
 * An abort kills the running check's process group and rejects with the
 * signal's reason.
 */
export async function runChecks(
  names: readonly string[],
  definitions: Readonly<Record<string, CheckDefinition>>,
  signal?: AbortSignal,
): Promise<CheckResult[]> {
  const results: CheckResult[] = []
  for (const name of names) {
    const definition = Object.hasOwn(definitions, name) ? definitions[name] : undefined
    // Validation refuses a plan naming an undefined check; a note edited mid-run to name one fails its check.
    if (!definition) results.push({ name, exit: null, ms: 0, tail: `The runner defines no check \`${name}\`.` })
    else results.push(await runCheck(name, definition, signal))
  }
  return results
}

/** Runs one check in a process group of its own; its group is killed at the timeout or on abort. */
function runCheck(name: string, definition: CheckDefinition, signal?: AbortSignal): Promise<CheckResult> {
  signal?.throwIfAborted()
  const started = Date.now()
  const [program, ...args] = definition.command
  const windows = process.platform === 'win32'
  const secrets = checkSecrets(definition, process.env, windows)
  return new Promise<CheckResult>((resolve, reject) => {
    let tail = Buffer.alloc(0)
    let timedOut = false
    let failed: Error | undefined
    const child = spawn(program!, args, {
      cwd: definition.cwd ?? process.cwd(),
      env: checkEnv(definition, process.env, windows),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const killGroup = () => {
      if (child.pid === undefined) return
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // The group is gone already.
      }
    }
    const keep = (chunk: Buffer) => {
      tail = Buffer.concat([tail, chunk])
      if (tail.length > TAIL_BYTES * 2) tail = tail.subarray(tail.length - TAIL_BYTES)
    }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const timer = setTimeout(() => {
      timedOut = true
      killGroup()
    }, definition.timeoutMs ?? CHECK_TIMEOUT_MS)
    const onAbort = () => killGroup()
    signal?.addEventListener('abort', onAbort, { once: true })
    child.on('error', (error) => {
      failed = error
    })
    // A child left behind by the command (holding its output open) goes with its group.
    child.on('exit', () => killGroup())
    child.on('close', (code) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      if (signal?.aborted) return reject(signal.reason)
      const text = withoutSecrets(failed ? `The check could not start: ${failed.message}` : tailText(tail), secrets)
      const result: CheckResult = { name, exit: failed || timedOut ? null : code, ms: Date.now() - started, tail: text }
      if (timedOut) result.timedOut = true
      resolve(result)
    })
  })
}

/**
 * `text` without `secrets`: each taken out whole, and the end of one the
 * 4 KB cut left at the start of the text (the kept output begins mid-secret).
 */
function withoutSecrets(text: string, secrets: readonly string[]): string {
  let kept = redact(text, secrets)
  for (const secret of secrets) {
    for (let length = secret.length - 1; length >= 4; length--) {
      if (!kept.startsWith(secret.slice(-length))) continue
      kept = `***${kept.slice(length)}`
      break
    }
  }
  return kept
}

/** The last 4 KB of an output, cut at a character's start. */
function tailText(bytes: Buffer): string {
  if (bytes.length <= TAIL_BYTES) return bytes.toString('utf8')
  let start = bytes.length - TAIL_BYTES
  // A UTF-8 continuation byte is not a character's start.
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++
  return bytes.subarray(start).toString('utf8')
}
