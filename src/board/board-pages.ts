import type { LedgerEntry } from '../core/ledger-types.js'
import type { SearchHit } from '../memory/search-runs.js'
import type { WaitingNote } from '../run/core/run-options.js'
import type { AgentClaim } from '../run/core/claims.js'
import type { RunSnapshot } from '../run/core/run-snapshot.js'
import { feedbackAsTyped } from '../vault/note-edits.js'
import type { ProposalInfo } from '../vault/proposal-note.js'
import type { RunDetail, RunRow, TimelineHop, Why } from './board-data.js'
import { personChoices } from '../run/core/deadline.js'
import { escapeHtml as e, safeHtml } from './safe-html.js'

/*
 * The board's pages as HTML text. Everything that came from a file is
 * escaped here or rendered by `safeHtml`; the page carries no inline script
 * or style (the Content-Security-Policy forbids both): its script and styles
 * are the static files under /assets/.
 */

/** The tabs of the runs page, "needs you" first; each keeps the rows it names. */
export const RUN_TABS = [
  { id: 'needs-you', label: 'Needs you', keeps: (row: RunRow) => row.waiting.length > 0 },
  { id: 'all', label: 'All', keeps: () => true },
  { id: 'ready', label: 'Ready', keeps: (row: RunRow) => row.phase === 'ready' },
  { id: 'waiting', label: 'Waiting', keeps: (row: RunRow) => row.phase === 'waiting' },
  { id: 'stopped', label: 'Stopped', keeps: (row: RunRow) => row.phase === 'stopped' },
  { id: 'completed', label: 'Completed', keeps: (row: RunRow) => row.phase === 'completed' },
  { id: 'fresh', label: 'Not started', keeps: (row: RunRow) => row.phase === 'fresh' },
  { id: 'other', label: 'Declined, invalid', keeps: (row: RunRow) => ['declined', 'invalid', 'unreadable'].includes(row.phase) },
] as const

