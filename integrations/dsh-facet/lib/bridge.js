/**
 * The child process behind the plugin: `facet dsh-bridge`, spoken to in JSON
 * lines (protocol 1, documented in crates/facet/src/dsh_bridge/mod.rs).
 *
 * This file only carries lines. It decides nothing: every verdict, sentence and
 * schema comes back from the child. A question the child puts mid-call
 * (`{"id", "approval"}`) is handed to the caller's `onApproval`, and its answer
 * goes back as `approval_answer` under the same id.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

/** The child failed a call with `{code, message, details}`. */
export class BridgeError extends Error {
  constructor(error) {
    super(typeof error?.message === 'string' ? error.message : 'facet dsh-bridge failed a call')
    this.code = typeof error?.code === 'string' ? error.code : 'BRIDGE_FAILED'
    this.details = error?.details
  }
}

const STDERR_TAIL = 4096

export class Bridge {
  /**
   * Start `binary dsh-bridge`. Resolves once the process runs; rejects with a
   * sentence naming the binary when it cannot be started (not found, not
   * executable).
   * @param {string} binary - the facet program (a name on PATH or a path).
   * @returns {Promise<Bridge>}
   */
  static open(binary) {
    return new Promise((resolve, reject) => {
      const child = spawn(binary, ['dsh-bridge'], { stdio: ['pipe', 'pipe', 'pipe'] })
      child.once('spawn', () => resolve(new Bridge(binary, child)))
      child.once('error', (error) => {
        const why = error.code === 'ENOENT' ? 'not found' : error.message
        reject(
          new Error(
            `dsh-facet: cannot start the facet program \`${binary}\` (${why}); install facet on PATH or set the row's config key \`binary\` to its path`,
          ),
        )
      })
    })
  }

  constructor(binary, child) {
    this.binary = binary
    this.child = child
    this.nextId = 1
    this.pending = new Map()
    this.stderr = ''
    this.exited = undefined
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (text) => {
      this.stderr = (this.stderr + text).slice(-STDERR_TAIL)
    })
    // A write after the child died must not crash dsh; the exit handler fails the calls.
    child.stdin.on('error', () => {})
    createInterface({ input: child.stdout }).on('line', (line) => this.receive(line))
    child.once('exit', (code, signal) => {
      this.exited = `facet dsh-bridge (${binary}) exited (${signal ?? `code ${code}`})${this.stderr ? `: ${this.stderr.trim()}` : ''}`
      for (const call of this.pending.values()) call.reject(new Error(this.exited))
      this.pending.clear()
    })
  }

  /**
   * One call. `onApproval(question)` must resolve to dsh's approval outcome.
   * @returns {Promise<unknown>} the result; rejects with BridgeError or Error.
   */
  call(method, params, onApproval) {
    if (this.exited !== undefined) return Promise.reject(new Error(this.exited))
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onApproval })
      this.send({ id, method, params })
    })
  }

  send(message) {
    this.child.stdin.write(`${JSON.stringify(message)}\n`)
  }

  receive(line) {
    let message
    try {
      message = JSON.parse(line)
    } catch {
      return
    }
    const call = this.pending.get(message?.id)
    if (call === undefined) return
    if (message.approval !== undefined) {
      const ask = call.onApproval ?? (async () => 'unavailable')
      Promise.resolve()
        .then(() => ask(message.approval))
        .catch(() => 'unavailable')
        .then((decision) => this.send({ id: message.id, method: 'approval_answer', params: { decision } }))
      return
    }
    this.pending.delete(message.id)
    if (message.error !== undefined) call.reject(new BridgeError(message.error))
    else call.resolve(message.result)
  }

  /** Stop the child: stdin closes (it exits on EOF), and it is killed if still there. */
  close() {
    this.child.stdin.end()
    if (this.exited === undefined) this.child.kill('SIGTERM')
  }
}
