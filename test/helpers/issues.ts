import { loadPlan, PlanValidationError, type PlanIssue } from 'vaultplan'

/** Every issue of a vault: the thrown list when it has errors, else the returned warnings. */
export async function issuesOf(dir: string, tools?: string[]): Promise<PlanIssue[]> {
  const graph = await loadPlan(dir)
  try {
    return graph.validate(tools ? { tools } : undefined)
  } catch (error) {
    if (!(error instanceof PlanValidationError)) throw error
    return error.issues
  }
}

/** The errors a validation throws; none when it does not throw. */
export function errorsOf(run: () => unknown): PlanIssue[] {
  try {
    run()
  } catch (error) {
    if (error instanceof PlanValidationError) return error.issues.filter((issue) => issue.severity === 'error')
    throw error
  }
  return []
}
