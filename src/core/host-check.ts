import { createHash, timingSafeEqual } from 'node:crypto'

/*
 * The DNS-rebinding guard of every server vaultplan runs (the MCP server's
 * HTTP transport, the board): one implementation, in a module that loads no
 * optional package, so either server can use it without the other's.
 */

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

/** The `Host` values a request may carry: `host:port` forms, lower case. */
export function allowedHosts(host: string, port: number, extra: readonly string[]): Set<string> {
  const hosts = new Set([hostWithPort(host, port)])
  if (LOOPBACK.has(host.toLowerCase())) for (const name of ['localhost', '127.0.0.1', '[::1]']) hosts.add(`${name}:${port}`)
  for (const entry of extra) if (entry.trim() !== '') hosts.add(hostWithPort(entry, port))
  return hosts
}

/** A host as a `Host` header names it, lower case: `name:port`, `[v6]:port`; `entry` keeps a port of its own (`name:8080`). */
export function hostWithPort(entry: string, port: number): string {
  const name = entry.trim().toLowerCase()
  if (/:\d+$/.test(name) && (name.startsWith('[') || name.split(':').length === 2)) return name
  return `${name.includes(':') && !name.startsWith('[') ? `[${name}]` : name}:${port}`
}

/** Whether an address to listen on is every address of the machine (`0.0.0.0`, `::`): a browser reaches it by another name. */
export function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]'
}

/**
 * Why a request is refused for where it says it goes or comes from, if it
 * is: a `Host` that is not one of `allowed`, or an `Origin` that is present
 * and not one of them (a page of another site, or a DNS name rebound to
 * this address), with the header that failed. `undefined` when both are fine.
 */
export function foreignHostOrOrigin(
  headers: { host?: string | undefined; origin?: string | undefined },
  allowed: ReadonlySet<string>,
): { header: 'Host' | 'Origin'; message: string } | undefined {
  const host = headers.host?.toLowerCase()
  if (host === undefined || !allowed.has(host))
    return { header: 'Host', message: `Host \`${host ?? ''}\` is not this server's address (DNS rebinding protection)` }
  const origin = headers.origin
  if (origin !== undefined && !allowed.has(originHost(origin)))
    return { header: 'Origin', message: `Origin \`${origin}\` is not this server's address (DNS rebinding protection)` }
  return undefined
}

/** The `host:port` of an `Origin` (the scheme's default port written out), or `''` for `null` and garbage. */
export function originHost(origin: string): string {
  try {
    const url = new URL(origin)
    const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '')
    return `${url.hostname}:${port}`.toLowerCase()
  } catch {
    return ''
  }
}

/** Compares a secret in constant time, so the answer's timing tells nothing about it; `false` when none was given. */
export function sameSecret(given: string | undefined, secret: string): boolean {
  if (given === undefined) return false
  const digest = (text: string) => createHash('sha256').update(text).digest()
  return timingSafeEqual(digest(given), digest(secret))
}
