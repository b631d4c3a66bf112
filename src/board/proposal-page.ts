import { parseFrontmatter } from '../vault/frontmatter.js'
import { decisionForm, noticeOf, runHref, type KeptDecision } from './board-pages.js'
import { lineDiff, type DiffLine } from './line-diff.js'
import type { PlanVersion, ProposalHistory } from './proposal-data.js'
import { escapeHtml as e, safeHtml } from './safe-html.js'

/** Which two versions the page sets side by side: the asked ones if the proposal has them, else the last two. */
export function comparedVersions(history: ProposalHistory, from: number | undefined, to: number | undefined): [PlanVersion | undefined, PlanVersion] {
  const byNumber = (number: number | undefined) => history.versions.find((version) => version.version === number)
  const last = history.versions.at(-1)!
  const later = byNumber(to) ?? last
  const earlier = byNumber(from) ?? history.versions.filter((version) => version.version < later.version).at(-1)
  return [earlier === later ? undefined : earlier, later]
}

/**
 * The proposal page: the decision (approve / revise / decline with a
 * feedback box) while the proposal waits, every version with the feedback
 * that sent it back, two versions side by side, and the difference between
 * them note by note; `kept`: a decision refused, said first, its feedback
 * shown again.
 */
export function proposalPage(history: ProposalHistory, from: number | undefined, to: number | undefined, kept?: KeptDecision): string {
  const { name, versions } = history
  const current = versions.at(-1)!
  const [earlier, later] = comparedVersions(history, from, to)
  const shown = earlier ? [earlier, later] : [later]
  return `<h1>${e(name)} <span class="phase phase-${current.status}">proposal v${current.version} · ${current.status}</span></h1>
<p class="query">${e(current.query)}</p>
<p><a href="${runHref(name)}">The run of this vault</a></p>
${noticeOf(kept)}${standing(history, kept)}
<section aria-labelledby="versions"><h2 id="versions">Versions</h2>
<ol class="versions">${versions.map((version) => `<li>v${version.version} · ${version.status}${version.feedback && version.status === 'revised' ? ` · sent back with: <q>${e(version.feedback)}</q>` : ''}</li>`).join('')}</ol>
${versions.length > 1 ? compareForm(history, earlier, later) : ''}
<div class="side-by-side">${shown.map(versionColumn).join('\n')}</div>
</section>
${earlier ? difference(earlier, later) : ''}`
}

/** What waits on a person, or what a person decided that the next run acts on. */
function standing(history: ProposalHistory, kept: KeptDecision | undefined): string {
  const current = history.versions.at(-1)!
  if (history.waiting) {
    const info = { version: current.version, status: current.status, ...(current.feedback !== undefined && { feedback: current.feedback }) }
    return `<section aria-labelledby="decide"><h2 id="decide">Needs you</h2>\n${decisionForm(history.name, history.waiting, info, 'proposal', { kept })}\n</section>`
  }
  const [ticked] = history.ticked
  if (ticked === undefined) return ''
  if (ticked === 'revise' && history.agent)
    return `<p class="decided"><strong>revise</strong> is ticked: the agent that proposed this version writes the next one from the feedback.</p>`
  const next = { approve: 'runs this version', revise: 'has the planner write the next version from the feedback', decline: 'declines it for good' }[ticked]
  return `<p class="decided"><strong>${ticked}</strong> is ticked: the next run of this vault ${next}.</p>`
}

function compareForm(history: ProposalHistory, earlier: PlanVersion | undefined, later: PlanVersion): string {
  const options = (chosen: PlanVersion | undefined) =>
    history.versions.map((version) => `<option value="${version.version}"${version === chosen ? ' selected' : ''}>v${version.version}</option>`).join('')
  return `<form class="compare" method="get" action="/proposal"><input type="hidden" name="vault" value="${e(history.name)}">
<label>Compare <select name="from">${options(earlier)}</select></label> <label>with <select name="to">${options(later)}</select></label>
<button type="submit">Compare</button></form>`
}

function versionColumn(version: PlanVersion): string {
  const notes = version.notes.map((note) => `<article class="output"><h4>${e(note.file)}</h4>${safeHtml(bodyOf(note.text))}</article>`)
  return `<section class="version" aria-label="Version ${version.version}"><h3>Version ${version.version} · ${version.status}</h3>
${notes.join('\n') || '<p class="empty">Its notes are gone.</p>'}</section>`
}

/** The difference between two versions, note by note: notes added, removed, changed (line by line) and kept as they were. */
function difference(earlier: PlanVersion, later: PlanVersion): string {
  const before = new Map(earlier.notes.map((note) => [note.file, note.text]))
  const after = new Map(later.notes.map((note) => [note.file, note.text]))
  const files = [...after.keys(), ...[...before.keys()].filter((file) => !after.has(file))]
  const items = files.map((file) => {
    const was = before.get(file)
    const is = after.get(file)
    const kind = was === undefined ? 'added' : is === undefined ? 'removed' : was === is ? 'same' : 'changed'
    const word = { added: 'new', removed: 'removed', same: 'unchanged', changed: 'changed' }[kind]
    const lines =
      kind === 'same'
        ? ''
        : `<pre class="diff">${lineDiff(was ?? '', is ?? '')
            .map(diffLine)
            .join('')}</pre>`
    return `<li class="diff-${kind}"><h3>${e(file)} <span class="note">${word}</span></h3>${lines}</li>`
  })
  return `<section aria-labelledby="difference"><h2 id="difference">What changed from v${earlier.version} to v${later.version}</h2>
<ul class="differences">${items.join('\n')}</ul></section>`
}

function diffLine(line: DiffLine): string {
  if (line.kind === 'added') return `<ins>+ ${e(line.text)}</ins>`
  if (line.kind === 'removed') return `<del>- ${e(line.text)}</del>`
  return `<span>  ${e(line.text)}</span>`
}

/** A note without its frontmatter: the side-by-side view shows what a note says; the difference shows every line. */
function bodyOf(text: string): string {
  return text.slice(parseFrontmatter(text).split.contentStart)
}
