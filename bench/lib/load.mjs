/**
 * Loading a vault and merely reading it. Kept apart from the runners so a
 * child process that measures memory imports vaultplan and nothing else.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadPlan } from '../../dist/index.js'
import { cpuNow, now } from './stats.mjs'

/** `loadPlan(dir)` then `validate()`: the time to have a checked plan in memory. */
export async function loadAndValidate(dir) {
  const cpuStarted = cpuNow()
  const started = now()
  const graph = await loadPlan(dir)
  const issues = graph.validate()
  return { ms: now() - started, cpuMs: cpuNow() - cpuStarted, nodes: graph.nodes.size, warnings: issues.length }
}

/** Merely reading the vault: list its `*.md` files and read each as text, 32 at a time (the library's concurrency). */
export async function readOnly(dir, concurrency = 32) {
  const cpuStarted = cpuNow()
  const started = now()
  const files = []
  const walk = async (folder) => {
    for (const entry of await readdir(join(dir, folder), { withFileTypes: true })) {
      if (entry.name.startsWith('.') || (!folder && entry.name === '00_plan-trace')) continue
      const path = folder ? `${folder}/${entry.name}` : entry.name
      if (entry.isDirectory()) await walk(path)
      else if (entry.name.endsWith('.md')) files.push(path)
    }
  }
  await walk('')
  let next = 0
  let bytes = 0
  const worker = async () => {
    for (let index = next++; index < files.length; index = next++) {
      const text = await readFile(join(dir, files[index]), 'utf8')
      bytes += text.length
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker))
  return { ms: now() - started, cpuMs: cpuNow() - cpuStarted, files: files.length, chars: bytes }
}

/** Merely reading the vault with the synchronous API: list its `*.md` files and `readFileSync` each in a loop (the bare floor of a load). */
export function readOnlySync(dir) {
  const cpuStarted = cpuNow()
  const started = now()
  const files = []
  const walk = (folder) => {
    for (const entry of readdirSync(join(dir, folder), { withFileTypes: true })) {
      if (entry.name.startsWith('.') || (!folder && entry.name === '00_plan-trace')) continue
      const path = folder ? `${folder}/${entry.name}` : entry.name
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) files.push(path)
    }
  }
  walk('')
  let chars = 0
  for (const file of files) chars += readFileSync(join(dir, file), 'utf8').length
  return { ms: now() - started, cpuMs: cpuNow() - cpuStarted, files: files.length, chars }
}
