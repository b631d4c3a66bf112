import { createRequire } from 'node:module'
import type PgBoss from 'pg-boss'
import { sleep } from '../core/abort.js'
import { RUNS_TABLE_SQL, runsTable } from './runs-table.js'

/** Where the queue lives: a postgres URL, or pg-boss's constructor options (connection fields, `schema`, maintenance intervals ...). */
export type QueueConnection = string | PgBoss.ConstructorOptions

/** How a queue this library creates is set up; a queue that exists keeps its own settings (pg-boss's `updateQueue` changes them). */
export interface RunQueueOptions {
  /**
   * The pg-boss queue the hops go through; one per deployment (or per test).
   *
   * @default 'vaultplan-hops'
   */
  queue?: string
  /**
   * How long one hop may take before its job counts as dead and another
   * worker takes it over (pg-boss's `expireInSeconds`). A hop that really
   * takes longer is then worked twice (same key), so keep this well above
   * the slowest model call.
   *
   * @default 900
   */
  hopTimeoutSeconds?: number
  /**
   * Retries of a hop that failed (its worker threw, or its process died)
   * before the run is recorded as failed.
   *
   * @default 5
   */
  retryLimit?: number
  /**
   * Seconds before a failed hop is tried again.
   *
   * @default 5
   */
  retryDelaySeconds?: number
}

/** A database session: one pg client inside BEGIN/COMMIT, or the pool. */
export interface Sql {
  query<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>
}

interface PgPool extends Sql {
  connect(): Promise<Sql & { release(error?: Error): void }>
  end(): Promise<void>
  on(event: 'error', listener: (error: Error) => void): unknown
}

const DEFAULTS = { queue: 'vaultplan-hops', hopTimeoutSeconds: 900, retryLimit: 5, retryDelaySeconds: 5 }
/** The connection fields that go to pg's pool; everything else is pg-boss's. */
const POOL_FIELDS = ['connectionString', 'host', 'port', 'database', 'user', 'password', 'ssl', 'max', 'application_name'] as const

/**
 * An open connection to the run queue: pg-boss on one pg pool, and the
 * table where vaultplan records each run's state (`<schema>.vaultplan_runs`,
 * beside pg-boss's own tables). Pass it wherever a connection is taken to
 * reuse it across calls; `close()` ends it.
 */
export class RunQueue {
  private constructor(
    readonly boss: PgBoss,
    private readonly pool: PgPool,
    /** The pg-boss queue of the hops. */
    readonly name: string,
    /** The pg-boss schema, quoted for SQL. */
    readonly schema: string,
  ) {}

  /**
   * Connects, installs pg-boss's schema and the runs table when missing,
   * and creates the queue when missing (with `options`' settings).
   *
   * @param bossOptions - pg-boss options that override the connection's (a short-lived connection turns maintenance off with them)
   * @throws `TypeError` on a connection that is no URL or options object, a `db` adapter, or a bad setting.
   */
  static async open(connection: QueueConnection, options: RunQueueOptions = {}, bossOptions: PgBoss.ConstructorOptions = {}): Promise<RunQueue> {
    const settings = { ...DEFAULTS, ...options }
    checkSettings(settings)
    if (typeof connection !== 'string' && (connection === null || typeof connection !== 'object')) {
      throw new TypeError(`Expected the connection to be a postgres URL or pg-boss options, got \`${String(connection)}\``)
    }
    const fields: Record<string, unknown> = typeof connection === 'string' ? { connectionString: connection } : { ...connection }
    if ('db' in fields) {
      throw new TypeError(
        'Expected connection fields or a URL, got a `db` adapter: a hop runs its own transaction on a pg client, which an adapter cannot give',
      )
    }
    const { PgBossClass, Pool } = await loadPgBoss()
    const poolConfig: Record<string, unknown> = { application_name: 'vaultplan' }
    const rest: Record<string, unknown> = { ...bossOptions }
    for (const [key, value] of Object.entries(fields)) {
      if ((POOL_FIELDS as readonly string[]).includes(key)) poolConfig[key] = value
      else rest[key] = value
    }
    const pool = new Pool(poolConfig)
    // An idle client that loses its server must not crash the process; the next query reports it.
    pool.on('error', () => undefined)
    const boss = new PgBossClass({ ...rest, db: { executeSql: (text: string, values: unknown[]) => pool.query(text, values) } })
    boss.on('error', () => undefined)
    const schema = `"${typeof rest.schema === 'string' ? rest.schema : 'pgboss'}"`
    try {
      await boss.start()
      await transaction(pool, async (sql) => {
        // Two processes creating the table at once would collide on the catalog: one at a time.
        await sql.query(`SELECT pg_advisory_xact_lock(hashtext('vaultplan_runs'))`)
        await sql.query(RUNS_TABLE_SQL(schema))
      })
      // Creating a queue makes its partition table: workers starting at once (or two queues created at once) deadlock
      // on the catalog, so one at a time, under a lock of the session that creates it.
      const client = await pool.connect()
      try {
        await client.query(`SELECT pg_advisory_lock(hashtext('vaultplan_queues'))`)
        // pg-boss's own work of another process starting (its maintenance on the job table) may still meet the partition
        // being made: PostgreSQL then aborts one side as a deadlock, which is retried, as PostgreSQL advises.
        await retriedOnDeadlock(() =>
          boss.createQueue(settings.queue, {
            name: settings.queue,
            policy: 'standard',
            expireInSeconds: settings.hopTimeoutSeconds,
            retryLimit: settings.retryLimit,
            retryDelay: settings.retryDelaySeconds,
          }),
        )
      } finally {
        await client.query(`SELECT pg_advisory_unlock(hashtext('vaultplan_queues'))`).catch(() => undefined)
        client.release()
      }
    } catch (error) {
      await boss.stop({ graceful: false, close: false }).catch(() => undefined)
      await pool.end().catch(() => undefined)
      throw error
    }
    return new RunQueue(boss, pool, settings.queue, schema)
  }

