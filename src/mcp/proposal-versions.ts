import { readFile } from 'node:fs/promises'
import { parseProposal, type ProposalInfo } from '../vault/proposal-note.js'
import { runFileToRead } from '../vault/path-gate.js'
import { PROPOSAL_FILE, PROPOSALS_FOLDER } from '../vault/run-folder.js'
import { resourceUri } from './paths.js'
import { LIMITS } from './results.js'

/** One version of a proposal as plan_list shows it: its status, the person's feedback on it (clipped), its note. */
export interface ProposalVersion {
  version: number
  status: string
  feedback?: string
  uri: string
}

/**
 * A vault's proposal as plan_list shows it: the version that stands (its
 * status and note) and each earlier one, newest first, with what the person
 * said when they sent it back, so the history of a revised proposal is read
 * in the call that lists the vaults. An earlier version that cannot be read
 * is left out.
 *
 * @param path - the vault's real path
 * @param vault - the vault as the client names it
 */
export async function proposalVersions(path: string, vault: string, info: ProposalInfo): Promise<ProposalVersion & { versions?: ProposalVersion[] }> {
  const versions: ProposalVersion[] = []
  for (let version = info.version - 1; version >= 1; version--) {
    const file = `${PROPOSALS_FOLDER}/v${version}/${PROPOSAL_FILE.split('/').at(-1)}`
    const text = await readFile(runFileToRead(path, file), 'utf8').catch(() => undefined)
    if (text === undefined) continue
    try {
      const note = parseProposal(text, vault)
      versions.push({ version, status: note.status, ...feedbackOf(note.feedback), uri: resourceUri(vault, file) })
    } catch {
      continue
    }
  }
  return {
    version: info.version,
    status: info.status,
    ...feedbackOf(info.feedback),
    uri: resourceUri(vault, PROPOSAL_FILE),
    ...(versions.length > 0 && { versions }),
  }
}

function feedbackOf(text: string | undefined): { feedback?: string } {
  const trimmed = text?.trim()
  if (!trimmed) return {}
  return { feedback: trimmed.length <= LIMITS.preview ? trimmed : `${trimmed.slice(0, LIMITS.preview)}…` }
}
