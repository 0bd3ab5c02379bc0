// A stand-in bridge for the client's tests: speaks the wire (one JSON object per line)
// with canned answers per method. Not a model of envreg or facet; the live tests run
// the real bridges inside real dsh.
//   echo        → {result: {params}}
//   fail        → {error: {code: 'E_TEST', message: 'it failed', details: {n: 1}}}
//   ask         → {approval: {reason}} first; after approval_answer → {result: {decision}}
//   noise       → each line of params.lines as written, then {result: 'after noise'}
//   second      → answered only after the next request is answered (out of order)
//   die         → writes params.stderr to stderr and exits with params.code
//   silent      → never answered
import { createInterface } from 'node:readline'

const out = (object) => process.stdout.write(`${JSON.stringify(object)}\n`)
const asked = new Map()
let held

createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line)
  const reply = (fields) => {
    out({ id, ...fields })
    if (held !== undefined && held.id !== id) {
      const later = held
      held = undefined
      out({ id: later.id, result: { params: later.params } })
    }
  }
  switch (method) {
    case 'echo':
      return reply({ result: { params } })
    case 'fail':
      return reply({ error: { code: 'E_TEST', message: 'it failed', details: { n: 1 } } })
    case 'ask':
      asked.set(id, true)
      return out({ id, approval: { reason: `may I? (${params?.what})` } })
    case 'approval_answer':
      if (!asked.delete(id)) return out({ id, error: { code: 'NOT_ASKED', message: 'no question pending' } })
      return out({ id, result: { decision: params.decision } })
    case 'noise':
      for (const text of params.lines) process.stdout.write(`${text}\n`)
      return reply({ result: 'after noise' })
    case 'second':
      held = { id, params }
      return undefined
    case 'die':
      process.stderr.write(params.stderr)
      return process.exit(params.code)
    case 'silent':
      return undefined
    default:
      return reply({ error: { code: 'UNKNOWN', message: method } })
  }
})
