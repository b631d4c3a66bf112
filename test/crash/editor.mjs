// The crash harness's concurrent in-place editor: a person's editor that
// saves notes of the vault the way Obsidian, VS Code and `cp` do, truncating
// the file and then writing it, in small chunks with pauses, while the run
// goes and while it is killed and resumed. Each save adds one line of the
// person's right under the note's title; the rest of the note is saved as
// read just before (whatever status the run last wrote stays).
//
//   node test/crash/editor.mjs '<json config>'    config: { vault, notes, seed }
//
// stdin lines: `pause` (finish the save under way, then answer `PAUSED`),
// `resume`, `stop` (finish, then answer `STOPPED` and exit).
// stdout lines: SAVED <note> <line>, STALE <note> (the run replaced the note
// between this save's read and its truncate: the save wrote back what it
// read, a status the run had moved on from), CAUGHT <note> <line> (the note was
// replaced while this save wrote it: its bytes went to the old file, which
// the run must put back), PAUSED, STOPPED <saves>.
import { closeSync, fstatSync, openSync, readSync, statSync, writeSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { mulberry32 } from './script.mjs'

/** The line the `n`-th save adds (the note is named in it, so no two notes share a line). */
export function personLine(note, n) {
  return `A person's line ${n} in ${note}, typed while the run went.`
}

/** Matches the lines {@link personLine} adds, with their line break. */
export const PERSON_LINE = /^A person's line (\d+) in \S+, typed while the run went\.\r?\n/gm

/** `text` with `line` added right under its first `# ` title after the frontmatter (the note's own line breaks). */
export function withPersonLine(text, line) {
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  const body = text.startsWith(`---${eol}`) ? text.indexOf(`${eol}---${eol}`, 3) + 1 : 0
  const title = /^# .*$/m.exec(text.slice(body))
  if ((body === 0 && text.startsWith('---')) || !title) throw new Error(`the editor found no title in ${JSON.stringify(text.slice(0, 200))}`)
  const at = body + title.index + title[0].length + eol.length
  return `${text.slice(0, at)}${line}${eol}${text.slice(at)}`
}

const say = (text) => writeSync(1, `${text}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function readWhole(path) {
  const fd = openSync(path, 'r')
  try {
    const { size, ino } = fstatSync(fd)
    const buffer = Buffer.alloc(size + 4096)
    let length = 0
    for (let got; (got = readSync(fd, buffer, length, buffer.length - length, null)) > 0;) length += got
    return { text: buffer.subarray(0, length).toString('utf8'), ino }
  } finally {
    closeSync(fd)
  }
}

/** One save in place of `note`: read, truncate, write in chunks with pauses, close. */
async function save(vault, note, n, random) {
  const path = join(vault, note)
  const read = readWhole(path)
  const bytes = Buffer.from(withPersonLine(read.text, personLine(note, n)), 'utf8')
  const fd = openSync(path, 'w')
  const ino = fstatSync(fd).ino
  if (ino !== read.ino) say(`STALE ${note}`)
  try {
    for (let at = 0; at < bytes.length;) {
      const size = Math.min(bytes.length - at, 1 + Math.floor(random() * 48))
      at += writeSync(fd, bytes, at, size)
      // Most chunks follow at once; some after a pause, as an editor's event loop or a slow disk would.
      if (at < bytes.length && random() < 0.3) await sleep(random() * 12)
    }
  } finally {
    closeSync(fd)
  }
  if (statSync(path).ino !== ino) say(`CAUGHT ${note} ${n}`)
  else say(`SAVED ${note} ${n}`)
}

/**
 * Starts the editor on `notes` of `vault` in its own process. `pause()`
 * resolves once no save is under way (the harness looks at the vault only
 * then); `stop()` once the editor is gone. `saved` holds, per note, the
 * numbers of the lines its saves added; `stale` and `caught` the saves the
 * run raced with (see the file's comment).
 */
export function startEditor({ vault, notes, seed }) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), JSON.stringify({ vault, notes, seed })], { stdio: ['pipe', 'pipe', 'pipe'] })
  const state = { saved: new Map(notes.map((note) => [note, []])), stale: [], caught: [], saves: 0, stderr: '' }
  const waiting = { PAUSED: [], STOPPED: [] }
  let buffer = ''
  child.stderr.setEncoding('utf8').on('data', (chunk) => (state.stderr += chunk))
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    buffer += chunk
    for (let newline; (newline = buffer.indexOf('\n')) !== -1;) {
      const [kind, note, n] = buffer.slice(0, newline).split(' ')
      buffer = buffer.slice(newline + 1)
      // A caught save is still the person's: its line must be in the note once the run put it back.
      if (kind === 'SAVED' || kind === 'CAUGHT') state.saved.get(note)?.push(Number(n))
      if (kind === 'CAUGHT') state.caught.push(`${note} line ${n}`)
      else if (kind === 'STALE') state.stale.push(note)
      else if (kind === 'STOPPED') state.saves = Number(note)
      if (kind in waiting) waiting[kind].splice(0).forEach((resolvePromise) => resolvePromise())
    }
  })
  const closed = new Promise((resolvePromise) => child.once('close', resolvePromise))
  let stopped
  const ask = (command, answer) =>
    new Promise((resolvePromise, reject) => {
      waiting[answer].push(resolvePromise)
      closed.then(() => reject(new Error(`the editor exited before it answered \`${command}\`: ${state.stderr}`)))
      child.stdin.write(`${command}\n`)
    })
  return {
    state,
    pause: () => ask('pause', 'PAUSED'),
    resume: () => void child.stdin.write('resume\n'),
    stop: () =>
      (stopped ??= ask('stop', 'STOPPED')
        .then(() => closed)
        .then(() => state)),
    kill: () => child.kill('SIGKILL'),
  }
}

/**
 * What of the editor's saves is not in the vault: per note, the person's
 * lines must be there exactly as saved (each under the title, the newest
 * first), none missing, none twice. Call it with the editor paused.
 */
export function editorProblems(readNote, state) {
  const problems = []
  for (const [note, lines] of state.saved) {
    let text
    try {
      text = readNote(note)
    } catch (error) {
      problems.push(`\`${note}\` is gone: ${error.code}`)
      continue
    }
    const found = [...text.matchAll(PERSON_LINE)].map((match) => Number(match[1]))
    const expected = [...lines].reverse()
    if (found.join(',') !== expected.join(','))
      problems.push(`\`${note}\` holds the person's lines [${found.join(', ')}], the editor saved [${expected.join(', ')}] into it (newest first)`)
  }
  return problems
}

async function main() {
  const config = JSON.parse(process.argv[2])
  const random = mulberry32(config.seed >>> 0)
  let paused = false
  let stopping = false
  let wake = () => {}
  createInterface({ input: process.stdin }).on('line', (command) => {
    if (command === 'pause') paused = true
    else if (command === 'resume') paused = false
    else if (command === 'stop') stopping = true
    wake()
  })
  let saves = 0
  let answeredPause = false
  while (!stopping) {
    if (paused) {
      if (!answeredPause) say('PAUSED')
      answeredPause = true
      await new Promise((resolve) => (wake = resolve))
      continue
    }
    answeredPause = false
    const note = config.notes[Math.floor(random() * config.notes.length)]
    saves += 1
    await save(config.vault, note, saves, random)
    await sleep(10 + random() * 60)
  }
  say(`STOPPED ${saves}`)
  process.exit(0)
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main()
