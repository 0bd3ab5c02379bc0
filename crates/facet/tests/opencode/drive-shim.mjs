// Drives integrations/opencode/plugin/facet.js as OpenCode does: loads the plugin with
// {directory, worktree}, calls its `tool.execute.before(input, output)` with the call
// given as JSON in argv[3], and prints what happened as one JSON line:
// {"threw": "<message>"} or {"threw": null}. With `"system": true` in the call, it
// calls `experimental.chat.system.transform` instead and prints {"system": [...]}.
const [shim, call] = process.argv.slice(2)
const { FacetPlugin } = await import(shim)
const { directory, worktree, input, output, system } = JSON.parse(call)
const hooks = await FacetPlugin({ directory, worktree })
if (system) {
  const out = { system: ['the host prompt'] }
  await hooks['experimental.chat.system.transform']({ sessionID: input.sessionID, model: {} }, out)
  console.log(JSON.stringify(out))
  process.exit(0)
}
try {
  await hooks['tool.execute.before'](input, output)
  console.log(JSON.stringify({ threw: null }))
} catch (error) {
  console.log(JSON.stringify({ threw: String(error?.message ?? error) }))
}
