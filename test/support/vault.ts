import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

/** Writes `{ 'path.md': text }` as a fresh vault in a temp folder and returns its path. */
export async function writeVault(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vaultplan-test-'))
  for (const [file, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await writeFile(join(dir, file), text)
  }
  return dir
}

/** The draft/review loop of SPEC section 2, with the review routed to the `review` role. */
export const draftReview = {
  'draft.md': '---\ntype: start\n---\n# Draft\n\nWrite the draft.\n\n## Next\n- [[review]]\n',
  'review.md': '---\nrole: review\nmax_visits: 3\n---\n# Review\n\nApprove the draft, or say what must change.\n\n## Next\n- approved -> [[send]]\n- needs revision -> [[draft]]\n',
  'send.md': '# Send\n\nSend the approved draft.\n',
}
