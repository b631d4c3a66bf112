import { note } from './vault.js'

/** A plan whose middle note runs the folder beside it, `research/`, as a plan of its own. */
export function nestedPlan(): Record<string, string> {
  return {
    'outline.md': note({ front: { type: 'start' }, title: 'Outline', body: 'Outline the report.', next: ['[[research]]'] }),
    'research.md': note({ front: { plan: 'research' }, title: 'Research', body: 'Find the figures.', next: ['[[write]]'] }),
    'write.md': note({ title: 'Write', body: 'Write the report.' }),
    'research/find.md': note({ front: { type: 'start' }, title: 'Find sources', body: 'Find three sources.', next: ['[[summarise]]'] }),
    'research/summarise.md': note({ title: 'Summarise', body: 'Summarise the sources.' }),
  }
}
