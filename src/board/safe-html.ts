import type { Html } from 'mdast'
import rehypeSanitize from 'rehype-sanitize'
import rehypeStringify from 'rehype-stringify'
import remarkParse from 'remark-parse'
import remarkRehype, { type Options as RehypeOptions } from 'remark-rehype'
import { unified } from 'unified'

/** Raw HTML in the markdown becomes its own text: shown as written, never parsed as markup. */
const handlers: RehypeOptions['handlers'] = {
  html: (_state, node: Html) => ({ type: 'text', value: node.value }),
}

// Built once: the board renders every output of a run on each page.
const processor = unified().use(remarkParse).use(remarkRehype, { handlers }).use(rehypeSanitize).use(rehypeStringify).freeze()

/**
 * Markdown a model, a note or an output wrote, as HTML that is safe to put
 * in a page: raw HTML in it (`<script>`, `<img onerror>`) shows as literal
 * text, and what the markdown itself makes is cleaned by GitHub's rules
 * (no `javascript:` links, no event attributes, no `style`).
 */
export function safeHtml(markdown: string): string {
  return processor.processSync(markdown).toString()
}

/** Escapes text for HTML content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)
}
