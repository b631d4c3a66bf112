import { spawn } from 'node:child_process'

/**
 * Starts `vaultplan mcp --http 127.0.0.1:0` (the built `cli`) over `root`, with `extra` arguments,
 * and resolves to the server's process and the URL it says it serves; rejects when it exits first.
 */
export async function startMcpServer(cli, root, extra = []) {
  const child = spawn(process.execPath, [cli, 'mcp', '--root', root, '--http', '127.0.0.1:0', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] })
  const url = await new Promise((resolve, reject) => {
    let text = ''
    child.stderr.on('data', (chunk) => {
      text += chunk
      const found = /at (http:\/\/\S+)/.exec(text)
      if (found) resolve(new URL(found[1]))
    })
    child.once('exit', (code) => reject(new Error(`the server exited (${code}): ${text}`)))
  })
  return { child, url }
}
