import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'

// The names users import. Adding one is a feature, removing or renaming one breaks users: either is a decision, made here.
it('exports exactly these names', async () => {
  expect(Object.keys(await import('vaultplan')).sort()).toEqual([
    'DECIDED_BY',
    'JUDGE_KINDS',
    'LEDGER_KINDS',
    'LLMError',
    'ModelConfigError',
    'NODE_STATUSES',
    'NODE_TYPES',
    'PLAN_ISSUE_CODES',
    'PROPOSAL_STATUSES',
    'PictureTooLargeError',
    'PlanGraph',
    'PlanValidationError',
    'RUN_STATE_ERROR_CODES',
    'RunAbortedError',
    'RunStateError',
    'StepError',
    'VaultPathError',
    'VaultplanError',
    'blockStep',
    'chooseEdge',
    'completeStep',
    'createLLM',
    'createWorker',
    'decide',
    'deferStep',
    'dryRun',
    'editPlan',
    'forkRun',
    'formatIssue',
    'invalidate',
    'loadPlan',
    'nextStep',
    'observeRun',
    'parsePlanDocument',
    'pathGraphFromSteps',
    'planGraph',
    'proposePlan',
    'readLedger',
    'readProposal',
    'readRunStatus',
    'recordEntry',
    'registerPredicate',
    'resolveModelConfig',
    'revalidate',
    'runPlan',
    'runSchedules',
    'savePlan',
    'searchRuns',
    'updateStatus',
  ])
})

// Codes callers branch on: adding one is a feature, renaming one breaks callers.
it('pins the error codes', async () => {
  const { RUN_STATE_ERROR_CODES } = await import('vaultplan')
  expect([...RUN_STATE_ERROR_CODES]).toEqual([
    'ambiguous-decision',
    'bad-choice',
    'busy',
    'checks-in-vault',
    'claimed',
    'declined',
    'ledger-too-new',
    'ledger-unreadable',
    'no-run',
    'no-start',
    'node-missing',
    'not-revising',
    'not-waiting',
    'note-busy',
    'note-in-use',
    'proposal-unreadable',
    'query-mismatch',
    'run-vault-not-empty',
    'run-vault-other-plan',
    'stale-decision',
    'stale-step',
    'status-unwritable',
    'trace-format',
    'trace-not-folder',
    'trace-outside-vault',
    'trace-too-new',
    'trace-unreadable',
    'two-active',
    'vault-lock-lost',
    'vault-locked',
    'visited-note',
  ])
  const { PLAN_ISSUE_CODES } = await import('vaultplan')
  expect([...PLAN_ISSUE_CODES]).toEqual([
    'ambiguous-link',
    'ambiguous-unconditional',
    'cycle-without-exit',
    'dangling-edge',
    'duplicate-id',
    'invalid-frontmatter',
    'invalid-subplan',
    'misspelled-knob',
    'misspelled-label',
    'multiple-starts',
    'multiple-targets',
    'no-reachable-terminal',
    'no-sections',
    'no-start',
    'not-a-note',
    'note-too-large',
    'outside-vault',
    'run-folder',
    'too-many-sections',
    'two-active',
    'unknown-check',
    'unknown-knob',
    'unknown-tool',
    'unplaceable-note',
    'unprintable-name',
    'unreachable',
    'unreadable-next',
    'unreadable-note',
    'unwritable-note',
  ])
})

// One scheme: every error of the user's world is a VaultplanError with a stable name, a kebab-case code and its cause.
it('every error class shares the base, its name and one casing of codes', async () => {
  const lib = await import('vaultplan')
  const cause = new Error('disk full')
  const errors = [
    new lib.PlanValidationError([{ code: 'dangling-edge', severity: 'error', message: 'x' }], { cause }),
    new lib.RunStateError('vault-locked', 'held', { vault: 'v', holder: null }, { cause }),
    new lib.StepError('draft', 1, cause),
    new lib.RunAbortedError('plans/announce', { cause }),
    new lib.VaultPathError('vault-missing', 'no such folder', { cause }),
    new lib.ModelConfigError('action', 'no model'),
    new lib.LLMError({ role: 'action', model: 'm', baseURL: 'http://127.0.0.1:1/v1' }, 'refused', { cause }),
    new lib.PictureTooLargeError(400, 10_000, { cause }),
  ]
  for (const error of errors) {
    expect(error).toBeInstanceOf(lib.VaultplanError)
    expect(error.name).toBe(error.constructor.name)
    expect(error.code).toMatch(/^[a-z]+(-[a-z]+)*$/)
    if (!(error instanceof lib.ModelConfigError)) expect(error.cause).toBe(cause)
  }
  expect(errors.map((error) => error.code)).toEqual([
    'plan-invalid',
    'vault-locked',
    'worker-failed',
    'run-aborted',
    'vault-missing',
    'model-not-configured',
    'llm-request-failed',
    'picture-too-large',
  ])
})

it('names at most 125 things in the main entry, values and types: one idea per name, and nothing only the project itself uses', () => {
  const index = readFileSync(join(import.meta.dirname, '..', 'src', 'index.ts'), 'utf8')
  const names = [...index.matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((match) =>
    match[1]!
      .split(',')
      .map((part) =>
        part
          .trim()
          .replace(/^type /, '')
          .split(' as ')
          .pop()!
          .trim(),
      )
      .filter(Boolean),
  )
  expect(new Set(names).size).toBe(names.length)
  expect(names.length).toBeLessThanOrEqual(125)
})

it('exports exactly these names from vaultplan/ai-sdk', async () => {
  expect(Object.keys(await import('vaultplan/ai-sdk')).sort()).toEqual(['llmFromAISDK', 'toolsFromAISDK'])
})

it('exports exactly these names from vaultplan/testing: a judge for the tests of a plan', async () => {
  expect(Object.keys(await import('vaultplan/testing')).sort()).toEqual(['scriptedJudge'])
})

it('exports exactly these names from vaultplan/pictures', async () => {
  expect(Object.keys(await import('vaultplan/pictures')).sort()).toEqual(['toCanvas', 'toDot', 'toMermaid', 'toSvg'])
})

it('exports exactly these names from vaultplan/mcp: the server the docs name, for a transport of your own', async () => {
  expect(Object.keys(await import('vaultplan/mcp')).sort()).toEqual(['createMcpServer'])
})

it('exports exactly these names from vaultplan/queue', async () => {
  expect(Object.keys(await import('vaultplan/queue')).sort()).toEqual([
    'RunQueue',
    'enqueueRun',
    'listScheduledRuns',
    'readQueueStatus',
    'resumeRun',
    'scheduleRun',
    'startWorker',
    'unscheduleRun',
  ])
})
