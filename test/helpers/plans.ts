import type { Step } from 'vaultplan'
import { note } from './vault.js'

/** draft -> review -> (approved -> send | needs revision -> draft). */
export function draftReview(options: { reviewVisits?: number; draftVisits?: number } = {}): Record<string, string> {
  const reviewFront: Record<string, string | number> = {}
  if (options.reviewVisits !== undefined) reviewFront.max_visits = options.reviewVisits
  const draftFront: Record<string, string | number> = { type: 'start' }
  if (options.draftVisits !== undefined) draftFront.max_visits = options.draftVisits
  return {
    'draft.md': note({ front: draftFront, title: 'Draft', body: 'Write the draft.', next: ['[[review]]'] }),
    'review.md': note({ front: reviewFront, title: 'Review', body: 'Review the draft.', next: ['approved -> [[send]]', 'needs revision -> [[draft]]'] }),
    'send.md': note({ title: 'Send', body: 'Send the approved draft.' }),
  }
}

/** a -> b -> c, unconditional. */
export function linear(): Record<string, string> {
  return {
    'a.md': note({ front: { type: 'start' }, title: 'A', body: 'Do a.', next: ['[[b]]'] }),
    'b.md': note({ title: 'B', body: 'Do b.', next: ['[[c]]'] }),
    'c.md': note({ title: 'C', body: 'Do c.' }),
  }
}

/** The draft/review plan whose review a person decides (`judge: human`, boxes to tick). */
export function humanReview(): Record<string, string> {
  return {
    ...draftReview(),
    'review.md': note({
      front: { judge: 'human' },
      title: 'Review',
      body: 'Review the draft.',
      next: ['[ ] approved -> [[send]]', '[ ] needs revision -> [[draft]]'],
    }),
  }
}

/** draft -> approve, which a person decides within `wait` (`approved -> send`, `timeout -> escalate` unless `next` says otherwise). */
export function deadlinePlan(wait: string, next = ['approved -> [[send]]', 'timeout -> [[escalate]]']): Record<string, string> {
  return {
    'draft.md': note({ front: { type: 'start' }, title: 'Draft', next: ['[[approve]]'] }),
    'approve.md': note({ front: { judge: 'human', wait }, title: 'Approve the draft', next }),
    'send.md': note({ title: 'Send' }),
    'escalate.md': note({ title: 'Escalate' }),
  }
}

/** collect -> digest: the template a schedule copies at each tick. */
export const digestTemplate: Readonly<Record<string, string>> = {
  'collect.md': note({ front: { type: 'start' }, title: 'Collect the news', next: ['[[digest]]'] }),
  'digest.md': note({ title: 'Write the digest' }),
}

/** s1 -> s2 -> ... -> s5, unconditional. */
export function chain(): Record<string, string> {
  const files: Record<string, string> = {}
  for (let i = 1; i <= 5; i++) {
    files[`s${i}.md`] = note({
      ...(i === 1 ? { front: { type: 'start' } } : {}),
      title: `S${i}`,
      body: `Do step ${i}.`,
      ...(i < 5 ? { next: [`[[s${i + 1}]]`] } : {}),
    })
  }
  return files
}

/** The step, which must be one to work (a test's way to say so and narrow its type). */
export function work(step: Step): Extract<Step, { kind: 'work' }> {
  if (step.kind !== 'work') throw new Error(`expected a step to work, got ${JSON.stringify(step)}`)
  return step
}
