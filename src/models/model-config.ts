import { VaultplanError } from '../core/errors.js'
/** Where one role's calls go, as read from the environment by {@link resolveModelConfig}. */
export interface ModelConfig {
  role: string
  model: string
  /** The OpenAI-compatible endpoint, such as `http://127.0.0.1:11434/v1`. */
  baseURL: string
  /** Absent only for an endpoint on this machine, which needs none. */
  apiKey?: string
  /** Absent unless a variable sets it: then requests carry none, which reasoning models that refuse one need. */
  temperature?: number
}

/** Thrown when the environment does not say which model and endpoint serve a role. */
export class ModelConfigError extends VaultplanError<'model-not-configured'> {
  override readonly name = 'ModelConfigError'
  readonly role: string

  constructor(role: string, message: string) {
    super('model-not-configured', message)
    this.role = role
  }
}

const OPENAI_BASE_URL = 'https://api.openai.com/v1'

/**
 * Reads the model, endpoint, key and temperature of `role` from `env`.
 * `LLM_<ROLE>_MODEL`, `LLM_<ROLE>_BASE_URL`, `LLM_<ROLE>_API_KEY` and
 * `LLM_<ROLE>_TEMPERATURE` (the role upper-cased, other characters as `_`)
 * fall back to `LLM_MODEL`, `LLM_BASE_URL` then `OPENAI_BASE_URL`,
 * `LLM_API_KEY` then `OPENAI_API_KEY`, and `LLM_TEMPERATURE` (unset: the
 * request carries no temperature). An endpoint on this machine (127.x,
 * localhost, [::1]) needs no key. The endpoint is never assumed: a model
 * with no base URL is refused, even with `OPENAI_API_KEY` set, so notes are
 * never sent to the OpenAI API by a forgotten `LLM_BASE_URL`. A base URL
 * holding a user name or password is refused too (fetch cannot send them,
 * and they would show in errors). Empty variables count as unset.
 *
 * @throws {@link ModelConfigError} when the model, the endpoint or a needed key is
 *   missing, or a base URL or temperature does not parse; the message names the
 *   variables to set and never shows a key or password.
 * @throws `TypeError` when `role` is empty.
 */
export function resolveModelConfig(role: string, env: NodeJS.ProcessEnv = process.env): ModelConfig {
  if (typeof role !== 'string' || role.trim() === '') {
    throw new TypeError(`Expected \`role\` to be a non-empty string, got \`${String(role)}\``)
  }
  const prefix = `LLM_${role.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_`
  const read = (...names: string[]) => names.map((name) => ({ name, value: env[name]?.trim() ?? '' })).find(({ value }) => value !== '')
  const model = read(`${prefix}MODEL`, 'LLM_MODEL')
  const key = read(`${prefix}API_KEY`, 'LLM_API_KEY', 'OPENAI_API_KEY')
  const base = read(`${prefix}BASE_URL`, 'LLM_BASE_URL', 'OPENAI_BASE_URL')
  const temperatureVar = read(`${prefix}TEMPERATURE`, 'LLM_TEMPERATURE')

  const fail = (message: string) => new ModelConfigError(role, message)
  const roleAlone = (name: string) => `${prefix}${name} for this role alone`

  if (!model && !base) {
    throw fail(
      `No model configured for role \`${role}\`: set LLM_MODEL and LLM_BASE_URL (or ${prefix}MODEL and ${roleAlone('BASE_URL')}), and LLM_API_KEY unless the endpoint is on this machine.`,
    )
  }
  if (!model) throw fail(`No model configured for role \`${role}\`: set LLM_MODEL (or ${roleAlone('MODEL')}).`)
  if (!base) {
    // An OPENAI_API_KEY left in a shell must not send notes meant for a local model to OpenAI.
    const openAIKey =
      key?.name === 'OPENAI_API_KEY'
        ? ` OPENAI_API_KEY is set, but a key does not say where the notes go: to use the OpenAI API, set OPENAI_BASE_URL=${OPENAI_BASE_URL}.`
        : ''
    throw fail(
      `No endpoint configured for role \`${role}\` (model \`${model.value}\`): set LLM_BASE_URL (or ` +
        `${roleAlone('BASE_URL')}), such as http://127.0.0.1:11434/v1 for Ollama or ${OPENAI_BASE_URL}.${openAIKey}`,
    )
  }
  const url = URL.canParse(base.value) ? new URL(base.value) : undefined
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    // A malformed value may be a pasted key: show only its length.
    throw fail(`${base.name} must be an http(s) URL such as http://127.0.0.1:11434/v1, got a value of ${base.value.length} characters.`)
  }
  if (url.username !== '' || url.password !== '') {
    throw fail(
      `${base.name} holds a user name or password (${describeEndpoint(base.value)} with credentials): remove them from the URL and put the key in LLM_API_KEY (or ${roleAlone('API_KEY')}).`,
    )
  }
  if (!key && !isLoopback(url)) {
    throw fail(
      `No API key for role \`${role}\` at ${describeEndpoint(base.value)}: set LLM_API_KEY (or ${roleAlone('API_KEY')}, ` +
        `or OPENAI_API_KEY). Only an endpoint on this machine (127.0.0.1, localhost, [::1]) needs none.`,
    )
  }
  const temperature = temperatureVar ? Number(temperatureVar.value) : undefined
  if (temperatureVar && !(temperature! >= 0 && Number.isFinite(temperature))) {
    throw fail(`${temperatureVar.name} must be a number from 0 up, got \`${temperatureVar.value}\`.`)
  }
  return {
    role,
    model: model.value,
    baseURL: base.value,
    ...(key && { apiKey: key.value }),
    ...(temperature !== undefined && { temperature }),
  }
}

function isLoopback(url: URL): boolean {
  const host = url.hostname
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host)
}

/** The endpoint as shown in messages: no user, password, query or fragment, which may carry secrets. */
export function describeEndpoint(baseURL: string): string {
  try {
    const url = new URL(baseURL)
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, '')}`
  } catch {
    return '<invalid URL>'
  }
}
