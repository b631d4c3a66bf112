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
    'invalidate',
    'loadPlan',
    'parsePlanDocument',
    'pathGraphFromSteps',
    'planGraph',
    'readLedger',
    'readRunStatus',
    'recordEntry',
    'registerPredicate',
    'resolveModelConfig',
    'revalidate',
    'runPlan',
    'savePlan',
    'searchRuns',
    'toDot',
    'toMermaid',
    'updateStatus',
  ])
})

it('exports exactly these names from vaultplan/ai-sdk', async () => {
  expect(Object.keys(await import('vaultplan/ai-sdk')).sort()).toEqual(['llmFromAISDK', 'toolsFromAISDK'])
})
