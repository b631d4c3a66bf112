// What a power cut takes away, for the crash child's `power` mode: a log of
// the file system changes the child made that were not flushed yet, and, at
// the cut, a random state of the disk those changes could have left.
//
// The model is the pessimistic one of ext4/XFS without data=ordered, as far
// as POSIX and Linux let it be:
// - Data: a file's bytes past what its last fsync covered may be missing. A
//   new (or truncated) file shows as written, empty, zero-filled at its size,
//   or cut at a page boundary (4 KiB) with the rest missing or zeros (the page
//   cache writes whole pages back; a size on disk past them reads as zeros).
//   An append may be cut at any byte past the flushed size, its tail zeros.
// - Entries: a name created (a file, a folder, a symlink, a hard link) or a
//   rename (of a file or a folder) may be undone until a flush of its folder
//   (for a rename: of the folder it left or the one it entered; Linux journals
//   a rename as one change). A rename undone puts back what it replaced. A
//   folder's entry undone takes all it holds with it, flushed or not.
// - Order per name: of two changes to one name, the later one survives only
//   with the earlier one. The rest is independent (more than ext4's journal
//   allows: it keeps a prefix of the changes; less than nothing is promised).
// Not modelled: a removal (`rm`, `unlink`) coming back; metadata other than
// names and sizes (modes, times).
import { dirname } from 'node:path'

/** The chance an unflushed change of a name is undone at the cut. */
const UNDO = 0.3
const PAGE = 4096

/**
 * A power model over the real calls `fs` (the unwrapped ones), drawing from
 * `random`. The child tells it each change as it makes it; `cut()` then does
 * to the files what the cut would have left.
 */
