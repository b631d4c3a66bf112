/*
 * The one walk into a plan's subplans. A loaded `PlanGraph` and the records
 * of a run read off disk are both trees of vaults keyed by subplan folder;
 * whatever visits every vault of either goes through `subplanTree`, so the
 * order and the folder paths are decided here and nowhere else.
 */

/** A tree of vaults: each holds its subplans by folder, relative to itself. */
export interface SubplanNesting<T> {
  readonly subplans?: ReadonlyMap<string, T> | undefined
}

/** One vault met by `subplanTree`. */
export interface TreeVault<T> {
  /** The vault's folder from the top vault (`research/find`), `''` for the top vault. */
  folder: string
  /** The vault's folder relative to the vault that holds it, `''` for the top vault. */
  inner: string
  vault: T
  /** The vault that holds this one as a subplan; absent for the top vault. */
  parent?: T
}

/**
 * Every vault of a tree of subplans (a loaded `PlanGraph`, or a run's
 * `VaultRecords`): the top vault first, then each subplan in the order it
 * was read, each before its own subplans.
 */
export function* subplanTree<T extends SubplanNesting<T>>(top: T): Generator<TreeVault<T>> {
  const stack: TreeVault<T>[] = [{ folder: '', inner: '', vault: top }]
  for (let next = stack.pop(); next; next = stack.pop()) {
    yield next
    const { folder, vault } = next
    // Pushed in reverse so they come off the stack in the order they were read.
    const children = [...(vault.subplans ?? [])].reverse()
    for (const [inner, subplan] of children) stack.push({ folder: folder === '' ? inner : `${folder}/${inner}`, inner, vault: subplan, parent: vault })
  }
}
