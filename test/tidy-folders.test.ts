import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { scriptedWorker } from './helpers/scripted.js'
import { note, writeVault } from './helpers/vault.js'

it("a finished run makes no run folder in a person's folders (a note's, one of attachments) as it tidies up", async () => {
  const dir = await writeVault({
    'draft.md': note({ front: { type: 'start' }, title: 'Draft', next: ['[[blog/post]]'] }),
    'blog/post.md': note({ title: 'Post' }),
    'assets/readme.txt': 'Pictures go here.\n',
  })
  expect(await runPlan(dir, { query: 'Announce', work: scriptedWorker() })).toMatchObject({ status: 'completed' })
  expect([existsSync(join(dir, '00_plan-trace')), existsSync(join(dir, 'blog/00_plan-trace')), existsSync(join(dir, 'assets/00_plan-trace'))]).toEqual([
    true,
    false,
    false,
  ])
})
