import { PlanValidationError } from './errors.js'
import type { Edge, PlanIssue, PlanNode } from './types.js'
import { checkPlan, findStart, validatePlan, type ValidateOptions } from './validate.js'

/** Where an edge was read from, for diagnostics; absent for graphs built in code. */
export interface EdgeOrigin {
  line: number
  column: number
  /** The link matched several notes (already reported), climbed out of the vault, or names a note of a subplan. */
  problem?: 'ambiguous' | 'outside' | 'subplan'
  /** The box of a task item: `true` ticked, `false` empty, absent when the item has none. */
  checked?: boolean
}

/** Positions of edges read from notes, kept off the edges so graphs compare equal however they were made. */
export const edgeOrigins = new WeakMap<Edge, EdgeOrigin>()
/** Problems found while reading the notes of a loaded graph, reported again by `validate()`. */
export const loadIssues = new WeakMap<PlanGraph, PlanIssue[]>()
/** The subplans of a loaded graph by folder (relative to its vault), as read with it: for pictures and status. */
export const subplanGraphs = new WeakMap<PlanGraph, ReadonlyMap<string, PlanGraph>>()

/**
 * A plan: nodes keyed by id, each with its outgoing edges. Build one in code,
 * with `loadPlan(dir)` from a vault, or with `parsePlanDocument(text)`.
 */
export class PlanGraph {
  readonly nodes: ReadonlyMap<string, PlanNode>
  /** Set when an LLM-emitted plan could not be used and fell back to a path graph. */
  degraded?: string

  /**
   * @throws {TypeError} when two nodes share an id.
   */
  constructor(nodes: Iterable<PlanNode>) {
    const map = new Map<string, PlanNode>()
    for (const node of nodes) {
      if (map.has(node.id)) throw new TypeError(`Expected unique node ids, got \`${node.id}\` twice`)
      map.set(node.id, node)
    }
    this.nodes = map
  }

  /**
   * The node with this id.
   *
   * @throws {Error} when there is no such node.
   */
  node(id: string): PlanNode {
    const node = this.nodes.get(id)
    if (!node) throw new Error(`Unknown node \`${id}\`; the plan has ${[...this.nodes.keys()].slice(0, 5).map((n) => `\`${n}\``).join(', ')}${this.nodes.size > 5 ? ', ...' : ''}`)
    return node
  }

  /**
   * The entry node: the one marked `type: start`, or else the only node
   * without incoming edges.
   *
   * @throws {PlanValidationError} when there is none, or more than one.
   */
  startNode(): PlanNode {
    const { start, issues } = findStart(this)
    if (!start) throw new PlanValidationError(issues)
    return start
  }

  /**
   * Checks the plan (SPEC section 3) and reports every problem at once.
   *
   * @param options.tools - names of the tools the caller supplies; a node's `tools:` entry outside them is a warning.
   * @returns the warnings.
   * @throws {PlanValidationError} carrying every issue, when there is at least one error.
   */
  validate(options?: ValidateOptions): PlanIssue[] {
    return validatePlan(this, options)
  }

  /**
   * Checks the plan like `validate()`, without throwing (zod's `safeParse`
   * habit): the errors and the warnings, and every issue in file order.
   */
  check(options?: ValidateOptions): { errors: PlanIssue[]; warnings: PlanIssue[]; issues: PlanIssue[] } {
    const issues = checkPlan(this, options)
    return { errors: issues.filter((found) => found.severity === 'error'), warnings: issues.filter((found) => found.severity === 'warning'), issues }
  }
}
