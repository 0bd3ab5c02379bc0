/**
 * dsh-bridge-client: the JSON-lines client both DeepSeek Harness plugins
 * (dsh-envreg, dsh-facet) use to talk to their one long-lived Rust process.
 *
 * The wire both bridges speak: one JSON object per line, both ways. A request is
 * `{id, method, ...}`; its reply is `{id, result}` or `{id, error}`; before the
 * reply the child may put a question `{id, approval}`, answered on the same id
 * with `{id, method: "approval_answer", params: {decision}}` while the request
 * stays pending. What the fields mean is each bridge's protocol
 * (crates/envreg/src/dsh_bridge.rs, crates/facet/src/dsh_bridge/mod.rs); this
 * file only carries lines and decides nothing.
 *
 * Decisions: one package both plugins name as a peer dependency, installed once per
 * dsh profile by scripts/install-dsh-plugins.sh (not a relative `file:` dependency:
 * npm resolves that against the installed plugin's folder, where nothing is; not a
 * file copied into each plugin: two copies again). Fail closed: a child that cannot
 * start, exits, or is closed rejects every pending and later request with one
 * sentence naming the program (and its stderr tail); a question whose handler
 * throws is answered `unavailable`.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const STDERR_TAIL = 4096

/** The program could not be started: `binary` as given, `why` ("not found", or the OS's message). */
export class SpawnError extends Error {
  constructor(binary, error) {
    const why = error?.code === 'ENOENT' ? 'not found' : String(error?.message ?? error)
    super(`cannot start ${binary}: ${why}`, { cause: error })
    this.binary = binary
    this.why = why
  }
}

/** The child answered a request with `{error}`; `error` is that object as sent. */
export class BridgeError extends Error {
  constructor(error) {
    super(typeof error?.message === 'string' ? error.message : 'the bridge failed a call')
    this.error = error
    this.code = typeof error?.code === 'string' ? error.code : 'BRIDGE_FAILED'
    this.details = error?.details
  }
}

/** Rejects with `no answer within N s` unless `promise` settles within `ms`. */
export function withTimeout(promise, ms) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

const unavailable = async () => 'unavailable'

export class BridgeClient {
  /**
   * Start `binary args...`. Resolves once the process runs; rejects with a
   * SpawnError when it cannot be started (not found, not executable).
   * @param {string} binary - a program name looked up on PATH, or a path.
   * @param {string[]} args
   * @param {{label?: string}} [options] - `label` names the bridge in failure sentences
   *   (e.g. "envreg dsh-bridge"); default: the binary.
   * @returns {Promise<BridgeClient>}
   */
  static open(binary, args, { label = binary } = {}) {
    return new Promise((resolve, reject) => {
      const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] })
      child.once('spawn', () => resolve(new BridgeClient(binary, label, child)))
      child.once('error', (error) => reject(new SpawnError(binary, error)))
    })
  }

  /** Use {@link BridgeClient.open}. */
  constructor(binary, label, child) {
    this.binary = binary
    this.label = label
    this.child = child
    this.nextId = 1
    this.pending = new Map()
    this.stderr = ''
    this.failure = undefined
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (text) => {
      this.stderr = (this.stderr + text).slice(-STDERR_TAIL)
    })
    // A write after the child died must not crash dsh; the exit handler fails the calls.
    child.stdin.on('error', () => {})
    child.on('error', (error) => this.fail(`${label} (${binary}) failed: ${error.message}`))
    child.once('exit', (code, signal) => {
      const tail = this.stderr.trim()
      this.fail(`${label} (${binary}) exited (${signal ?? `code ${code}`})${tail ? `: ${tail}` : ''}`)
    })
    createInterface({ input: child.stdout }).on('line', (line) => this.receive(line))
  }

  /** Rejects everything pending, and everything asked later, with `message` (the first one wins). */
  fail(message) {
    if (this.failure !== undefined) return
    this.failure = new Error(message)
    for (const entry of this.pending.values()) entry.reject(this.failure)
    this.pending.clear()
  }

  /**
   * One request; resolves with the reply line as sent (`{id, result}` or `{id, error}`).
   * @param {object} fields - `method` and the rest of the request (`params`, `protocol`…); `id` is added.
   * @param {(question: object) => Promise<string>} [onApproval] - answers a mid-call
   *   question with dsh's approval outcome; default and on a throw: `unavailable`.
   */
  request(fields, onApproval = unavailable) {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onApproval })
      this.send({ ...fields, id })
    })
  }

  /**
   * `{method, params}`; resolves with the reply's `result`, rejects with a
   * BridgeError carrying its `error` (or an Error when the child is gone).
   */
  async call(method, params, onApproval) {
    const reply = await this.request({ method, params }, onApproval)
    if (reply.error !== undefined) throw new BridgeError(reply.error)
    return reply.result
  }

  send(message) {
    if (this.failure === undefined) this.child.stdin.write(`${JSON.stringify(message)}\n`)
  }

  receive(line) {
    let message
    try {
      message = JSON.parse(line)
    } catch {
      return
    }
    const entry = this.pending.get(message?.id)
    if (entry === undefined) return
    if (message.approval !== undefined) {
      Promise.resolve()
        .then(() => entry.onApproval(message.approval))
        .catch(() => 'unavailable')
        .then((decision) => this.send({ id: message.id, method: 'approval_answer', params: { decision } }))
      return
    }
    this.pending.delete(message.id)
    entry.resolve(message)
  }

  /**
   * Stop the child: pending calls fail with `reason`, stdin closes (a bridge exits
   * on EOF), and it is sent SIGTERM if it is still there.
   */
  close(reason = `${this.label} was closed`) {
    this.fail(reason)
    this.child.stdin.end()
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM')
  }
}
