import { z } from 'zod'

/** The `vault` argument every tool but plan_list and plan_search takes. */
export const vaultArg = z.string().describe('vault folder (plan_list)')

/**
 * The hints of a tool that writes in its vault: nothing destroyed, nothing
 * outside the root. `readOnlyHint: false` is MCP's default, so it is not
 * sent: tools/list is paid for on every turn.
 */
export const WRITES = { destructiveHint: false, openWorldHint: false } as const

/**
 * The arguments of `tool` as a strict object: an argument the tool does not
 * know is refused, naming it and the ones the tool takes, never silently
 * dropped (a misspelt `maxStep` would otherwise run with the default).
 * Its JSON Schema leaves out `$schema` and `additionalProperties`: tools/list
 * is paid for on every turn, and the refusal names the arguments anyway.
 */
export function toolArgs<Shape extends z.core.$ZodLooseShape>(tool: string, shape: Shape) {
  const known = Object.keys(shape)
  return z
    .strictObject(shape, {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `${tool} takes no argument ${issue.keys.map((key) => `\`${key}\``).join(', ')}; it takes ${known.length === 0 ? 'none' : known.map((key) => `\`${key}\``).join(', ')}`
          : undefined,
    })
    .meta({ additionalProperties: undefined, $schema: undefined })
}