/** A whole page: the header with the way back and search, and `main`. `vault` names the run a live page follows. */
export function page(title: string, main: string, vault?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · vaultplan board</title>
<link rel="stylesheet" href="/assets/board.css">
<script src="/assets/board.js" defer></script>
</head>
<body${vault === undefined ? '' : ` data-vault="${e(vault)}"`}>
<header><nav><a href="/">Runs</a>
<form action="/search" method="get" role="search"><label>Search past runs <input name="q" type="search"></label> <button>Search</button></form>
<span id="live" aria-live="polite"></span></nav></header>
<main id="main">
${main}
</main>
</body>
</html>
`
}

/** The runs page: tabs by phase, "needs you" first, and a row per vault; without a `tab` asked for, the first tab that has runs. */
export function runsPage(rows: readonly RunRow[], tab: string, truncated: boolean): string {
  const chosen = RUN_TABS.find((each) => each.id === tab) ?? RUN_TABS.find((each) => rows.some(each.keeps)) ?? RUN_TABS[0]
  const tabs = RUN_TABS.map((each) => {
    const count = rows.filter(each.keeps).length
    const current = each.id === chosen.id ? ' aria-current="page"' : ''
    return `<a href="/?tab=${each.id}"${current}>${e(each.label)} <span class="count">${count}</span></a>`
  }).join('\n')
  const shown = rows.filter(chosen.keeps)
  const body = shown
    .map(
      (
        row,
      ) => `<tr><td><a href="${runHref(row.name)}">${e(row.name)}</a></td><td><span class="phase phase-${row.phase}">${row.phase}</span>${row.heldBy ? ` <span class="held">held by ${e(row.heldBy)}</span>` : ''}</td>
<td>${e(row.query)}</td><td>${e(row.current)}</td><td>${row.steps} / ${row.maxSteps}</td><td>${row.waiting.map(waitsOn).join(', ')}</td></tr>`,
    )
    .join('\n')
  const empty = shown.length === 0 ? `<p class="empty">No run here.</p>` : ''
  const more = truncated ? `<p class="note">The first ${rows.length} vaults are shown.</p>` : ''
  return `<h1>Runs</h1>
<nav class="tabs" aria-label="Runs by phase">${tabs}</nav>
<table class="runs"><thead><tr><th>Vault</th><th>Phase</th><th>Query</th><th>Now</th><th>Steps</th><th>Waits on you</th></tr></thead>
<tbody>${body}</tbody></table>${empty}${more}`
}

/** A note of the runs page's "Waits on you": its name, and that an agent blocked it. */
function waitsOn(waiting: RunRow['waiting'][number]): string {
  return waiting.kind === 'blocked' ? `${e(waiting.node)} (blocked)` : e(waiting.node)
}

/**
 * The page of one run: decisions first, then the plan, the frontier with
 * who holds each claim, the hops, the outputs and the ledger. `now` (ms since
 * the epoch) tells a live lease from an expired one and makes the plan
 * picture's address new, so a browser never shows one it cached.
 */
export function runPage(detail: RunDetail, now: number, kept?: KeptDecision): string {
  const { snapshot, name } = detail
  const run = snapshot.run
  return `<h1>${e(name)} <span class="phase phase-${snapshot.phase}">${snapshot.phase}</span></h1>
<p class="query">${run ? e(run.query) : 'Not run yet.'}</p>
${proposalLink(detail)}
<p class="numbers">${snapshot.steps} of ${snapshot.maxSteps} steps${snapshot.holder ? ` · held by process ${snapshot.holder.pid} on ${e(snapshot.holder.host)}` : ''}</p>
${snapshot.stop ? `<p class="stop">${e(snapshot.stop.reason)}</p>` : ''}
${decisions(detail, kept)}
${afterDecision(detail)}
<section aria-labelledby="plan"><h2 id="plan">Plan</h2>
<img class="plan" src="/plan.svg?vault=${encodeURIComponent(name)}&amp;v=${now}" alt="The plan of ${e(name)}, each note with its status and visits">
</section>
${frontier(snapshot, now)}
${timeline(name, detail.hops, snapshot.steps)}
${snapshot.result ? `<section aria-labelledby="result"><h2 id="result">Result</h2><article class="output">${safeHtml(snapshot.result.output)}</article></section>` : ''}
<section aria-labelledby="outputs"><h2 id="outputs">Outputs</h2>
${outputsNote(detail)}
${detail.outputs.map((output) => `<article class="output" id="output-${output.step}"><h3>Step ${output.step} · ${e(output.node)} · visit ${output.visit}</h3>${safeHtml(output.output)}</article>`).join('\n') || '<p class="empty">No output yet.</p>'}
</section>
${ledger(detail)}`
}

/**
 * What a person decided that the run has not followed yet (the choice, with
 * the feedback as typed), and what happens next: the runner that holds the
 * vault goes on by itself, else the command that goes on.
 */
function afterDecision(detail: RunDetail): string {
  if (detail.decided.length === 0) return ''
  const items = detail.decided.map(
    (note) =>
      `<li><strong>${e(note.node)}</strong>: decided <strong class="choice">${e(note.edge)}</strong>${note.feedback === '' ? ', with no feedback' : `, with the feedback <q class="feedback">${e(note.feedback)}</q>`}</li>`,
  )
  const holder = detail.snapshot.holder
  const next = holder
    ? `A runner holds this vault (process ${holder.pid} on ${e(holder.host)}): it goes on from here by itself.`
    : `Next: run <code>${e(detail.goOn)}</code> to go on. A runner waiting on it (<code>vaultplan run --wait</code>), or a queue worker that serves this run, goes on by itself.`
  return `<section class="after-decision" aria-labelledby="decided"><h2 id="decided">Decided</h2><ul>${items.join('')}</ul><p class="next">${next}</p></section>`
}

/** A decision the board refused because what it was made on moved on: why, in words, and what the person typed, to show again. */
export interface KeptDecision {
  node: string
  notice: string
  feedback: string
}

/** A waiting note's choices as buttons with a feedback box; a blocked step's reason and unblock; a pending proposal's approve, revise, decline. */
function decisions(detail: RunDetail, kept: KeptDecision | undefined): string {
  const { snapshot, name, proposal, visits } = detail
  if (snapshot.waiting.length === 0) return noticeOf(kept)
  const forms = snapshot.waiting.map((waiting) => {
    const madeOn = waiting.kind === 'proposal' ? undefined : visits[waiting.node]
    return decisionForm(name, waiting, waiting.kind === 'proposal' ? proposal : undefined, 'run', { visit: madeOn, kept })
  })
  return `${noticeOf(kept)}<section aria-labelledby="decide"><h2 id="decide">Needs you</h2>\n${forms.join('\n')}\n</section>`
}

/** Why a decision was not taken, first on the page it comes back to. */
export function noticeOf(kept: KeptDecision | undefined): string {
  return kept ? `<p class="notice" role="alert">${e(kept.notice)}</p>\n` : ''
}

/**
 * The form that decides one waiting note: a feedback box and a real button
 * per choice, posted to `/decide`, with what the decision is made on (the
 * proposal's version, the note's `visit`: the board refuses it once that
 * moved on). For a proposal it names the version and shows the feedback
 * written so far; `back` is the page the board returns to once it is
 * decided; `kept` fills the feedback box of its note with what was typed
 * for a decision the board refused.
 */
export function decisionForm(
  name: string,
  waiting: WaitingNote,
  proposal: ProposalInfo | undefined,
  back: 'run' | 'proposal',
  made: { visit?: number | undefined; kept?: KeptDecision | undefined } = {},
): string {
  const heading = proposal
    ? `The proposed plan, version ${proposal.version}`
    : waiting.kind === 'blocked'
      ? `An agent blocked ${e(waiting.node)}`
      : `${e(waiting.node)} waits for you`
  const earlier = proposal?.feedback ? `<p class="feedback">Feedback so far: ${e(feedbackAsTyped(proposal.feedback))}</p>` : blockedWhy(waiting)
  const compare = proposal && back === 'run' ? `<p><a href="${proposalHref(name)}">Its versions side by side</a></p>` : ''
  const id = `feedback-${e(waiting.node.replace(/[^\w-]/g, '-'))}`
  return `<form class="decision" method="post" action="/decide">
<h3>${heading}</h3>${earlier}${compare}
<input type="hidden" name="vault" value="${e(name)}"><input type="hidden" name="node" value="${e(waiting.node)}"><input type="hidden" name="back" value="${back}">${madeOnField(proposal, made.visit)}
<label for="${id}">Feedback (optional)</label>
<textarea id="${id}" name="feedback" rows="3">${made.kept?.node === waiting.node ? e(made.kept.feedback) : ''}</textarea>
<div class="choices">${personChoices(waiting)
    .map((choice) => `<button type="submit" name="edge" value="${e(choice)}">${e(choice)}</button>`)
    .join(' ')}</div>${deadlineOf(waiting)}
</form>`
}

/** When a note's wait ends by itself: its `timeout` edge is the deadline's to take, never a person's button. */
function deadlineOf(waiting: WaitingNote): string {
  if (waiting.deadline === undefined) return ''
  const when = time(waiting.deadline)
  if (waiting.overdue) return `<p class="deadline">Past its deadline, ${when}: it has no <code>timeout</code> edge, so it waits for you.</p>`
  if (waiting.choices.length > personChoices(waiting).length)
    return `<p class="deadline">Unless you decide first, its <code>timeout</code> edge is taken at ${when}.</p>`
  return `<p class="deadline">Its deadline is ${when}; it has no <code>timeout</code> edge, so past it, it keeps waiting.</p>`
}

/** The hidden field that says what a decision is made on; `data-made-on`: a live page keeps what was typed when it changes. */
function madeOnField(proposal: ProposalInfo | undefined, visit: number | undefined): string {
  if (proposal) return `<input type="hidden" name="version" value="${proposal.version}" data-made-on>`
  return visit === undefined ? '' : `<input type="hidden" name="visit" value="${visit}" data-made-on>`
}

/** Why and since when an agent blocked a step, in the agent's words shown as text; `''` for any other wait. */
function blockedWhy(waiting: WaitingNote): string {
  if (waiting.kind !== 'blocked') return ''
  const reason = waiting.reason === undefined ? '' : `<p class="reason">Its reason: <q>${e(waiting.reason)}</q></p>`
  const since = waiting.since === undefined ? '' : `<p class="since">Blocked since ${time(waiting.since)}.</p>`
  return `${reason}${since}<p class="note">Unblock hands the step back to the agents, your feedback with it.</p>`
}

/** The way to a decided proposal's versions (one that waits links them from its form). */
function proposalLink(detail: RunDetail): string {
  const { proposal, snapshot, name } = detail
  if (!proposal || snapshot.waiting.some((waiting) => waiting.node === 'proposal')) return ''
  return `<p class="proposal">A model proposed this plan: version ${proposal.version}, ${proposal.status}. <a href="${proposalHref(name)}">Its versions side by side</a></p>`
}

/** Says when only the latest outputs are shown, with the way to all of them. */
function outputsNote(detail: RunDetail): string {
  if (detail.outputs.length >= detail.outputCount) return ''
  return `<p class="note">The latest ${detail.outputs.length} of ${detail.outputCount} outputs. <a href="${runHref(detail.name)}&amp;outputs=all">Show all ${detail.outputCount}</a></p>`
}

/** What can be done now, each item with the agent that holds it and until when. */
function frontier(snapshot: RunSnapshot, now: number): string {
  if (snapshot.frontier.length === 0) return ''
  const items = snapshot.frontier.map(
    (item) => `<li>${item.kind} <strong>${e(item.node)}</strong> · visit ${item.visit} · step ${item.step}${holder(item.claim, now)}</li>`,
  )
  return `<section aria-labelledby="frontier"><h2 id="frontier">Next</h2><ul class="frontier">${items.join('')}</ul></section>`
}

/** Who holds a frontier item's claim and until when; a lease past its end says so, for another agent may take the item. */
function holder(claim: AgentClaim | undefined, now: number): string {
  if (!claim) return ''
  const expired = Date.parse(claim.until) <= now
  return expired
    ? ` · <span class="claim expired">claimed by <b class="agent">${e(claim.agent)}</b>, lease expired ${time(claim.until)}: another agent may take it</span>`
    : ` · <span class="claim">claimed by <b class="agent">${e(claim.agent)}</b> until ${time(claim.until)}</span>`
}

/** A moment as the page shows it (`2026-05-01 14:03:07 UTC`), machine-readable in its `datetime`. */
function time(iso: string): string {
  const moment = new Date(iso)
  const shown = Number.isNaN(moment.getTime()) ? iso : `${moment.toISOString().slice(0, 19).replace('T', ' ')} UTC`
  return `<time datetime="${e(iso)}">${e(shown)}</time>`
}

function timeline(name: string, hops: readonly TimelineHop[], steps: number): string {
  if (hops.length === 0) return ''
  const rows = hops.map((hop) => {
    const edge = hop.edge === null ? '—' : hop.edge === '' ? 'next' : e(hop.edge)
    const tokens = hop.tokens ? `${hop.tokens.input} in / ${hop.tokens.output} out` : ''
    return `<tr><td>${hop.step}</td><td>${e(hop.node)}</td><td>${hop.visit}</td><td>${edge}</td><td>${e(hop.decidedBy)}</td><td>${whyHtml(hop.why)}</td>
<td>${hop.ms === undefined ? '' : `${(hop.ms / 1000).toFixed(1)} s`}</td><td>${e(hop.model ?? '')}</td><td>${tokens}</td></tr>`
  })
  return `<section aria-labelledby="hops"><h2 id="hops">Hops</h2>
<table class="hops"><thead><tr><th>Step</th><th>Note</th><th>Visit</th><th>Edge</th><th>Decided by</th><th>Why</th><th>Took</th><th>Model</th><th>Tokens</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>
<form class="fork" method="post" action="/fork"><input type="hidden" name="vault" value="${e(name)}">
<label>Fork from step <input name="step" type="number" min="0" max="${steps}" value="${steps}" required></label>
<label>into the new folder <input name="into" value="${e(`${name}-fork`)}" required></label>
<button type="submit">Fork</button></form>
</section>`
}

/** Why a hop went where it went, part by part: a person's feedback as a quotation of their words (never with a raw `>`), the rest as text. */
function whyHtml(why: readonly Why[]): string {
  return why
    .map((part) => (part.kind === 'feedback' ? `<q class="feedback">${e(part.text)}</q>` : `<span class="why-${part.kind}">${e(part.text)}</span>`))
    .join('<br>')
}

function ledger(detail: RunDetail): string {
  const { facts, assumptions, decisions } = detail.ledger
  if (facts.length + assumptions.length + decisions.length === 0) return ''
  const list = (title: string, entries: readonly (LedgerEntry & { valid?: boolean })[]) =>
    entries.length === 0
      ? ''
      : `<h3>${title}</h3><ul>${entries
          .map(
            (entry) =>
              `<li${entry.valid === false ? ' class="invalid"' : ''}><strong>${e(entry.id)}</strong> ${e(entry.text)}${entry.reason ? ` <em>${e(entry.reason)}</em>` : ''}</li>`,
          )
          .join('')}</ul>`
  return `<section aria-labelledby="ledger"><h2 id="ledger">Ledger</h2>${list('Facts', facts)}${list('Assumptions', assumptions)}${list('Decisions', decisions)}</section>`
}

/** The search page: the form's answer, hit by hit, each linking to its run. */
export function searchPage(query: string, hits: readonly SearchHit[]): string {
  const items = hits.map(
    (hit) =>
      `<li><a href="${runHref(hit.vault)}">${e(hit.vault)}</a> · ${e(hit.kind)}${hit.node ? ` · ${e(hit.node)}` : ''}${hit.step ? ` · step ${hit.step}` : ''}<p>${e(hit.snippet)}</p></li>`,
  )
  return `<h1>Search</h1>
<form action="/search" method="get"><label>Words <input name="q" type="search" value="${e(query)}"></label> <button>Search</button></form>
${query === '' ? '' : items.length === 0 ? '<p class="empty">Nothing found.</p>' : `<ol class="hits">${items.join('')}</ol>`}`
}

/** A page that says what went wrong, with the way back. */
export function problemPage(message: string, back: string): string {
  return `<h1>That did not work</h1><p class="problem">${e(message)}</p><p><a href="${e(back)}">Back</a></p>`
}

/** The address of a run's page. */
export function runHref(name: string): string {
  return `/run?vault=${encodeURIComponent(name)}`
}

/** The address of a vault's proposal page. */
export function proposalHref(name: string): string {
  return `/proposal?vault=${encodeURIComponent(name)}`
}
