import { renameSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { tempDir, writeVault } from './helpers/vault.js'

// Found by the crash harness's editor trials (seed 20261212, trial 135): a person's editor saving a
// note just as a run ended made the result's visits miss that note. The result is counted from the
// notes the run holds, not from a second reading of the folder at the very end.
it("a run's result counts the visits of a note that cannot be read again as the run ends", async () => {
  const dir = await writeVault({
    'draft.md': '---\ntype: start\n---\n# Draft\n\n## Next\n- [[send]]\n',
    'send.md': '# Send\n',
  })
  const elsewhere = await tempDir()
  const result = await runPlan(dir, {
    query: 'q',
    fsync: false,
    work: scriptedWorker(),
    llm: noJudge(),
    onEvent: (event) => {
      // At the run's end, draft.md is for a moment something the loader does not read (here a link out of the vault).
      if (event.type !== 'end') return
      renameSync(join(dir, 'draft.md'), join(elsewhere, 'draft.md'))
      symlinkSync(join(elsewhere, 'draft.md'), join(dir, 'draft.md'))
    },
  })
  expect(result).toMatchObject({ status: 'completed', visits: { draft: 1, send: 1 } })
})
