/**
 * Models and tools of the Vercel AI SDK as vaultplan's `callLLM` and tools
 * (needs the `ai` package).
 *
 * @module vaultplan/ai-sdk
 */
import { generateText, type LanguageModel, type ToolSet } from 'ai'
import { z, type ZodType } from 'zod'
import { followSignal } from '../core/abort.js'
import type { CallLLM, Tool } from '../core/types.js'

/** Options of `llmFromAISDK`. */
export interface AISDKOptions {
  /**
   * Retries of a failed call (the AI SDK's own backoff).
   *
   * @default 2
   */
  maxRetries?: number
  /**
   * Sampling temperature; unset, the request carries none (reasoning models refuse one).
   *
   * @default undefined
   */
  temperature?: number
}

/**
 * A `CallLLM` backed by Vercel AI SDK models (the `ai` package, an optional
 * peer dependency): pass one model for every role, or `{ default, review,
 * ... }` to route roles (`action`, `transition`, `planning`, or a note's
 * `role:`) to their own models.
 *
 * @throws `TypeError` when no model is given, or a role has no model and there is no `default`.
 */
export function llmFromAISDK(models: LanguageModel | Record<string, LanguageModel>, options: AISDKOptions = {}): CallLLM {
  const byRole: Record<string, LanguageModel> = isModel(models) ? { default: models } : { ...models }
  if (Object.keys(byRole).length === 0) throw new TypeError('Expected a model, or `{ default: model, <role>: model }`, got none')
  return async (prompt, { role, system, signal }) => {
    const model = byRole[role] ?? byRole.default
    if (model === undefined) throw new TypeError(`No model for role \`${role}\`; pass \`{ default: model }\` or \`{ ${role}: model }\``)
    // One listener on the run's signal per call, removed after it, whatever the SDK adds per retry.
    const call = followSignal(signal)
    try {
      const { text } = await generateText({
        model,
        prompt,
        maxRetries: options.maxRetries ?? 2,
        ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
        ...(system === undefined ? {} : { system }),
        ...(signal === undefined ? {} : { abortSignal: call.signal }),
      })
      return text
    } finally {
      call.dispose()
    }
  }
}

/**
 * vaultplan tools from an AI SDK tool set (`{ name: tool({ description,
 * inputSchema, execute }) }`), for the built-in worker. A zod input schema
 * is used as it is; another schema is checked with its own `validate`.
 *
 * @throws `TypeError` when a tool has no `execute`.
 */
export function toolsFromAISDK(tools: ToolSet): Tool[] {
  return Object.entries(tools).map(([name, tool]) => {
    const execute = tool.execute
    if (typeof execute !== 'function') throw new TypeError(`Expected tool \`${name}\` to have an \`execute\` function`)
    return {
      name,
      description: tool.description ?? name,
      schema: toZod(tool.inputSchema),
      execute: (args: unknown) => execute(args as never, { toolCallId: `vaultplan-${name}`, messages: [] }),
    }
  })
}

function isModel(value: unknown): value is LanguageModel {
  return typeof value === 'string' || (value !== null && typeof value === 'object' && 'doGenerate' in value)
}

function toZod(schema: unknown): ZodType {
  if (schema !== null && typeof schema === 'object' && 'safeParse' in schema) return schema as ZodType
  const validate = (schema as { validate?: (value: unknown) => { success: boolean; error?: Error } } | undefined)?.validate
  return z.unknown().superRefine((value, context) => {
    const checked = validate?.(value)
    if (checked && !checked.success) context.addIssue({ code: 'custom', message: checked.error?.message ?? 'invalid arguments' })
  })
}
