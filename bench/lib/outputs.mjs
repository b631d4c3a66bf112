/**
 * Generated run outputs for the search benchmarks: prose over a vocabulary
 * of 6,000 made-up words drawn with a Zipf-like law (a few words are very
 * common, most are rare, as in real text), and queries of one to three
 * words of middle frequency, the kind a person types to find a past result.
 */
import { random } from './vaults.mjs'

const SYLLABLES = 'ka lo mi ra te su vin dor pel qua sen tor bri fal gus hem jor kel lum nav ost pir rud sal tiv ul ver wex yon zar'.split(' ')

/** The vocabulary, most frequent first. */
export function vocabulary(size = 6000) {
  const rand = random(11)
  const words = new Set()
  while (words.size < size) {
    const count = 2 + Math.floor(rand() * 3)
    let word = ''
    for (let index = 0; index < count; index++) word += SYLLABLES[Math.floor(rand() * SYLLABLES.length)]
    words.add(word)
  }
  return [...words]
}

/** A word of the vocabulary with probability ~ 1 / rank. */
function zipf(rand, words) {
  // Inverse of the harmonic CDF, close enough: rank = N^u - 1 for u uniform in [0, 1).
  const rank = Math.floor(Math.pow(words.length + 1, rand())) - 1
  return words[Math.min(rank, words.length - 1)]
}

/** The text of one output, about `bytes` characters of sentences. */
export function outputText(rand, words, bytes) {
  let text = ''
  let sentence = []
  while (text.length < bytes) {
    sentence.push(zipf(rand, words))
    if (sentence.length > 6 + rand() * 12) {
      const line = sentence.join(' ')
      text += `${line[0].toUpperCase()}${line.slice(1)}. `
      sentence = []
    }
  }
  return text.trim()
}

/** `count` queries of one to three words, each word of rank 20 to 2,000. */
export function queries(seed, words, count) {
  const rand = random(seed)
  return Array.from({ length: count }, () => {
    const length = 1 + Math.floor(rand() * 3)
    return Array.from({ length }, () => words[20 + Math.floor(rand() * 1980)]).join(' ')
  })
}
