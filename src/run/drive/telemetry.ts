import type { RunEvent } from '../../core/types.js'

/** The parts of `@opentelemetry/api` the run uses, so nothing of it is needed at build or run time. */
interface Span {
  setAttribute(key: string, value: string | number | boolean): unknown
  setStatus(status: { code: number; message?: string }): unknown
  end(): void
}
interface Api {
  trace: {
    getTracer(name: string, version?: string): { startSpan(name: string, options?: { attributes?: Record<string, string | number> }, context?: unknown): Span }
    setSpan(context: unknown, span: Span): unknown
  }
  context: { active(): unknown }
}

let api: Promise<Api | undefined> | undefined

/** `@opentelemetry/api` when the application has it (an optional peer dependency), else `undefined`: telemetry is then a no-op. */
function loadApi(): Promise<Api | undefined> {
  api ??= import('@opentelemetry/api' as string).then(
    (module: Api & { default?: Api }) => (module.trace ? module : module.default),
    () => undefined,
  )
  return api
}

/**
 * The spans of one run, fed by its events: a `vaultplan.run` span, a
 * `vaultplan.hop` span per hop with `vaultplan.work` and `vaultplan.judge`
 * children, attributes for the node, visit, step, who decided, the model
 * and the tokens. With no OpenTelemetry API installed, or no SDK registered,
 * every span is a no-op.
 */
export async function runTelemetry(vault: string): Promise<{ onEvent: (event: RunEvent) => void; end: (error?: unknown) => void }> {
  const otel = await loadApi()
  if (!otel) return { onEvent: () => undefined, end: () => undefined }
  const tracer = otel.trace.getTracer('vaultplan')
  const run = tracer.startSpan('vaultplan.run', { attributes: { 'vaultplan.vault': vault } })
  const runContext = otel.trace.setSpan(otel.context.active(), run)
  let hop: Span | undefined
  let part: Span | undefined
  const startHop = (node: string, visit: number, step: number) => {
    hop = tracer.startSpan('vaultplan.hop', { attributes: { 'vaultplan.node': node, 'vaultplan.visit': visit, 'vaultplan.step': step } }, runContext)
  }
  const startPart = (name: 'work' | 'judge') => {
    part?.end()
    part = hop ? tracer.startSpan(`vaultplan.${name}`, {}, otel.trace.setSpan(runContext, hop)) : undefined
  }
  const endHop = () => {
    part?.end()
    part = undefined
    hop?.end()
    hop = undefined
  }
  return {
    onEvent(event) {
      switch (event.type) {
        case 'start':
          run.setAttribute('vaultplan.run_id', event.runId)
          run.setAttribute('vaultplan.resumed', event.resumed)
          break
        case 'enter':
          endHop()
          startHop(event.node, event.visit, event.step)
          startPart('work')
          break
        case 'work':
          startPart('judge')
          break
        case 'transition':
          if (!hop) startHop(event.node, event.visit, event.step)
          hop!.setAttribute('vaultplan.decided_by', event.decidedBy)
          if (event.edge) hop!.setAttribute('vaultplan.next', event.edge.target)
          if (event.model) hop!.setAttribute('gen_ai.request.model', event.model)
          if (event.tokens) {
            hop!.setAttribute('gen_ai.usage.input_tokens', event.tokens.input)
            hop!.setAttribute('gen_ai.usage.output_tokens', event.tokens.output)
          }
          endHop()
          break
        case 'waiting':
        case 'stop':
        case 'end':
          endHop()
          run.setAttribute('vaultplan.outcome', event.type === 'end' ? 'completed' : event.type === 'stop' ? 'stopped' : 'waiting')
          break
      }
    },
    end(error) {
      endHop()
      // 2 is SpanStatusCode.ERROR.
      if (error !== undefined) run.setStatus({ code: 2, message: error instanceof Error ? error.message : String(error) })
      run.end()
    },
  }
}
