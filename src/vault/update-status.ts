import { realpath } from 'node:fs/promises'
import { RunStateError } from '../core/errors.js'
import { setFrontmatterStatus } from './frontmatter.js'
import { assertFolder, type WriteOptions } from './fs-atomic.js'
import { pathInVault } from './path-gate.js'
import { idFromFile } from './parse-note.js'
import { listNotes } from './read-vault.js'
import { editNote } from './edit-note.js'
import { NODE_STATUSES as STATUSES } from '../core/knobs.js'
import type { NodeStatus } from '../core/types.js'

/**
 * Sets one node's `status:` in its note, changing no other byte: comments,
 * key order, quoting, body and line endings stay as they are. A note without
 * frontmatter gains one. The note is found by listing the vault, so its file
 * name need not be the id plus `.md` (`Review.MD`, a name in NFD). A save
 * an editor is making at that moment is waited for, and one made meanwhile
 * is kept (see `editNote`).
 *
 * @throws `TypeError` on a status that is not one of `pending`, `active`, `done`, `waiting`.
 * @throws `Error` when no note has the id, two notes have it, or its frontmatter cannot be patched.
 * @throws {@link RunStateError} `note-busy` when the note kept changing while it was written; nothing was changed.
 */
export async function updateStatus(dir: string, nodeId: string, status: NodeStatus, options: WriteOptions = {}): Promise<void> {
  if (!STATUSES.includes(status)) {
    throw new TypeError(`Expected \`status\` to be one of ${STATUSES.map((s) => `\`${s}\``).join(', ')}, got \`${String(status)}\``)
  }
  // The note is found by listing: its file name need not be the id plus `.md` (`.MD`, NFD names, `\\`).
  await assertFolder(dir)
  const root = await realpath(dir)
  const id = String(nodeId).normalize('NFC')
  const files = (await listNotes(root, [])).filter((file) => idFromFile(file) === id)
  if (files.length === 0) throw new Error(`Cannot set the status of \`${nodeId}\`: no note \`${nodeId}.md\` (nor any note with that id) in \`${dir}\``)
  if (files.length > 1)
    throw new Error(`Cannot set the status of \`${nodeId}\`: ${files.map((file) => `\`${file}\``).join(' and ')} both have that id; rename one`)
  const path = await pathInVault(root, files[0]!)
  // The careful rewrite of a person's note: a save in place under way is waited for, and one made meanwhile is kept.
  try {
    await editNote(files[0]!, path, (text) => setFrontmatterStatus(text, status), options)
  } catch (error) {
    // A system error of the read (a folder by that name, no permission); a frontmatter that cannot be patched says so itself.
    if (error instanceof RunStateError || (error as NodeJS.ErrnoException).code === undefined) throw error
    throw new Error(`Cannot set the status of \`${nodeId}\`: \`${files[0]}\` cannot be read (${(error as Error).message})`, { cause: error })
  }
}
