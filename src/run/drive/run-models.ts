import { ModelConfigError, resolveModelConfig } from '../../models/llm-client.js'
import { conditionsOf } from '../../models/transitions.js'
import type { CallLLM, ModelUsage, PlanNode, Predicate } from '../../core/types.js'

/*
 * The models of a run: their calls counted for the hop's record, and a
 * judge's model checked before anything is written.
 */

/** A model whose calls are counted (`count` told each call's usage) before the caller's own `onUsage`; `llm` is asked for at the first call. */
export function countedModel(llm: () => CallLLM, count: (usage: ModelUsage) => void): CallLLM {
  return (prompt, options) =>
    llm()(prompt, {
      ...options,
      onUsage: (usage) => {
        count(usage)
        options.onUsage?.(usage)
      },
    })
}

/**
 * Fails before anything is written when the judge will need a model (conditions remain) and none is configured.
 *
 * @throws {@link ModelConfigError} naming the variables to set, and the choices a caller could pass instead
 */
export function checkJudgeModel(node: PlanNode, predicates: Record<string, Predicate> | undefined): void {
  const conditions = conditionsOf(node, predicates)
  if (!conditions.some((label) => label !== 'next')) return
  try {
    resolveModelConfig(node.role ?? 'transition')
  } catch (error) {
    if (!(error instanceof ModelConfigError)) throw error
    throw new ModelConfigError(
      error.role,
      `${error.message} Or pass a \`choice\`: one of ${conditions.map((each) => `\`${each}\``).join(', ')}. Nothing was written.`,
    )
  }
}
