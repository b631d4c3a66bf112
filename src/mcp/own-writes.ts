import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { sep } from 'node:path'

/*
 * Who changed a file a client subscribed to: the server's own tool calls or
 * anyone else (a person in their editor, another process). Told by what was
 * written, not by when: at the end of each call that may write, the server
 * notes the bytes of every watched file of that vault; a change found later
 * is the server's only while the file still holds those bytes. One table for
 * the process, not per session: over HTTP every session has its own server,
 * and a note the server of one session writes must read as the server's to
 * the subscribers of every other.
 */

/** The tool calls under way, by the real path of the vault they may write in. */
const writing = new Map<string, number>()
/** The files some session watches, by real path, with how many subscriptions name each. */
const watched = new Map<string, number>()
/** What the server's calls left in each watched file: a digest of its bytes (`''`: no file). */
const left = new Map<string, string>()

/** Runs `body`, a tool call that may write in `vault` (a real path): what it leaves in the watched files is the server's own. */
export async function writingIn<T>(vault: string, body: () => Promise<T>): Promise<T> {
  writing.set(vault, (writing.get(vault) ?? 0) + 1)
  try {
    return await body()
  } finally {
    // Noted before the call counts as ended: a change told meanwhile is still the call's.
    for (const path of watched.keys()) if (path.startsWith(vault + sep)) left.set(path, await digest(path))
    const calls = writing.get(vault)! - 1
    if (calls === 0) writing.delete(vault)
    else writing.set(vault, calls)
  }
}

/** A session subscribes to `file` (a real path): what the server's calls leave in it is noted from now on. */
export function watching(file: string): void {
  watched.set(file, (watched.get(file) ?? 0) + 1)
}

/** A session no longer watches `file`. */
export function unwatching(file: string): void {
  const count = (watched.get(file) ?? 0) - 1
  if (count > 0) return void watched.set(file, count)
  watched.delete(file)
  left.delete(file)
}

/**
 * Who changed `file` (a real path), as a notification tells it: `vaultplan`
 * while a tool call of this server is writing in its vault, or when the file
 * holds what the server's last call there left in it; else `other` (a
 * person's edit, however soon after a call it came).
 */
export async function writerOf(file: string): Promise<'vaultplan' | 'other'> {
  for (const [vault, calls] of writing) if (calls > 0 && file.startsWith(vault + sep)) return 'vaultplan'
  const ours = left.get(file)
  return ours !== undefined && ours === (await digest(file)) ? 'vaultplan' : 'other'
}

/** A digest of a file's bytes, `''` when there is none to read. */
async function digest(file: string): Promise<string> {
  const bytes = await readFile(file).catch(() => undefined)
  return bytes === undefined ? '' : createHash('sha256').update(bytes).digest('hex')
}
