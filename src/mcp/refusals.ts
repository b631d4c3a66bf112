import type { RunStateErrorCode, RunStateErrorData } from '../core/errors.js'

/** The call a refusal answers: the tool, and the vault as the client named it. */
export interface Where {
  tool: string
  vault?: string | undefined
}

/** What a refused call says: what went wrong, and the call (or a person's edit) that goes on. */
export interface Words {
  message: string
  todo: string
}

const list = (items: readonly string[]) => (items.length === 0 ? 'none' : items.map((item) => `\`${item}\``).join(', '))
const vaultOf = (where: Where) => `\`${where.vault ?? 'the vault'}\``
/** The way out of a broken run's files: a new run, beside the old one. */
const FRESH = 'or call plan_next with `fresh: true` and a `query` to start a new run (the old one is archived)'

/**
 * A refusal of each run-state code in the tools' words, built from the
 * error's data (paths already relative to the root) and never from the
 * library's message: tool and argument names, never library or CLI names,
 * and a way out in every `todo`.
 */
const WORDS: { [Code in RunStateErrorCode]: (data: RunStateErrorData[Code], where: Where) => Words } = {
  'ambiguous-decision': (data, where) => ({
    message:
      where.tool === 'plan_decide'
        ? `\`${data.file}\` has ${list(data.ticked)} ticked by hand already, and \`edge\` names another box; nothing was changed.`
        : `\`${data.file}\` has ${list(data.ticked)} ticked by hand: the run cannot tell which one the person meant.`,
    todo: `Ask the person which they meant, then call plan_decide with \`node\` \`${data.node}\` and \`edge\` one of ${list(data.ticked)}: the other boxes are unticked. Or they untick the boxes they do not mean in \`${data.file}\`.`,
  }),
  'bad-choice': (data, where) =>
    where.tool === 'plan_decide'
      ? {
          message: `\`edge\` names no single edge of \`${data.node}\`; nothing was changed.`,
          todo: `Call plan_decide with \`edge\` one of ${list(data.choices)}.`,
        }
      : data.choices.length === 0
        ? { message: `\`${data.node}\` is a last note: it takes no \`choice\`; nothing was written.`, todo: 'Call plan_finish again without `choice`.' }
        : {
            message: `\`choice\` is not one of the conditions of \`${data.node}\`; nothing was written.`,
            todo: `Call plan_finish again with \`choice\` one of ${list(data.choices)}.`,
          },
  busy: (data) => ({
    message: `Other agents hold every note ready now: ${list(data.claims.map((item) => `${item.node}${item.claim ? ` (${item.claim.agent} until ${item.claim.until})` : ''}`))}.`,
    todo: 'Call plan_next again later: a claim whose lease ended can be taken.',
  }),
  // Only a queue worker meets it; an MCP server refuses such a config when it starts.
  'checks-in-vault': (data) => ({
    message: `The server's checks come from \`${data.config}\`, inside the vault \`${data.vault}\`: a vault does not define the commands it runs.`,
    todo: 'Ask a person to give the checks with `--check` where the server starts, or to start it from a folder outside the vault.',
  }),
  claimed: (data) => ({
    message: `\`key\` is held by another agent, \`${data.claim.agent}\`, until ${data.claim.until}; nothing was written.`,
    todo: 'Call plan_next for a step of your own; the step comes free when its agent finishes it, lets it go (plan_defer), or its lease ends.',
  }),
  'note-in-use': (data) => ({
    message: `${list(data.nodes)} ${data.nodes.length === 1 ? 'is' : 'are'} being worked or waiting for a person: an edit neither replaces nor removes them; nothing was written.`,
    todo: 'Call plan_edit again without those notes, or once they are done.',
  }),
  'visited-note': (data) => ({
    message: `${list(data.nodes)} ${data.nodes.length === 1 ? 'was' : 'were'} visited by the run: a visited note is not removed; nothing was written.`,
    todo: 'Call plan_edit with a `document` section that changes the note (or takes its edges away) instead of removing it.',
  }),
  'not-revising': (data) => ({
    message: `The proposal (version ${data.version}) is not sent back for a revision (it is ${data.status}); nothing was written.`,
    todo: 'Wait until a person asks for a revision (plan_next then answers waiting, kind "proposal"), or propose into a new folder.',
  }),
  declined: (data) => ({
    message: `A person declined the proposed plan (version ${data.version}): it never runs, and this vault keeps it as they decided.`,
    todo: 'Tell the user. If a plan is still wanted, revise yours to their feedback and plan_propose it into a new folder: a person decides on it again.',
  }),
  'ledger-too-new': (data) => ({
    message: `The ledger \`${data.file}\` was written by a newer vaultplan (format ${data.format}; this server reads ${data.supported}).`,
    todo: 'Ask a person to update vaultplan where the server runs.',
  }),
  'ledger-unreadable': (data) => ({
    message: `The ledger \`${data.file}\` cannot be read${data.line === undefined ? '' : ` (line ${data.line})`}.`,
    todo: `Ask a person to repair \`${data.file}\` or move it aside; plan_ledger reads it then.`,
  }),
  'no-run': (_data, where) => ({ message: `${vaultOf(where)} holds no run.`, todo: 'Call plan_next with `vault` and a `query` to start one.' }),
  'no-start': (_data, where) => ({
    message: `The plan in ${vaultOf(where)} has no start note.`,
    todo: 'A person marks one note `type: start`; plan_validate lists every problem.',
  }),
  'node-missing': (data) => ({
    message: `The run is at \`${data.node}\`, and its note${data.file === undefined ? '' : ` \`${data.file}\``} is gone.`,
    todo: `Ask a person to put the note back, ${FRESH}.`,
  }),
  'not-waiting': (data) => ({
    message: `\`${data.node}\` ${data.status === null ? 'is no note of the plan' : `is \`status: ${data.status}\``}, not waiting for a person; waiting now: ${list(data.waiting)}.`,
    todo:
      data.waiting.length > 0
        ? `Call plan_decide with \`node\` one of ${list(data.waiting)}.`
        : 'No note waits for a person: call plan_next, it says what to do now.',
  }),
  'note-busy': (data) => ({
    message: `${list(data.files)} kept changing while the call wrote (an editor saving them); nothing was changed.`,
    todo: 'Call again.',
  }),
  'proposal-unreadable': (data) => ({
    message: `The proposal \`${data.file}\` cannot be read.`,
    todo: `Ask a person to repair \`${data.file}\`, or write the plan anew with plan_create in a new folder.`,
  }),
  'query-mismatch': (data) => ({
    message: `The run of this vault is for \`${data.recorded}\`, not for the \`query\` given.`,
    todo: `Leave \`query\` out to go on with this run, ${FRESH}.`,
  }),
  'run-vault-not-empty': (data) => ({
    message: `\`${data.folder}\` holds files already.`,
    todo: 'Pass `into` a folder that does not exist yet.',
  }),
  'run-vault-other-plan': (data) => ({
    message: `\`${data.folder}\` holds a run of another plan (\`${data.source}\`).`,
    todo: 'Pass a folder that does not exist yet.',
  }),
  'stale-decision': (data) => ({
    message:
      data.node === 'proposal'
        ? `The proposal is at version ${data.current} now, not ${data.madeOn}; nothing was changed.`
        : `\`${data.node}\` waits at its visit ${data.current} now, not ${data.madeOn}; nothing was changed.`,
    todo: 'Show the person what waits now (plan_status), then call plan_decide with what they decide on it.',
  }),
  'stale-step': (data) => ({
    message: `\`key\` is not the key of the pending step; nothing was written.`,
    todo: data.pending
      ? `The pending step is \`${data.pending.node}\` (visit ${data.pending.visit}, key \`${data.pending.key}\`): call plan_next for all of it, then plan_finish with its key.`
      : 'No step is pending (the run waits for a person, ran out of budget, or is complete): call plan_next, it says where the run stands.',
  }),
  'status-unwritable': (data) => ({
    message: `\`status: ${data.status}\` could not be written into \`${data.file}\`.`,
    todo: `Ask a person to make \`${data.file}\` writable, then call again.`,
  }),
  'trace-format': (data) => ({
    message: `The run's trace \`${data.file}\` has a record at line ${data.line} this server does not know.`,
    todo: `Ask a person to update vaultplan where the server runs, ${FRESH}.`,
  }),
  'trace-not-folder': (data) => ({
    message: `A file stands where the run's folder goes: \`${data.path}\`.`,
    todo: `Ask a person to move \`${data.path}\` aside.`,
  }),
  'trace-outside-vault': (data) => ({
    message: `A symlink stands where the run writes: \`${data.path}\`.`,
    todo: `Ask a person to remove the symlink \`${data.path}\`.`,
  }),
  'trace-too-new': (data) => ({
    message: `The run's trace \`${data.file}\` was written by a newer vaultplan (format ${data.format}; this server reads ${data.supported}).`,
    todo: 'Ask a person to update vaultplan where the server runs.',
  }),
  'trace-unreadable': (data) => ({ message: `The run's trace \`${data.file}\` cannot be read.`, todo: `Ask a person to repair or move it aside, ${FRESH}.` }),
  'two-active': (data) => ({
    message: `The notes ${list(data.nodes)} are all \`status: active\`.`,
    todo: 'Ask a person to set all but one back to `pending` or `done`, then call plan_next.',
  }),
  'vault-lock-lost': (_data, where) => ({
    message: `Another process took ${vaultOf(where)} over while this call ran.`,
    todo: 'Call plan_status; call again once it no longer shows the vault running.',
  }),
  'vault-locked': (data, where) => ({
    message: `Another process runs ${vaultOf(where)} now${data.holder ? ` (pid ${data.holder.pid} on ${data.holder.host}, since ${data.holder.since})` : ''}.`,
    todo: 'Wait until plan_status no longer shows the vault running, then call again.',
  }),
}

/** The words of a run-state refusal, by its code and data. */
export function runStateWords<Code extends RunStateErrorCode>(code: Code, data: RunStateErrorData[Code], where: Where): Words {
  return WORDS[code](data, where)
}
