import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/**
 * A package loaded on first use, with `require()`, so that a command which
 * never needs it does not pay for its modules at start-up (`yaml` is 72
 * files, `remark` and `micromark` about 80). Synchronous, so the parsers
 * that call it stay synchronous. An ES-only package needs a Node that can
 * `require()` ES modules (20.19 and up); see {@link canRequireEsm}.
 *
 * @returns a function giving the package's exports, loaded once
 */
export function lazyModule<T>(specifier: string): () => T {
  let loaded: T | undefined
  return () => (loaded ??= require(specifier) as T)
}

/** Whether this Node loads an ES module with `require()` (unflagged from 20.19 and 22.12). */
export const canRequireEsm = (process.features as { require_module?: boolean }).require_module === true
