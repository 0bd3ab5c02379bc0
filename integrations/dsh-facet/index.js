/**
 * dsh-facet: facet's scope guard as a DeepSeek Harness plugin.
 *
 * A thin shell over one long-lived `facet dsh-bridge` process (Rust). What the
 * model or the user reads — the rule text, the binding, the `facet` tool's
 * description and schemas, every verdict and sentence — comes from that process;
 * this file registers what it is given and forwards calls:
 *
 * - the rule text as a system-prompt section, registered once;
 * - the binding as a runtime-context entry, re-read from the bridge on every
 *   assembly (so a grant or a `facet mode` change shows on the next request);
 * - a `tools/pre-execute` listener: each call of a tool the bridge judges is sent
 *   to it; a question it puts goes to the user through `ctx.approval` with its
 *   sentence as the reason; a refusal becomes dsh's deny;
 * - the `facet` tool (status, add, remove, reset), whose body is the bridge's.
 *
 * Row: `{name: dsh-facet, config: {mode: ask|deny|off, binary: /path/to/facet}}`.
 * A missing or mismatched `facet` program, or a config the bridge rejects, throws
 * here — dsh then refuses to start, naming the fault.
 */
import { createRequire } from 'node:module'
import { HarnessError } from '@deepseek-ai/dsh-llm'
import { defineTool } from '@deepseek-ai/dsh-tools'
import { BridgeClient, BridgeError, withTimeout } from 'dsh-bridge-client'

const VERSION = createRequire(import.meta.url)('./package.json').version
const PROTOCOL = 1
/** A program that reads `hello` and never answers is not facet: fail the apply. */
const HELLO_TIMEOUT_MS = 10_000

export const name = 'dsh-facet'
export const inject = ['tools', 'systemPrompt']

/**
 * What dsh knows about the caller, as the bridge reads it: the agent's id, the
 * directory dsh recorded for its session, and the approval facts.
 */
function callerOf(ctx, agent) {
  const approval = ctx.get('approval')
  const override = agent !== undefined && approval !== undefined ? approval.overrideOf(agent.session) : undefined
  return {
    session: agent?.id ?? null,
    cwd: agent?.session?.header?.cwd ?? null,
    approval: {
      service: approval !== undefined,
      policy: override ?? approval?.config?.policy ?? null,
    },
  }
}

/** Put the bridge's question to the user; anything but an answer is `unavailable`. */
async function askUser(ctx, exec, question) {
  const approval = ctx.get('approval')
  if (approval === undefined || exec.agent === undefined) return 'unavailable'
  return approval.request({
    agent: exec.agent,
    toolName: exec.name,
    callId: exec.callId,
    reason: question.reason,
    signal: exec.signal,
  })
}

/** Why a call is refused when the bridge itself failed: fail closed, say what broke. */
function bridgeDown(error) {
  return `facet could not judge this call (${error.message}), so it is refused`
}

/**
 * @param {import('@deepseek-ai/cordis').Context} ctx
 * @param {{mode?: string, binary?: string}} config
 */
export async function apply(ctx, config = {}) {
  const binary = typeof config?.binary === 'string' && config.binary !== '' ? config.binary : 'facet'
  const bridge = await BridgeClient.open(binary, ['dsh-bridge'], { label: 'facet dsh-bridge' }).catch((error) => {
    throw new Error(
      `dsh-facet: cannot start the facet program \`${binary}\` (${error.why}); install facet on PATH or set the row's config key \`binary\` to its path`,
    )
  })
  ctx.effect(() => () => bridge.close('dsh-facet was disposed'), 'dsh-facet.bridge')

  const failStart = (what, error) => {
    throw new Error(`dsh-facet: ${what} (${binary}): ${error.message}`, { cause: error })
  }
  const hello = await withTimeout(bridge.call('hello', { protocol: PROTOCOL }), HELLO_TIMEOUT_MS).catch((error) =>
    failStart('the facet program did not answer hello', error),
  )
  if (hello?.version !== VERSION) {
    throw new Error(
      `dsh-facet ${VERSION} needs facet ${VERSION}, but ${binary} is facet ${hello?.version}; install facet ${VERSION} or point the row's config key \`binary\` at it`,
    )
  }
  const specs = await bridge.call('configure', { config: config ?? {} }).catch((error) => failStart('the row config was refused', error))

  ctx.systemPrompt.section({ name: specs.rule.name, order: specs.rule.order, text: specs.rule.text })
  // The entry holds the binding's place among the runtime contexts; its text is
  // filled per assembly below, because a provider here must answer synchronously.
  ctx.systemPrompt.context({ name: specs.context.name, order: specs.context.order, text: () => '' })
  ctx.on('system-prompt/assemble', async (assembly, context, next) => {
    const result = await next()
    const agent = context?.agent
    if (agent === undefined || !result.contexts?.some((entry) => entry.name === specs.context.name)) return result
    const text = await bridge
      .call('context', callerOf(ctx, agent))
      .then((answer) => answer.text)
      .catch((error) => `facet: ${bridgeDown(error)}; every call facet judges is refused.`)
    return {
      ...result,
      contexts: result.contexts.map((entry) => (entry.name === specs.context.name ? { ...entry, text } : entry)),
    }
  })

  const judged = new Set(specs.judged)
  ctx.on('tools/pre-execute', async (exec, next) => {
    if (!judged.has(exec.name)) return next()
    const params = { ...callerOf(ctx, exec.agent), tool: exec.name, callId: exec.callId ?? null, arguments: exec.arguments ?? null }
    const verdict = await bridge
      .call('judge', params, (question) => askUser(ctx, exec, question))
      .catch((error) => ({ verdict: 'deny', reason: bridgeDown(error) }))
    return verdict.verdict === 'allow' ? next() : { kind: 'deny', reason: verdict.reason }
  })

  const tool = specs.tool
  ctx.tools.register(
    defineTool({
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      output: {
        schema: tool.output.schema,
        render: (_args, value) => [{ type: 'text', text: value.summary }],
      },
      async execute(args, exec) {
        exec.signal.throwIfAborted()
        const params = { ...callerOf(ctx, exec.agent), callId: exec.callId ?? null, arguments: args }
        try {
          return await bridge.call('facet', params)
        } catch (error) {
          exec.signal.throwIfAborted()
          const code = error instanceof BridgeError ? error.code : 'BRIDGE_FAILED'
          throw new HarnessError(`${code}: ${error.message}`, code, { cause: error })
        }
      },
    }),
  )
}
