import { sep } from 'node:path'

/** How long after a call ends its writes are still told apart: the watchers gather a folder's events before comparing stamps. */
const AFTER_MS = 500

/**
 * The vaults the tools of this process are writing in now (and until
 * `AFTER_MS` after), by real path. One table for the process, not per
 * session: over HTTP every session has its own server, and a note the
 * server of one session writes must read as the server's to the
 * subscribers of every other.
 */
const writing = new Map<string, { calls: number; until: number }>()

/** Runs `body`, a tool call that may write in `vault` (a real path): changes seen meanwhile are the server's own. */
export async function writingIn<T>(vault: string, body: () => Promise<T>): Promise<T> {
  const entry = writing.get(vault) ?? { calls: 0, until: 0 }
  entry.calls++
  writing.set(vault, entry)
  try {
    return await body()
  } finally {
    entry.calls--
    entry.until = Date.now() + AFTER_MS
  }
}

/**
 * Who changed `file` (a real path), as a notification tells it: `vaultplan`
 * when a tool call of this server was writing in its vault then (a note's
 * `status:`, a run's trace), else `other` (a person in their editor,
 * another process).
 */
export function writerOf(file: string): 'vaultplan' | 'other' {
  const now = Date.now()
  for (const [vault, entry] of writing) {
    if (entry.calls === 0 && entry.until < now) {
      writing.delete(vault)
      continue
    }
    if (file.startsWith(vault + sep)) return 'vaultplan'
  }
  return 'other'
}
