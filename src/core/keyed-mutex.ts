/**
 * Runs async work one call at a time per key, in the order the calls came:
 * a call for a key waits until every earlier call for that key has settled
 * (a failure included, which fails its own caller only); calls for other
 * keys run at once. The entry of a key is dropped once its last call has
 * settled, so the map holds only the keys with work in flight.
 */
export class KeyedMutex<Key = string> {
  /** The tail of each key's line: settles (never rejects) once the key's latest call has. */
  private readonly tails = new Map<Key, Promise<void>>()

  /**
   * Runs `work` once every earlier call for `key` has settled, and resolves
   * or rejects as it does.
   */
  async run<T>(key: Key, work: () => Promise<T>): Promise<T> {
    const turn = (this.tails.get(key) ?? Promise.resolve()).then(work)
    const tail = turn.then(
      () => undefined,
      () => undefined,
    )
    this.tails.set(key, tail)
    try {
      return await turn
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }

  /** How many keys have a call in flight or waiting. */
  get size(): number {
    return this.tails.size
  }
}
