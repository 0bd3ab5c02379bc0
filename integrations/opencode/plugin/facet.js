/**
 * facet in OpenCode: a thin plugin shim over `facet hook --dialect opencode`.
 *
 * On `tool.execute.before` it hands the hook's own arguments — `input` ({tool,
 * sessionID, callID}), `output` ({args}) and the plugin's `directory` and
 * `worktree` — to `facet hook --dialect opencode` as one JSON object on stdin, and
 * throws the sentence facet answers with, which OpenCode turns into the tool's
 * error result for the model. Every decision and every sentence comes from the
 * Rust binary; this file's only own sentence is the fail-closed one: when facet
 * is missing or fails, the call is refused. On `experimental.chat.system.transform`
 * (before each model request) it adds what facet answers — the rule and the
 * session's binding — to the system prompt.
 *
 * Install (docs/hosts.md, OpenCode): copy this folder's contents — `plugin/facet.js`
 * and `opencode.json` (facet decides on paths outside the folder OpenCode runs in,
 * and `facet serve` is the MCP server `facet`) — into `~/.config/opencode/` for every
 * project, or a project's `.opencode/`. `FACET_BIN` names the facet program when it
 * is not `facet` on PATH.
 */
import { spawn } from 'node:child_process'

const FACET = process.env.FACET_BIN || 'facet'
/**
 * How OpenCode names the facet MCP tool: `<server>_<tool>`, with the server
 * registered as `facet` in opencode.json (`"mcp": {"facet": …}`).
 */
const FACET_TOOL = 'facet_facet'
/** A hook run is one parse and one state file; a facet that hangs is a failure. */
const TIMEOUT_MS = 10_000

/** Run `facet hook --dialect opencode` with `event` on stdin: {code, stdout, stderr}. */
function runFacet(event) {
  return new Promise((resolve) => {
    let child
    try {
      child = spawn(FACET, ['hook', '--dialect', 'opencode', '--facet-tool', FACET_TOOL], { stdio: ['pipe', 'pipe', 'pipe'] })
    } catch (error) {
      resolve({ code: null, stdout: '', stderr: String(error?.message ?? error) })
      return
    }
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS)
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', (error) => {
      clearTimeout(timer)
      resolve({ code: null, stdout, stderr: stderr || String(error?.message ?? error) })
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.on('error', () => {})
    child.stdin.end(JSON.stringify(event))
  })
}

/** Fail closed: a call facet could not judge is refused, saying what broke. */
function refusedUnjudged(why) {
  return new Error(`facet could not judge this call (${why}), so it is refused; check that \`facet\` is installed and runs (\`facet --version\`)`)
}

export const FacetPlugin = async ({ directory, worktree }) => ({
  // Before each model request of a session: the rule and the binding, as facet
  // words them, added to the system prompt. Nothing is refused here (the tool calls
  // are guarded below), so a facet that fails adds nothing.
  'experimental.chat.system.transform': async (input, output) => {
    if (typeof input?.sessionID !== 'string' || !Array.isArray(output?.system)) return
    const event = { hook: 'experimental.chat.system.transform', directory, worktree, input: { sessionID: input.sessionID } }
    const { code, stdout } = await runFacet(event)
    if (code !== 0 || stdout.trim() === '') return
    try {
      const answer = JSON.parse(stdout)
      if (typeof answer?.system === 'string') output.system.push(answer.system)
    } catch {}
  },
  'tool.execute.before': async (input, output) => {
    const event = { hook: 'tool.execute.before', directory, worktree, input, output }
    const { code, stdout, stderr } = await runFacet(event)
    if (code !== 0) throw refusedUnjudged(stderr.trim() || `exit ${code}`)
    if (stdout.trim() === '') return
    let answer
    try {
      answer = JSON.parse(stdout)
    } catch {
      throw refusedUnjudged('its answer is not JSON')
    }
    if (answer?.decision === 'deny' && typeof answer.reason === 'string') throw new Error(answer.reason)
    throw refusedUnjudged('its answer is not a refusal')
  },
})
