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

/** start -> research (two branches at once: web/ search -> read, papers/ find) -> report: a plan two agents or workers share. */
export function branchedPlan(): Record<string, string> {
  return {
    'start.md': note({ front: { type: 'start' }, title: 'Start', body: 'Frame the survey.', next: ['[[research]]'] }),
    'research.md': note({ front: { plan: '[web, papers]' }, title: 'Research', body: 'Research both ways.', next: ['[[report]]'] }),
    'report.md': note({ title: 'Report', body: 'Write it up.' }),
    'web/search.md': note({ front: { type: 'start' }, title: 'Search', body: 'Search the web.', next: ['[[read]]'] }),
    'web/read.md': note({ title: 'Read', body: 'Read the hits.' }),
    'papers/find.md': note({ front: { type: 'start' }, title: 'Find', body: 'Find papers.' }),
  }
}
