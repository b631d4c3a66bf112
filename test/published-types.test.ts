import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
let project: string

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'vaultplan-types-'))
})

afterAll(async () => {
  await rm(project, { recursive: true, force: true })
})

/*
 * The fast twin of the package test's type check (test/package.test.ts, slow: it packs and installs): the
 * built declarations, every one the import reaches, type-check with no Node types (`types: []`, skipLibCheck
 * off). Node's `Stats` and then its `Buffer` reached the published types twice, each seen only by the slow CI.
 */
describe('the published types', () => {
  it('name no Node type, so a TypeScript user without @types/node can import vaultplan (built by `npm run build`)', async () => {
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: false, types: [] },
        files: ['agent.ts'],
      }),
    )
    await writeFile(
      join(project, 'agent.ts'),
      `import * as vaultplan from ${JSON.stringify(join(root, 'dist', 'index.js'))}\nexport const names = Object.keys(vaultplan)\n`,
    )
    const checked = await new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(join(root, 'node_modules', '.bin', 'tsc'), ['-p', project], (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout })),
    )
    expect(checked).toEqual({ code: 0, stdout: '' })
  }, 60_000)
})
