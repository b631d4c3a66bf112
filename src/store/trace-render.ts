import { TRACE_FOLDER } from '../vault/run-folder.js'
import type { ClaimRecord, EditRecord, TraceRecord } from './trace-records.js'

/**
 * How a run's trace is written: each entry a section people read, ended by
 * a marker line (an HTML comment holding the record's JSON) the run reads
 * back (`parseTrace`).
 */

/** The start of every marker line. */
export const MARKER = '<!-- vaultplan:'

/** A record's entry in the trace: a section for people, ended by its marker line for the reader. */
export function renderRecord(record: TraceRecord, rationale: string): string {
  const link = `[[${safe(record.node)}]]`
  const lines: string[] = ['']
  const within = record.plan === undefined ? '' : ` · in \`${safe(record.plan)}\``
  if (record.kind === 'hop') {
    lines.push(`## Step ${record.step} · ${link} · visit ${record.visit}${within}`, '')
    lines.push(
      `- Edge: ${record.edge ? `${safe(record.edge.label) || 'next'} → [[${safe(record.edge.target)}]]` : record.decidedBy === 'terminal' ? 'none (terminal)' : 'none (work again)'}`,
    )
    const unticked = record.unticked && ` (unticked ${record.unticked.map((label) => `\`${safe(label)}\``).join(', ')})`
    lines.push(`- Decided by: ${record.decidedBy}${record.choice === undefined ? '' : ` (choice \`${safe(record.choice)}\`)`}${unticked ?? ''}`)
    if (record.checks?.length)
      lines.push(
        `- Checks: ${record.checks.map((check) => `${safe(check.name)}: ${check.timedOut ? 'timed out' : `exit ${check.exit ?? 'none'}`}, ${formatMs(check.ms)}`).join(' · ')}`,
      )
    if (record.error !== undefined) lines.push(`- Error: ${safe(record.error)}`)
    if (record.answers?.length) lines.push(`- Answers: ${record.answers.map((entry) => `${safe(entry.condition)}: ${entry.answer}`).join(' · ')}`)
    const when = [record.at && `started ${record.at}`, record.ms !== undefined && `took ${formatMs(record.ms)}`].filter(Boolean)
    if (when.length > 0) lines.push(`- Time: ${when.join(', ')}`)
    const model = [
      record.role && `role ${safe(record.role)}`,
      record.model && `model ${safe(record.model)}`,
      record.tokens && `${record.tokens.input} tokens in, ${record.tokens.output} out`,
    ].filter(Boolean)
    if (model.length > 0) lines.push(`- Model: ${model.join(', ')}`)
    const output = safe(record.output)
    lines.push(`- Output: [[${TRACE_FOLDER}/${output.replace(/\.md$/, '')}|${output.replace(/^outputs\/|\.md$/g, '')}]]`)
  } else if (record.kind === 'stop') {
    lines.push(`## Stopped before step ${record.step + 1} · ${link} · visit ${record.visit}${within}`, '', `- Budget: ${record.budget}`)
  } else {
    lines.push(
      `## Waiting after step ${record.step} · ${link} · visit ${record.visit}${within}`,
      '',
      '- A person decides: tick one box under `## Next` in the note, then run the vault again.',
    )
  }
  if (rationale.trim() !== '') {
    // Every line of the model's text is quoted, so nothing in it can pass for a marker line or a heading;
    // a control character (an escape sequence, a NUL) shows as U+FFFD.
    lines.push(
      '',
      ...rationale
        .trimEnd()
        .split(LINE_BREAKS)
        // eslint-disable-next-line no-control-regex
        .map((line) => `> ${line.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '\ufffd')}`),
    )
  }
  lines.push('', `${MARKER}hop ${markerText(record)} -->`, '')
  return lines.join('\n')
}

/** A record as the JSON of a marker line: escaped beyond JSON's own, `<`/`>` (no comment end inside) and every character a renderer may take for a line break. */
export function markerText(record: TraceRecord | ClaimRecord | EditRecord): string {
  return JSON.stringify(record).replace(/[<>\u007f-\u009f\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** Every character a renderer may take for a line break. */
const LINE_BREAKS = /\r\n|[\r\n\v\f\u0085\u2028\u2029]/

/** A duration as the trace shows it. */
function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`
}

/** A value shown on one line of the trace: no line break, no control character. */
export function safe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
}
