// Test fixture for crates/facet/tests/dsh_live.rs: a dsh approval answerer (an
// `approval/request` listener, as a UI or the ACP bridge composes one) that answers
// from a list and logs every question, so a test can see what facet put to the user.
// Config: {log: FILE, answers: ["allowed-once" | "rejected" | ...]} — one per question,
// in order; past the list, "rejected".
import { appendFileSync } from 'node:fs'

export const name = 'facet-test-answerer'

export function apply(ctx, config) {
  const answers = [...(config.answers ?? [])]
  ctx.on('approval/request', async (req) => {
    const answer = answers.shift() ?? 'rejected'
    const line = { session: req.agent.id, toolName: req.toolName, callId: req.callId, reason: req.reason, answer }
    appendFileSync(config.log, `${JSON.stringify(line)}\n`)
    return answer
  })
}
