import fc from 'fast-check'
import { stringify } from 'yaml'
import { describe, expect, it } from 'vitest'
import { fastPathCounts } from '../src/vault/fast-paths.js'
import { stringifyFlat } from '../src/vault/plain-yaml.js'
import { renderOutput } from '../src/store/output-note.js'

describe('stringifyFlat', () => {
  it("writes an output note's fields as yaml does", () => {
    const fields = { vaultplan: 'output', run: '20261201-101500-a3f09c', step: 12, visit: 3, id: 'blog/post', node: '[[blog/post]]', choice: 'approved' }
    const before = fastPathCounts.flatYaml
    expect(stringifyFlat(fields)).toBe(
      'vaultplan: output\nrun: 20261201-101500-a3f09c\nstep: 12\nvisit: 3\nid: blog/post\nnode: "[[blog/post]]"\nchoice: approved\n',
    )
    expect(stringifyFlat(fields)).toBe(stringify(fields))
    // Written without the yaml package, both times.
    expect(fastPathCounts.flatYaml - before).toBe(2)
  })

  it('quotes what yaml would read as something else, or hands it to yaml', () => {
    const tricky = {
      z: -0,
      a: 'true',
      b: '1e3',
      c: '0x1F',
      d: 'null',
      e: 'a: b',
      f: 'Projects/Website redesign',
      g: '# x',
      h: '',
      i: 2.5,
      j: '[[a b]]',
      k: 'ü',
    }
    for (const [key, value] of Object.entries(tricky)) expect(stringifyFlat({ id: 'x', [key]: value })).toBe(stringify({ id: 'x', [key]: value }))
  })

  it('agrees with yaml byte for byte on any flat mapping of words, numbers and wikilinks', () => {
    // Words of the plain alphabet, and words with what YAML must quote or fold.
    const word = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_./-]{1,12}$/), fc.stringMatching(/^[A-Za-z0-9_./ :#'"[\]-]{0,12}$/))
    const value = fc.oneof(
      word,
      word.map((text) => `[[${text}]]`),
      fc.integer(),
      fc.double({ noNaN: true }),
    )
    const before = fastPathCounts.flatYaml
    fc.assert(
      fc.property(fc.dictionary(fc.stringMatching(/^[a-z][a-z_]{0,8}$/), value, { maxKeys: 3 }), (fields) => {
        expect(stringifyFlat(fields)).toBe(stringify(fields))
      }),
      { numRuns: 3000 },
    )
    // The comparison means something only if the plain writer wrote a good share of them.
    expect(fastPathCounts.flatYaml - before).toBeGreaterThan(300)
  })

  it('is what an output note opens with', () => {
    expect(renderOutput({ run: '20261201-101500-a3f09c', step: 1, node: 'draft', visit: 1 }, 'Hello.\n')).toBe(
      '---\nvaultplan: output\nrun: 20261201-101500-a3f09c\nstep: 1\nvisit: 1\nid: draft\nnode: "[[draft]]"\ndigest: a2c064616af4c66c\n---\nHello.\n',
    )
  })
})
