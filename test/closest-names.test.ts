import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { closestNames, didYouMean } from '../src/core/closest-names.js'

describe('closestNames: what a typo meant', () => {
  it('finds a name one insertion, deletion, change or swap away, in any case; two from six characters on', () => {
    expect(closestNames('pubish', ['draft', 'publish', 'review'])).toEqual(['publish'])
    expect(closestNames('sned', ['draft', 'send'])).toEqual(['send'])
    expect(closestNames('Type', ['type', 'status'])).toEqual(['type'])
    expect(closestNames('reserch', ['research', 'papers'])).toEqual(['research'])
    expect(closestNames('reveiw-draft', ['review-draft'])).toEqual(['review-draft'])
    expect(closestNames('snd', ['send', 'sand', 'draft'])).toEqual(['send', 'sand'])
  })

  it('finds nothing for a name itself, a name too far, or another numbered name', () => {
    expect(closestNames('send', ['send', 'sand'])).toEqual([])
    expect(closestNames('mail', ['send'])).toEqual([])
    expect(closestNames('tags', ['type'], { edits: 1 })).toEqual([])
    expect(closestNames('2024-05-02', ['2024-05-01'])).toEqual([])
    expect(closestNames('step-3', ['step-2'])).toEqual([])
  })

  it('agrees with the full edit distance on any pair of short words', () => {
    const distance = (a: string, b: string): number => {
      const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
      for (let i = 1; i <= a.length; i++)
        for (let j = 1; j <= b.length; j++) {
          d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
          if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
        }
      return d[a.length]![b.length]!
    }
    const word = fc.stringMatching(/^[abc]{0,8}$/)
    fc.assert(
      fc.property(word, word, (a, b) => {
        fc.pre(a !== b)
        const limit = a.length <= 5 ? 1 : 2
        expect(closestNames(a, [b])).toEqual(distance(a, b) <= limit ? [b] : [])
      }),
    )
  })

  it('says it in words', () => {
    expect(didYouMean([])).toBe('')
    expect(didYouMean(['send'])).toBe('did you mean `send`?')
    expect(didYouMean(['a', 'b', 'c', 'd'], (name) => `[[${name}]]`)).toBe('did you mean [[a]], [[b]] or [[c]]?')
  })
})
