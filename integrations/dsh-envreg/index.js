// dsh-envreg: envreg's ten env_* tools as native DeepSeek Harness tools (seed contract
// §1). A thin shell by design: names, descriptions, parameter and output schemas (already
// in dsh's value-schema DSL), the text the model reads, error codes and approval
// sentences all come from `envreg dsh-bridge` (crates/envreg/src/dsh_bridge.rs). This
// file registers what the bridge's `hello` lists, forwards calls (the lines are carried
// by dsh-bridge-client, shared with dsh-facet), throws the host's own HarnessError, and
// forwards approval questions to ctx.approval.
// Config: registry (required, the registry folder), binary (optional, default `envreg`
// on PATH), timeoutMs (optional, dsh's cooperative per-call budget). See docs/dsh.md.
import { createRequire } from 'node:module'
import { HarnessError } from '@deepseek-ai/dsh-llm'
import { defineTool } from '@deepseek-ai/dsh-tools'
import { BridgeClient, withTimeout } from 'dsh-bridge-client'

const { version } = createRequire(import.meta.url)('./package.json')
const PROTOCOL = 1
const TEXT_CACHE = 256
/** A program that reads `hello` and never answers is not envreg: fail the apply. */
const HELLO_TIMEOUT_MS = 10_000

export const name = 'dsh-envreg'
export const inject = ['tools']

/** An expected envreg failure: dsh records {name, code}; the message starts with the code. */
class EnvManagerError extends HarnessError {
  constructor(error) {
    super(error.text, error.code)
    if (error.details !== undefined) this.details = error.details
  }
}

function configError(message) {
  return new Error(`dsh-envreg: ${message} (see docs/dsh.md)`)
}

// async: Cordis treats a plain function with a prototype as a constructor.
export async function apply(ctx, config) {
  const registry = config?.registry
  if (typeof registry !== 'string' || registry.length === 0) {
    throw configError('config key `registry` is missing: set it to the envreg registry folder')
  }
  const binary = config.binary ?? 'envreg'
  if (typeof binary !== 'string' || binary.length === 0) {
    throw configError('config key `binary` must be the path of the envreg binary')
  }
  const timeoutMs = config.timeoutMs
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw configError('config key `timeoutMs` must be a positive number of milliseconds')
  }
  const fix = `install envreg ${version} on PATH or set config key \`binary\``
  const bridge = await BridgeClient.open(binary, ['dsh-bridge', '--registry', registry], {
    label: 'envreg dsh-bridge',
  }).catch((error) => {
    throw configError(`cannot start envreg (${binary}): ${error.why}; ${fix}`)
  })
  ctx.effect(() => () => bridge.close('dsh-envreg was disposed'), 'dsh-envreg.bridge')

  let hello
  try {
    hello = await withTimeout(bridge.request({ method: 'hello', protocol: PROTOCOL }), HELLO_TIMEOUT_MS)
  } catch (error) {
    bridge.close('dsh-envreg could not start')
    throw configError(`${binary} did not answer hello: ${error.message}; ${fix}`)
  }
  if (hello.error !== undefined) {
    throw configError(`envreg refused registry ${JSON.stringify(registry)}: ${hello.error.text}; fix config key \`registry\``)
  }
  const info = hello.result
  if (info.version !== version || info.protocol !== PROTOCOL) {
    throw configError(
      `${binary} is envreg ${info.version} (protocol ${info.protocol}), this plugin is ${version} (protocol ${PROTOCOL}); ` +
        `install envreg ${version} or point config key \`binary\` at it`,
    )
  }

  // The model-facing text of each result, by value: render() receives the value only.
  const texts = new Map()
  const remember = (value, text) => {
    texts.set(JSON.stringify(value), text)
    if (texts.size > TEXT_CACHE) texts.delete(texts.keys().next().value)
  }

  for (const spec of info.tools) {
    ctx.tools.register(
      defineTool({
        name: spec.name,
        description: spec.description,
        parameters: spec.parameters,
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        output: {
          schema: spec.output,
          render: (_args, value) => [{ type: 'text', text: texts.get(JSON.stringify(value)) ?? JSON.stringify(value) }],
        },
        async execute(args, exec) {
          const reply = await bridge.request(
            { method: 'call', params: { tool: spec.name, arguments: args, session: exec.agent?.id ?? null } },
            (approval) => ask(ctx, exec, spec.name, approval),
          )
          // Settled only after envreg answered; a cancelled call is dsh's own abort.
          if (exec.signal.aborted) throw exec.signal.reason
          if (reply.error !== undefined) throw new EnvManagerError(reply.error)
          remember(reply.result.value, reply.result.text)
          return reply.result.value
        },
        // dsh prefixes failures with "Error: "; the model reads envreg's "CODE: message".
        finalizeContent(_exec, result) {
          if (result.isError && result.error?.info?.name === 'EnvManagerError') {
            return [{ type: 'text', text: result.error.message }]
          }
          return undefined
        },
      }),
    )
  }
}

/** Forwards one approval question; no channel or no agent is 'unavailable' (denied). */
async function ask(ctx, exec, toolName, approval) {
  const service = ctx.get('approval')
  if (service === undefined || exec.agent === undefined) return 'unavailable'
  try {
    return await service.request({
      agent: exec.agent,
      toolName,
      callId: exec.callId,
      reason: approval.reason,
      displayReason: approval.displayReason,
      signal: exec.signal,
    })
  } catch {
    return 'unavailable'
  }
}
