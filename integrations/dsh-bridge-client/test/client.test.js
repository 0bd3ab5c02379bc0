// The shared client against a stand-in bridge (fake-bridge.js): matching replies to
// requests, mid-call questions, errors, a child that dies or is closed, and lines that
// are not replies. Run: node --test integrations/dsh-bridge-client/test/
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { BridgeClient, BridgeError, SpawnError, withTimeout } from '../index.js'

const FAKE = fileURLToPath(new URL('./fake-bridge.js', import.meta.url))

async function open() {
  const client = await BridgeClient.open(process.execPath, [FAKE], { label: 'fake dsh-bridge' })
  return client
}

test('a program that is not there is a SpawnError saying not found', async () => {
  await assert.rejects(BridgeClient.open('/nonexistent/bridge', []), (error) => {
    assert.ok(error instanceof SpawnError)
    assert.equal(error.binary, '/nonexistent/bridge')
    assert.equal(error.why, 'not found')
    return true
  })
})

test('replies are matched to their requests, also out of order', async () => {
  const client = await open()
  const first = client.call('second', { n: 1 })
  const raw = await client.request({ method: 'echo', params: { n: 2 }, protocol: 1 })
  assert.deepEqual(raw, { id: 2, result: { params: { n: 2 } } })
  assert.deepEqual(await first, { params: { n: 1 } })
  client.close()
})

test('an error reply is a BridgeError carrying what the bridge sent', async () => {
  const client = await open()
  await assert.rejects(client.call('fail', {}), (error) => {
    assert.ok(error instanceof BridgeError)
    assert.equal(error.code, 'E_TEST')
    assert.equal(error.message, 'it failed')
    assert.deepEqual(error.details, { n: 1 })
    assert.deepEqual(error.error, { code: 'E_TEST', message: 'it failed', details: { n: 1 } })
    return true
  })
  const raw = await client.request({ method: 'fail' })
  assert.equal(raw.error.code, 'E_TEST')
  client.close()
})

test('a mid-call question goes to onApproval and its answer back under the same id', async () => {
  const client = await open()
  const questions = []
  const result = await client.call('ask', { what: 'write' }, async (question) => {
    questions.push(question)
    return 'allowed-once'
  })
  assert.deepEqual(questions, [{ reason: 'may I? (write)' }])
  assert.deepEqual(result, { decision: 'allowed-once' })
  client.close()
})

test('no handler, or one that throws, answers unavailable', async () => {
  const client = await open()
  assert.deepEqual(await client.call('ask', {}), { decision: 'unavailable' })
  const throwing = () => {
    throw new Error('no channel')
  }
  assert.deepEqual(await client.call('ask', {}, throwing), { decision: 'unavailable' })
  assert.deepEqual(await client.call('ask', {}, async () => Promise.reject(new Error('gone'))), {
    decision: 'unavailable',
  })
  client.close()
})

test('lines that are not replies to a pending request are passed over', async () => {
  const client = await open()
  const lines = ['not json', '', 'null', '[]', '42', '"text"', '{"id":999,"result":1}', '{"id":"1","result":1}', '{"result":2}']
  assert.equal(await client.call('noise', { lines }), 'after noise')
  client.close()
})

test('generated lines never break the client', async () => {
  // A seeded generator: the same lines every run, so a failure can be replayed.
  let seed = 0x2545f491
  const next = (n) => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) % n
  }
  const alphabet = '{}[]":,0123456789abcdeilnrstu \\\u00e9\u2028'
  const pieces = ['{"id":', '"approval":', '"result":', '"error":', 'null', '1', '"x"', '}', ',']
  const lines = []
  for (let i = 0; i < 400; i++) {
    let line = ''
    const length = next(40)
    for (let j = 0; j < length; j++) line += next(3) === 0 ? pieces[next(pieces.length)] : alphabet[next(alphabet.length)]
    lines.push(line.replaceAll('\n', ''))
  }
  const client = await open()
  // The noise request is id 1; lines naming id 1 could answer it early, so they are left out.
  const noise = lines.filter((line) => !/"id":\s*1\b/.test(line))
  assert.equal(await client.call('noise', { lines: noise }), 'after noise')
  assert.deepEqual(await client.call('echo', { ok: true }), { params: { ok: true } })
  client.close()
})

test('a child that exits fails its pending and later calls, naming it and its stderr', async () => {
  const client = await open()
  const pending = client.call('silent', {})
  await assert.rejects(client.call('die', { code: 3, stderr: 'registry is gone\n' }), (error) => {
    assert.match(error.message, /^fake dsh-bridge \(.+\) exited \(code 3\): registry is gone$/)
    return true
  })
  await assert.rejects(pending, /exited \(code 3\)/)
  await assert.rejects(client.call('echo', {}), /exited \(code 3\)/)
  client.close()
})

test('close fails pending calls with its reason and ends the child', async () => {
  const client = await open()
  const pending = client.call('silent', {})
  const exited = once(client.child, 'exit')
  client.close('the plugin was disposed')
  await assert.rejects(pending, /^Error: the plugin was disposed$/)
  await exited
  await assert.rejects(client.call('echo', {}), /the plugin was disposed/)
})

test('withTimeout rejects a call never answered, and passes an answered one through', async () => {
  const client = await open()
  await assert.rejects(withTimeout(client.call('silent', {}), 50), /^Error: no answer within 0.05 s$/)
  assert.deepEqual(await withTimeout(client.call('echo', { n: 3 }), 60_000), { params: { n: 3 } })
  client.close()
})
