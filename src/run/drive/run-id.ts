import { randomBytes } from 'node:crypto'

/** A new run id: the UTC time it starts, to the second, and six random hex digits (`20261201-101500-a3f09c`). */
export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  return `${stamp}-${randomBytes(3).toString('hex')}`
}