export function powerModel(fs, random) {
  /** Per file written since the child began (by its current path): the bytes known flushed, and whether it is appended to. */
  const files = new Map()
  /** The changes of names, in order: `{ kind: 'create', path } | { kind: 'rename', from, to, replaced }`, each `durable` once flushed. */
  const events = []
  const exists = (path) => {
    try {
      fs.lstatSync(path)
      return true
    } catch {
      return false
    }
  }
  const isDir = (path) => {
    try {
      return fs.statSync(path).isDirectory()
    } catch {
      return false
    }
  }
  const under = (path, folder) => path === folder || path.startsWith(`${folder}/`)
  /** Where `path`, as it was at event `index`, is after the renames `renames` made since. */
  const moved = (path, index, renames) => {
    for (const rename of renames) if (rename.index > index && under(path, rename.from)) path = rename.to + path.slice(rename.from.length)
    return path
  }
  const namesOf = (event) => (event.kind === 'create' ? [event.path] : [event.from, event.to])

  return {
    /** Whether `path` exists now: a caller asks before a call that may create it. */
    exists,
    /** Folders missing on the way to `path`, top down: what a recursive mkdir creates. */
    missingFolders(path) {
      const missing = []
      for (let at = path; !exists(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at)
      return missing
    },
    /** A new name; `file`: a new regular file whose bytes are not flushed. */
    created(path, { file = false } = {}) {
      events.push({ kind: 'create', path, index: events.length, durable: false })
      if (file) files.set(path, { durable: 0, append: false })
    },
    /** A file opened for writing: truncated (its bytes gone until flushed), or appended to past its size now. */
    opened(path, { truncate, append }) {
      const known = files.get(path)
      if (truncate) files.set(path, { durable: 0, append })
      else if (known) known.append ||= append
      else files.set(path, { durable: fs.statSync(path).size, append })
    },
    /** A file cut to `size`: nothing past it is kept. */
    truncated(path, size) {
      const known = files.get(path)
      if (known) known.durable = Math.min(known.durable, size)
    },
    /** An fsync of `path`: a file's bytes are on the disk, or a folder's names. */
    synced(path) {
      if (!isDir(path)) {
        const known = files.get(path)
        if (known) known.durable = fs.statSync(path).size
        return
      }
      for (const event of events) {
        if (event.durable) continue
        const folders = event.kind === 'create' ? [dirname(event.path)] : [dirname(event.from), dirname(event.to)]
        if (
          folders.some(
            (folder) =>
              moved(
                folder,
                event.index,
                events.filter((e) => e.kind === 'rename'),
              ) === path,
          )
        )
          event.durable = true
      }
    },
    /** Call before a rename: what `to` holds now, which an undone rename puts back. */
    renaming(from, to) {
      let replaced = null
      try {
        if (fs.lstatSync(to).isFile()) replaced = { bytes: fs.readFileSync(to), file: files.get(to) }
      } catch {
        // nothing there
      }
      return { from, to, replaced }
    },
    /** The rename of {@link renaming} happened: files under `from` are under `to` now. */
    renamed({ from, to, replaced }) {
      events.push({ kind: 'rename', from, to, replaced, index: events.length, durable: false })
      for (const [path, file] of [...files]) {
        if (!under(path, from) && !under(path, to)) continue
        files.delete(path)
        if (under(path, from)) files.set(to + path.slice(from.length), file)
      }
    },
    /** `path` was removed (and all under it). */
    removed(path) {
      for (const known of [...files.keys()]) if (under(known, path)) files.delete(known)
    },
    /**
     * How many bytes of `path` an fsync covered (all of a file the child did not write): what the
     * library was told is on the disk. Whether its name is too is the library's to make sure of.
     */
    flushedLength(path) {
      if (!exists(path)) return 0
      return files.get(path)?.durable ?? fs.statSync(path).size
    },
    /**
     * Takes everything written so far as on the disk: an agent trial's child (agent.mjs) forgets at each call's start and
     * end, since the other agent writes the same files between its calls and the model knows only this process's writes.
     */
    reset() {
      files.clear()
      events.length = 0
    },
    /** Leaves the files as the cut would: unflushed bytes torn, unflushed names undone. */
    cut() {
      for (const [path, file] of files) if (exists(path)) fs.writeFileSync(path, tear(fs.readFileSync(path), file))
      const kept = []
      const keptNames = new Set()
      for (const event of [...events].reverse()) {
        // A later change of one of its names survived: so did this one.
        const undo = !event.durable && !namesOf(event).some((name) => keptNames.has(name)) && random() < UNDO
        if (!(undo && undoEvent(event, kept))) {
          for (const name of namesOf(event)) keptNames.add(name)
          if (event.kind === 'rename') kept.unshift(event)
        }
      }
    },
  }

  /** A file's bytes after the cut. */
  function tear(bytes, { durable, append }) {
    if (bytes.length <= durable) return bytes
    const r = random()
    if (append) {
      const keep = durable + Math.floor(random() * (bytes.length - durable + 1))
      const out = Buffer.from(bytes.subarray(0, keep))
      if (r < 0.3) out.fill(0, durable)
      return out
    }
    if (r < 0.25) return bytes
    if (r < 0.5) return bytes.subarray(0, durable)
    if (r < 0.75) return Buffer.concat([bytes.subarray(0, durable), Buffer.alloc(bytes.length - durable)])
    const keep = durable + PAGE * Math.floor((random() * (bytes.length - durable)) / PAGE)
    return random() < 0.5 ? bytes.subarray(0, keep) : Buffer.concat([bytes.subarray(0, keep), Buffer.alloc(bytes.length - keep)])
  }

  /** Undoes one change where the later ones kept (`kept`) put its names; false when it cannot be undone. */
  function undoEvent(event, kept) {
    if (event.kind === 'create') {
      fs.rmSync(moved(event.path, event.index, kept), { recursive: true, force: true })
      return true
    }
    const from = moved(event.from, event.index, kept)
    const to = moved(event.to, event.index, kept)
    // Its old name holds something a later change put there that survived: it happened before that change.
    if (exists(from)) return false
    if (exists(to)) fs.renameSync(to, from)
    if (event.replaced) fs.writeFileSync(to, event.replaced.file ? tear(event.replaced.bytes, event.replaced.file) : event.replaced.bytes)
    return true
  }
}
