import { expect, it } from 'vitest'

// The names users import. Adding one is a feature, removing or renaming one breaks users: either is a decision, made here.
it('exports exactly these names', async () => {
  expect(Object.keys(await import('vaultplan')).sort()).toEqual([
    'LLMError',
    'ModelConfigError',
    'PlanGraph',
    'PlanValidationError',
    'RunStateError',
    'StepError',
    'chooseEdge',
    'createLLM',
    'createWorker',
    'formatIssue',
    'loadPlan',
    'parsePlanDocument',
    'pathGraphFromSteps',
    'planGraph',
    'readRunStatus',
    'registerPredicate',
    'resolveModelConfig',
    'runPlan',
    'savePlan',
    'toDot',
    'toMermaid',
    'updateStatus',
  ])
})

it('exports exactly these names from vaultplan/ai-sdk', async () => {
  expect(Object.keys(await import('vaultplan/ai-sdk')).sort()).toEqual(['llmFromAISDK', 'toolsFromAISDK'])
})

it('exports exactly these names from vaultplan/queue', async () => {
  expect(Object.keys(await import('vaultplan/queue')).sort()).toEqual(['RunQueue', 'enqueueRun', 'readQueueStatus', 'resumeRun', 'startWorker'])
})
