// The check the crash harness's `draft` note names (`check: done`): it logs
// its start and end to the trial's side log, with the visit it checks (the
// scripted worker's last visit, in the environment it inherits) and the child
// run that started it, and sleeps between them so kills land while it runs.
// It always passes, and prints nothing: the output note carries only its verdict.
import { appendFileSync } from 'node:fs'

const { CRASH_SIDE_LOG: sideLog, CRASH_ATTEMPT: attempt, CRASH_VISIT: visit } = process.env
const log = (t) => appendFileSync(sideLog, `${JSON.stringify({ a: Number(attempt), t, visit, pid: process.pid })}\n`)

log('check-start')
await new Promise((resolve) => setTimeout(resolve, 40))
log('check-end')
