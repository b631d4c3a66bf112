import { durationMs } from './durations.js'

/**
 * The frontmatter knobs of a note (`type`, `status`, `judge`, ...), declared
 * once: the node field each one sets, the values it takes, its default and
 * what the error says. The node types, the loader's checks, its messages,
 * `savePlan`'s rendering and the knob lines of a plan document all read
 * this table.
 */

/** What a node is: `start` marks the entry node, everything else is a `step`. */
export const NODE_TYPES = ['step', 'start'] as const
/** The resume markers the executor writes into `status:`; `waiting` only for `judge: human` notes. */
export const NODE_STATUSES = ['pending', 'active', 'done', 'waiting'] as const
/** Who decides a node's conditions. */
export const JUDGE_KINDS = ['llm', 'human'] as const

/** The knobs, keyed by their frontmatter name. */
export const KNOBS = {
  type: { field: 'type', values: NODE_TYPES, fallback: 'step' },
  status: { field: 'status', values: NODE_STATUSES, fallback: 'pending' },
  tools: { field: 'tools', shape: 'names', expects: 'a list of tool names' },
  role: { field: 'role', shape: 'name', expects: 'a role name such as `review`' },
  max_visits: { field: 'maxVisits', shape: 'count', fallback: 3, expects: 'an integer from 1 up' },
  judge: { field: 'judge', values: JUDGE_KINDS },
  plan: { field: 'plan', shape: 'folders', expects: 'a folder beside the note (`plan: research`), a list of folders, or `generate`' },
  check: { field: 'check', shape: 'folders', expects: 'a check name (`check: test`) or a list of names' },
  retries: { field: 'retries', shape: 'count0', fallback: 0, expects: 'an integer from 0 up' },
  wait: { field: 'wait', shape: 'duration', expects: 'a duration such as `45s`, `30m`, `4h` or `2d`, at most `365d` (a year)' },
} as const

/**
 * The edge labels a knob gives meaning to, on the note that sets it:
 * `check:` decides `passed` and `failed`, `retries:` takes `failed` once
 * the worker keeps failing, and `wait:` takes `timeout` at its deadline.
 * Anywhere else a label is a condition like any other.
 */
export const KNOB_LABELS = { check: ['passed', 'failed'], retries: ['failed'], wait: ['timeout'] } as const

/** A knob's frontmatter name (`max_visits`). */
export type KnobKey = keyof typeof KNOBS
/** The knobs' frontmatter names, in the table's order. */
export const KNOB_KEYS = Object.keys(KNOBS) as KnobKey[]

type Knob = {
  field: string
  values?: readonly string[]
  shape?: 'names' | 'name' | 'count' | 'count0' | 'folders' | 'duration'
  fallback?: unknown
  expects?: string
}

/** The value of a knob as the node holds it (`plan: research` as `['research']`), or `undefined` when it is not one the knob takes. */
export function checkKnob(key: KnobKey, value: unknown): unknown {
  const knob: Knob = KNOBS[key]
  if (knob.values) return typeof value === 'string' && knob.values.includes(value) ? value : undefined
  switch (knob.shape) {
    case 'names':
      return Array.isArray(value) && value.every((name) => typeof name === 'string' && name !== '') ? value : undefined
    case 'name':
      return typeof value === 'string' && value !== '' ? value : undefined
    case 'folders': {
      const folders = ([] as unknown[]).concat(value)
      return folders.length > 0 && folders.every((folder) => typeof folder === 'string' && folder.trim() !== '')
        ? folders.map((folder) => (folder as string).trim())
        : undefined
    }
    case 'count0':
      return Number.isSafeInteger(value) && (value as number) >= 0 ? value : undefined
    case 'duration':
      return typeof value === 'string' && durationMs(value) !== undefined ? value.trim() : undefined
    default:
      return Number.isSafeInteger(value) && (value as number) >= 1 ? value : undefined
  }
}

/** What a knob's error says it must be: `` must be `step` or `start` ``. */
export function knobExpects(key: KnobKey): string {
  const knob: Knob = KNOBS[key]
  if (!knob.values) return knob.expects!
  const quoted = knob.values.map((value) => `\`${value}\``)
  return quoted.length === 2 ? `${quoted[0]} or ${quoted[1]}` : `one of ${quoted.join(', ')}`
}

/**
 * Whether a note waits for a person after its work: `judge: human` with
 * somewhere to go (a terminal has no transition to decide). The one test of
 * "is this a human note".
 */
export function waitsForPerson(node: { judge?: string | undefined; edges: readonly unknown[] }): boolean {
  return node.judge === 'human' && node.edges.length > 0
}
