/**
 * Reads a YES/NO grid from a model's reply: one answer per numbered row.
 * Accepts what real models write (`1: YES`, `1. yes - because`, `**1** — No`,
 * `Condition 2: NO`, JSON objects and arrays, prose around them). A row
 * with no readable answer is NO; a row answered both YES and NO is NO.
 *
 * @returns one boolean per row, `true` for YES.
 */
export function parseGridReply(reply: string, rows: number): boolean[] {
  const fromJson = readJson(reply, rows)
  if (fromJson) return fromJson
  const yes = new Set<number>()
  const no = new Set<number>()
  // White space collapsed and lines cut, so that no pattern below can backtrack over a long run of it.
  const lines = reply.split('\n').map((line) =>
    line
      .replace(/[*_`#>|]/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, MAX_ROW_CHARS),
  )
  const read = (pattern: RegExp, only?: (row: number) => boolean) => {
    for (const line of lines) {
      const match = pattern.exec(line)
      if (!match) continue
      const row = Number(match[1])
      if (row < 1 || row > rows || (only && !only(row))) continue
      ;(isYes(match[2]!) ? yes : no).add(row)
    }
  }
  read(ROW)
  // Rows left unanswered may have been written with the condition repeated: `1. approved: YES`.
  read(ROW_WITH_LABEL, (row) => !yes.has(row) && !no.has(row))
  if (yes.size === 0 && no.size === 0 && rows === 1) {
    const bare = /^\W*(yes|no)\b/i.exec(reply.trim())
    if (bare) (isYes(bare[1]!) ? yes : no).add(1)
  }
  return Array.from({ length: rows }, (_, index) => yes.has(index + 1) && !no.has(index + 1))
}

/** A row's answer comes within its first characters: the label is at most 80 of them. */
const MAX_ROW_CHARS = 400

/** `1: YES`, `1. yes - because`, `1) No`, `Condition 2: NO`, `(3) true`. */
const ROW =
  /^(?:[-+•]\s*)?(?:(?:condition|row|question|tool|item|q)\s*)?\(?\[?(\d{1,4})(?!\d)\]?\)?\s*(?:[:.)=\-—–]\s*)*(?:(?:answer|verdict|result)\s*[:=]?\s*)?(yes|no|true|false|y|n)\b/i
/** `1. approved: YES`, `1 (approved): NO`, `2. needs revision — yes`, `1. Approved? Yes.` */
const ROW_WITH_LABEL =
  /^(?:[-+•]\s*)?(?:(?:condition|row|question|tool|item|q)\s*)?\(?\[?(\d{1,4})(?!\d)\]?\)?\s*[:.)\-—–]?\s*[^:=?"'“”]{1,80}?(?:\s+[-—–]|\s*[:=?])\s*(yes|no|true|false)\b/i

function isYes(word: string): boolean {
  return /^(yes|true|y)$/i.test(word)
}

/** The JSON value in a model's reply (fenced or bare, prose around it); `undefined` when there is none. */
export function extractJson(reply: string): unknown {
  const text = fencedBlock(reply) ?? reply
  const start = text.search(/[[{]/)
  const end = Math.max(text.lastIndexOf('}'), text.lastIndexOf(']'))
  if (start === -1 || end <= start) return undefined
  try {
    return JSON.parse(text.slice(start, end + 1))
  } catch {
    return undefined
  }
}

/**
 * The body of the first code fence that opens with ```` ``` ```` or
 * ```` ```json ```` alone on its line and is closed by a later line starting
 * with ```` ``` ````; `undefined` when there is none. One pass over the
 * reply: once no closing fence follows an opening, no later one can close.
 */
function fencedBlock(reply: string): string | undefined {
  for (let at = reply.indexOf('```'); at !== -1; at = reply.indexOf('```', at + 1)) {
    for (const language of reply.startsWith('json', at + 3) ? ['json', ''] : ['']) {
      let start = at + 3 + language.length
      while (reply[start] === ' ' || reply[start] === '\t' || reply[start] === '\r') start++
      if (reply[start] !== '\n') continue
      const end = reply.indexOf('\n```', start + 1)
      if (end === -1) return undefined
      return reply.slice(start + 1, end)
    }
  }
  return undefined
}

function readJson(reply: string, rows: number): boolean[] | undefined {
  const value = extractJson(reply)
  if (value === undefined) return undefined
  const answers = new Map<number, boolean[]>()
  const add = (row: unknown, answer: unknown) => {
    const index = Number(row)
    const verdict = toVerdict(answer)
    if (!Number.isInteger(index) || index < 1 || index > rows || verdict === undefined) return
    answers.set(index, [...(answers.get(index) ?? []), verdict])
  }
  const fromList = (list: unknown[]) =>
    list.forEach((entry, index) => {
      if (entry !== null && typeof entry === 'object' && !Array.isArray(entry)) {
        const record = entry as Record<string, unknown>
        const row = record.condition ?? record.row ?? record.id ?? record.index ?? record.number ?? record.n ?? index + 1
        add(row, record.answer ?? record.verdict ?? record.result ?? record.value ?? record.holds)
      } else add(index + 1, entry)
    })
  if (Array.isArray(value)) fromList(value)
  else if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>
    const list = record.answers ?? record.results ?? record.conditions ?? record.grid
    if (Array.isArray(list)) fromList(list)
    else for (const [key, answer] of Object.entries(record)) add(key.replace(/\D+/g, ''), answer)
  }
  if (answers.size === 0) return undefined
  return Array.from({ length: rows }, (_, index) => {
    const said = answers.get(index + 1) ?? []
    return said.length > 0 && said.every(Boolean)
  })
}

function toVerdict(answer: unknown): boolean | undefined {
  if (typeof answer === 'boolean') return answer
  if (answer !== null && typeof answer === 'object' && !Array.isArray(answer)) {
    // `{"1": {"answer": "YES", "reason": "..."}}`
    const record = answer as Record<string, unknown>
    const inner = record.answer ?? record.verdict ?? record.result ?? record.value ?? record.holds
    return inner === undefined || typeof inner === 'object' ? undefined : toVerdict(inner)
  }
  if (typeof answer !== 'string') return undefined
  const word = /^\W*(yes|no|true|false)\b/i.exec(answer)
  return word ? isYes(word[1]!) : undefined
}
