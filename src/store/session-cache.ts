/** What the cache needs of a session: its vault's real path and how many notes it holds. */
export interface KeptSession {
  readonly root: string
  readonly size: number
}

/**
 * The vault sessions that calls in this process (the stepping API, a queue
 * worker's hops) closed lately, so the next call on a vault starts from
 * what the last one read instead of reading and parsing every note again.
 * A session is taken out while a call uses it and brought up to date with
 * the disk by its stamps (`VaultSession.open`), so the cache never answers
 * for the disk. Bounded by the notes it holds: the least recently used
 * vaults go first, the last one kept always stays.
 */
export class SessionCache<Session extends KeptSession = KeptSession> {
  private readonly sessions = new Map<string, Session>()

  /** @param maxNotes - notes held at most, over all the vaults kept */
  constructor(private readonly maxNotes = 20_000) {
    if (!Number.isInteger(maxNotes) || maxNotes < 0) throw new TypeError(`Expected \`maxNotes\` to be an integer from 0 up, got \`${String(maxNotes)}\``)
  }

  /** Takes out the session kept for the vault at this real path, if any; it is no longer in the cache. */
  take(root: string): Session | undefined {
    const session = this.sessions.get(root)
    this.sessions.delete(root)
    return session
  }

  /** Keeps a closed session for the next call on its vault. */
  keep(session: Session): void {
    this.sessions.delete(session.root)
    this.sessions.set(session.root, session)
    let held = 0
    for (const each of this.sessions.values()) held += each.size
    for (const [root, each] of this.sessions) {
      if (held <= this.maxNotes || each === session) break
      this.sessions.delete(root)
      held -= each.size
    }
  }

  /** How many vaults are kept. */
  get vaults(): number {
    return this.sessions.size
  }
}
