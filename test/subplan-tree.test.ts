import { describe, expect, it } from 'vitest'
import { subplanTree } from '../src/plan/subplan-tree.js'

/** A tree of vaults as a loaded plan nests them: each vault its subplans by folder. */
interface Vault {
  name: string
  subplans?: ReadonlyMap<string, Vault>
}

const vault = (name: string, subplans?: [string, Vault][]): Vault => (subplans ? { name, subplans: new Map(subplans) } : { name })

describe('subplanTree', () => {
  it('visits the top vault, then each subplan in read order before its own, with folders from the top', () => {
    const top = vault('top', [
      ['research', vault('research', [['steps/find', vault('find')]])],
      ['write', vault('write')],
    ])
    const seen = [...subplanTree(top)].map(({ folder, inner, vault: each, parent }) => ({ folder, inner, vault: each.name, parent: parent?.name }))
    expect(seen).toEqual([
      { folder: '', inner: '', vault: 'top', parent: undefined },
      { folder: 'research', inner: 'research', vault: 'research', parent: 'top' },
      { folder: 'research/steps/find', inner: 'steps/find', vault: 'find', parent: 'research' },
      { folder: 'write', inner: 'write', vault: 'write', parent: 'top' },
    ])
  })

  it('visits a vault with no subplans alone', () => {
    expect([...subplanTree(vault('alone'))].map(({ folder }) => folder)).toEqual([''])
  })
})
