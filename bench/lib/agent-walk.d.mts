/** The plan of the walk, as a plan document for plan_create. */
export declare const WALK_DOCUMENT: string

/** One tool call of the walk: the tool, its arguments and the result's `structuredContent`. */
export interface WalkCall {
  tool: string
  args: Record<string, unknown>
  result: any
}

/** Walks the 7-note plan through `call` (see agent-walk.mjs); resolves the calls made and the final step. */
export declare function walkSeven(
  call: (tool: string, args: Record<string, unknown>) => Promise<any>,
  vault?: string,
): Promise<{ calls: WalkCall[]; step: any }>
