// A test-only dsh plugin that answers every approval question with the configured
// decision (as a person at a dsh UI would) and logs what it was asked, one JSON line
// per question, to config.log. Headless dsh has no answerer of its own.
// decision 'hang': never answers (a person who walked away); dsh's signal withdraws it.
import { appendFileSync } from 'node:fs'

export const name = 'test-approval-answerer'

export async function apply(ctx, config) {
  ctx.on('approval/request', async (req) => {
    appendFileSync(
      config.log,
      `${JSON.stringify({
        toolName: req.toolName,
        callId: req.callId,
        reason: req.reason,
        displayReason: req.displayReason,
        agent: typeof req.agent?.id === 'string',
      })}\n`,
    )
    if (config.decision === 'hang') return new Promise(() => {})
    return config.decision
  })
}
