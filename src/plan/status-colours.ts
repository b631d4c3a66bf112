import type { NodeStatus } from '../core/types.js'

/**
 * Colours of the statuses, the one table every picture and its legend
 * read: the word a legend says, a fill and a border readable on light and
 * dark themes, and the Obsidian canvas preset of the same colour (pending
 * is left uncoloured there).
 */
export const STATUS_COLOURS = {
  pending: { word: 'grey', fill: '#f4f4f5', stroke: '#71717a', bold: false, canvas: undefined },
  active: { word: 'yellow', fill: '#fef3c7', stroke: '#d97706', bold: true, canvas: '3' },
  done: { word: 'green', fill: '#dcfce7', stroke: '#16a34a', bold: false, canvas: '4' },
  waiting: { word: 'cyan', fill: '#cffafe', stroke: '#0891b2', bold: true, canvas: '5' },
} as const satisfies Record<NodeStatus, { word: string; fill: string; stroke: string; bold: boolean; canvas: string | undefined }>

/** The statuses' colours in words, for a legend: `grey pending, yellow active, green done, cyan waiting`. */
export function statusColourWords(): string {
  return Object.entries(STATUS_COLOURS)
    .map(([status, colour]) => `${colour.word} ${status}`)
    .join(', ')
}
