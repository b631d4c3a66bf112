/**
 * The table where vaultplan records each queued run, beside pg-boss's own
 * tables. pg-boss holds the jobs (a run has one per note being worked, at
 * most one per parallel branch); this table holds what the jobs do not:
 * which jobs a run has, that a run waits for a person (and the stamps of
 * its waiting notes), that it ended, or why it failed.
 */
/**
 * The states of a run in the table: `queued` means the run has jobs
 * (waiting for a worker, or being worked); `waiting` that it has none but
 * the one its `wait:` deadline starts, and waits for a person.
 */
export const RUN_STATES = ['queued', 'waiting', 'completed', 'stopped', 'failed'] as const
export type RunState = (typeof RUN_STATES)[number]

/** A waiting note as the table records it: its file, and the stamp it had when the run started waiting. */
export interface WaitingStamp {
  /** The note, relative to the vault. */
  file: string
  /** `mtimeMs:size:ino` of the note, or `missing`. */
  stamp: string
}

/** The runs table, schema-qualified (`schema` quoted). */
export function runsTable(schema: string): string {
  return `${schema}.vaultplan_runs`
}

/** Creates the runs table when missing (and gives a table of an earlier version its `jobs`). */
export function RUNS_TABLE_SQL(schema: string): string {
  const table = runsTable(schema)
  return `
    CREATE TABLE IF NOT EXISTS ${table} (
      queue text NOT NULL,
      vault text NOT NULL,
      state text NOT NULL CHECK (state IN (${RUN_STATES.map((state) => `'${state}'`).join(', ')})),
      job_id uuid,
      query text,
      run_id text,
      node text,
      hops integer NOT NULL DEFAULT 0,
      waiting jsonb,
      error text,
      created_on timestamptz NOT NULL DEFAULT now(),
      updated_on timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (queue, vault)
    );
    CREATE INDEX IF NOT EXISTS vaultplan_runs_state ON ${table} (queue, state);
    DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = '${schema.slice(1, -1)}' AND table_name = 'vaultplan_runs' AND column_name = 'jobs') THEN
        ALTER TABLE ${table} ADD COLUMN jobs uuid[] NOT NULL DEFAULT '{}';
        UPDATE ${table} SET jobs = ARRAY[job_id] WHERE job_id IS NOT NULL AND state IN ('queued', 'waiting');
      END IF;
    END $$;
  `
}
