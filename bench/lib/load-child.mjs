/**
 * Runs in its own process: loads and validates a vault (or merely reads
 * it, with `read`) and prints the process's peak resident set size, read
 * from getrusage, so the figure is the true peak and not a sample.
 *
 * Usage: node bench/lib/load-child.mjs <vault> [load|read]
 */
import { loadAndValidate, readOnlySync } from './load.mjs'

const [vault, mode = 'load'] = process.argv.slice(2)
const before = process.resourceUsage().maxRSS
const rssBefore = process.memoryUsage().rss
const figure = mode === 'read' ? readOnlySync(vault) : await loadAndValidate(vault)
const peak = process.resourceUsage().maxRSS
process.stdout.write(`${JSON.stringify({ mode, peakRssMB: peak / 1024, peakBeforeMB: before / 1024, rssBeforeMB: rssBefore / 2 ** 20, heapUsedMB: process.memoryUsage().heapUsed / 2 ** 20, ...figure })}\n`)
