// The child process behind dsh-envreg: `envreg dsh-bridge --registry DIR`, JSON lines on
// its stdio (protocol: crates/envreg/src/dsh_bridge.rs). This file only moves lines;
// what they say is decided in Rust. One child per plugin instance, for the life of dsh:
// its stdin closing (dsh gone) ends it, and close() kills it when the plugin is disposed.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

const STDERR_TAIL = 2000

export class Bridge {
  /**
   * @param {string} binary - the envreg binary (a path, or a name looked up on PATH).
   * @param {string[]} args - its arguments.
   */
  constructor(binary, args) {
    this.binary = binary
    this.nextId = 1
    this.pending = new Map()
    this.stderr = ''
    this.failure = undefined
    this.child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] })
    this.child.on('error', (error) => {
      const why = error.code === 'ENOENT' ? 'not found' : error.message
      this.fail(`cannot start envreg (${binary}): ${why}`)
    })
    this.child.on('exit', (code, signal) => {
      const tail = this.stderr.trim()
      this.fail(`envreg (${binary}) dsh-bridge exited (${signal ?? `code ${code}`})${tail ? `: ${tail}` : ''}`)
    })
    this.child.stdin.on('error', () => {})
    this.child.stderr.setEncoding('utf8')
    this.child.stderr.on('data', (text) => {
      this.stderr = (this.stderr + text).slice(-STDERR_TAIL)
    })
    createInterface({ input: this.child.stdout }).on('line', (line) => this.onLine(line))
  }

  /** Rejects everything pending, and everything asked later, with `message`. */
  fail(message) {
    if (this.failure !== undefined) return
    this.failure = new Error(message)
    for (const entry of this.pending.values()) entry.reject(this.failure)
    this.pending.clear()
  }

  onLine(line) {
    let message
    try {
      message = JSON.parse(line)
    } catch {
      return
    }
    const entry = this.pending.get(message?.id)
    if (entry === undefined) return
    if (message.approval !== undefined) {
      // Mid-call question: answered on the same id, the call stays pending.
      Promise.resolve(entry.onApproval(message.approval))
        .catch(() => 'unavailable')
        .then((decision) => this.send({ id: message.id, method: 'approval_answer', params: { decision } }))
      return
    }
    this.pending.delete(message.id)
    entry.resolve(message)
  }

  send(object) {
    if (this.failure === undefined) this.child.stdin.write(`${JSON.stringify(object)}\n`)
  }

  /**
   * One request; resolves with the reply line ({result} or {error}).
   * @param {object} fields - `method` and its fields (`params`, `protocol`).
   * @param {(approval: object) => Promise<string>} [onApproval] - answers a mid-call question.
   */
  request(fields, onApproval = async () => 'unavailable') {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onApproval })
      this.send({ id, ...fields })
    })
  }

  close() {
    this.fail('dsh-envreg was disposed')
    this.child.kill()
  }
}
