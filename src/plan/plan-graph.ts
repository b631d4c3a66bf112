import { PlanValidationError } from '../core/errors.js'
import type { PlanIssue, PlanNode } from '../core/types.js'
import { checkPlan, findStart, validatePlan, type ValidateOptions } from './validate.js'

/**
 * A plan: nodes keyed by id, each with its outgoing edges. Build one in code,
 * with `loadPlan(dir)` from a vault, or with `parsePlanDocument(text)`.
 */
export class PlanGraph {
  readonly nodes: ReadonlyMap<string, PlanNode>
  /** Problems met while reading the vault that belong to no node (a file that is not a note, say), reported by `validate()`. */
  readonly issues: readonly PlanIssue[]
  /** The subplans of a loaded graph by folder (relative to its vault, `plan:` notes' folders), as read with it. */
  readonly subplans?: ReadonlyMap<string, PlanGraph>
  /** Set when an LLM-emitted plan could not be used and fell back to a path graph. */
  degraded?: string

  /**
   * @param options.issues - problems met while reading the vault that belong to no node.
   * @param options.subplans - the subplans read with the graph, by folder.
   * @throws `TypeError` when two nodes share an id.
   */
  constructor(nodes: Iterable<PlanNode>, options: { issues?: readonly PlanIssue[]; subplans?: ReadonlyMap<string, PlanGraph> } = {}) {
    this.issues = options.issues ?? []
    if (options.subplans) this.subplans = options.subplans
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
   * @throws `Error` when there is no such node.
   */
  node(id: string): PlanNode {
    const node = this.nodes.get(id)
    if (!node)
      throw new Error(
        `Unknown node \`${id}\`; the plan has ${[...this.nodes.keys()]
          .slice(0, 5)
          .map((n) => `\`${n}\``)
          .join(', ')}${this.nodes.size > 5 ? ', ...' : ''}`,
      )
    return node
  }

  /**
   * The entry node: the one marked `type: start`, or else the only node
   * without incoming edges.
   *
   * @throws {@link PlanValidationError} when there is none, or more than one.
   */
  startNode(): PlanNode {
    const { start, issues } = findStart(this)
    if (!start) throw new PlanValidationError(issues)
    return start
  }

  /**
   * Checks the plan (dangling edges, cycles without an exit, the start, a
   * reachable terminal, frontmatter, ambiguous edges and links) and reports
   * every problem at once.
   *
   * @param options.tools - names of the tools the caller supplies; a node's `tools:` entry outside them is a warning.
   * @returns the warnings.
   * @throws {@link PlanValidationError} carrying every issue, when there is at least one error.
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
