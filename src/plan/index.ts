/**
 * Pictures of a plan, with a run's state: mermaid and Graphviz DOT text,
 * an SVG drawn in-process (Graphviz compiled to WebAssembly), and an
 * Obsidian canvas (JSON Canvas 1.0).
 *
 * @module vaultplan/pictures
 */
export { toDot, toMermaid, type PictureState } from './plan-picture.js'
export { toCanvas, type CanvasColor, type CanvasDocument, type CanvasEdge, type CanvasNode, type CanvasOptions } from './plan-canvas.js'
export { toSvg, type SvgOptions } from './plan-svg.js'