  /** The runs table, schema-qualified. */
  get runs(): string {
    return runsTable(this.schema)
  }

  /** A query on the pool, outside any transaction. */
  query<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }> {
    return this.pool.query<Row>(text, values)
  }

  /**
   * Runs `fn` in one transaction on one pg client; `db` is the adapter to
   * give pg-boss's `send`, `complete` and `fail`, so their rows commit or
   * roll back with ours.
   */
  transaction<T>(fn: (sql: Sql, db: PgBoss.Db) => Promise<T>): Promise<T> {
    return transaction(this.pool, fn)
  }

  /** Stops pg-boss and ends the pool. */
  async close(): Promise<void> {
    await this.boss.stop({ graceful: false, close: false, wait: true }).catch(() => undefined)
    await this.pool.end()
  }
}

/** A `RunQueue` given (`options` were applied when it was opened), or one opened for `fn` and closed after it. */
export async function withQueue<T>(connection: QueueConnection | RunQueue, options: RunQueueOptions, fn: (queue: RunQueue) => Promise<T>): Promise<T> {
  if (connection instanceof RunQueue) {
    if (options.queue !== undefined && options.queue !== connection.name) {
      throw new TypeError(
        `Expected no \`queue\` option with an open RunQueue of \`${connection.name}\`, got \`${options.queue}\`; open one with RunQueue.open(connection, { queue })`,
      )
    }
    return fn(connection)
  }
  // A short-lived connection does no maintenance: the workers' pg-boss does it.
  const queue = await RunQueue.open(connection, options, { supervise: false, schedule: false })
  try {
    return await fn(queue)
  } finally {
    await queue.close()
  }
}

async function transaction<T>(pool: PgPool, fn: (sql: Sql, db: PgBoss.Db) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await fn(client, { executeSql: (text, values) => client.query(text, values) })
    await client.query('COMMIT')
    return result
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback))
    throw error
  } finally {
    client.release(broken)
  }
}

function checkSettings(settings: Required<RunQueueOptions>): void {
  if (typeof settings.queue !== 'string' || !/^[\w.-]+$/.test(settings.queue)) {
    throw new TypeError(`Expected \`queue\` to be a name of letters, digits, \`_\`, \`.\` or \`-\`, got \`${String(settings.queue)}\``)
  }
  for (const [key, least] of [
    ['hopTimeoutSeconds', 1],
    ['retryLimit', 0],
    ['retryDelaySeconds', 0],
  ] as const) {
    const value = settings[key]
    if (!Number.isInteger(value) || value < least) throw new TypeError(`Expected \`${key}\` to be an integer from ${least} up, got \`${String(value)}\``)
  }
}

/** pg-boss, and the pg it was installed with (so that both use one driver), loaded only when a queue is opened. */
async function loadPgBoss(): Promise<{ PgBossClass: typeof PgBoss; Pool: new (config: Record<string, unknown>) => PgPool }> {
  const require = createRequire(import.meta.url)
  let bossPath: string
  try {
    bossPath = require.resolve('pg-boss')
  } catch (error) {
    throw new Error('vaultplan/queue needs pg-boss 10: run `npm install pg-boss@10`', { cause: error })
  }
  const PgBossClass = require(bossPath) as typeof PgBoss
  const { Pool } = createRequire(bossPath)('pg') as { Pool: new (config: Record<string, unknown>) => PgPool }
  return { PgBossClass, Pool }
}

/** PostgreSQL's code for a transaction it aborted to break a deadlock. */
const DEADLOCK = '40P01'

/** Runs `work`, again (at most 5 times, 50 ms apart and more) while PostgreSQL aborts it to break a deadlock. */
async function retriedOnDeadlock<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if ((error as { code?: unknown }).code !== DEADLOCK || attempt >= 5) throw error
      await sleep(50 * attempt)
    }
  }
}
