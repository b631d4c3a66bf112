import type { RunEvent } from '../../core/types.js'

/*
 * Telling a run's listener what happens: observers cannot break the run.
 */

/**
 * Internal, for the resume tests (not exported by the package): called
 * after each event, uncaught, so a test can crash a run at a real point.
 */
export const crashSeam: { afterEvent?: ((event: RunEvent) => void) | undefined } = {}

/** Tells a listener of an event; observers cannot break the run: one that throws is reported and the run goes on. */
export function tell(listener: ((event: RunEvent) => void) | undefined, event: RunEvent): void {
  if (listener) {
    try {
      listener(event)
    } catch (error) {
      reportListenerError(error)
    }
  }
  crashSeam.afterEvent?.(event)
}

let reported = false

/** Observers cannot break a run: a throwing listener is reported once, as a process warning. */
export function reportListenerError(error: unknown): void {
  if (reported) return
  reported = true
  process.emitWarning(
    `An onEvent listener threw (the run goes on; further errors of listeners are not reported): ${error instanceof Error ? error.message : String(error)}`,
    { code: 'VAULTPLAN_LISTENER' },
  )
}
