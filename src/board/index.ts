/**
 * The board: a live web page for the people around a plan, to watch runs,
 * decide waiting notes and proposals, fork and search, in any browser.
 *
 * @module vaultplan/board
 */
export { startBoard, type Board, type BoardOptions } from './start-board.js'
