import { expect, it } from 'vitest'

// The names users import. Adding one is a feature, removing or renaming one breaks users: either is a decision, made here.
it('exports exactly these names', async () => {
  expect(Object.keys(await import('vaultplan')).sort()).toEqual([
    'LLMError',
    'ModelConfigError',
    'PlanGraph',
    'PlanValidationError',
    'RUN_STATE_ERROR_CODES',
    'RunStateError',
    'StepError',
    'VaultPathError',
    'chooseEdge',
    'completeStep',
    'createLLM',
    'createWorker',
    'decide',
    'dryRun',
    'forkRun',
    'formatIssue',
    'invalidate',
    'loadPlan',
    'nextStep',
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
    'savePlan',
    'searchRuns',
    'toCanvas',
    'toDot',
    'toMermaid',
    'toSvg',
    'updateStatus',
  ])
})

// Codes callers branch on: adding one is a feature, renaming one breaks callers.
it('pins the error codes', async () => {
  const { RUN_STATE_ERROR_CODES } = await import('vaultplan')
  expect([...RUN_STATE_ERROR_CODES]).toEqual([
    'ambiguous-decision',
    'bad-choice',
    'declined',
    'ledger-too-new',
    'ledger-unreadable',
    'no-run',
    'no-start',
    'node-missing',
    'not-waiting',
    'note-busy',
    'proposal-unreadable',
    'query-mismatch',
    'run-vault-not-empty',
    'run-vault-other-plan',
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
  ])
})

it('exports exactly these names from vaultplan/ai-sdk', async () => {
  expect(Object.keys(await import('vaultplan/ai-sdk')).sort()).toEqual(['llmFromAISDK', 'toolsFromAISDK'])
})

it('exports exactly these names from vaultplan/queue', async () => {
  expect(Object.keys(await import('vaultplan/queue')).sort()).toEqual(['RunQueue', 'enqueueRun', 'readQueueStatus', 'resumeRun', 'startWorker'])
})
