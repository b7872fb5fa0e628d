// A script run as an ES module in a fresh Node process at the repository root (so that
// '#webattention' resolves), for the tests of what only a new process shows: exit, import-time
// behaviour, Node without a feature. The child runs the same module as this process, so it gets
// this process's V8 wasm flags (relaxed SIMD), then `flags`.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** spawnSync's result ({ status, signal, stdout, stderr }) of `script`, killed after 30 s. */
export function runNodeScript(script, { flags = [], env = {} } = {}) {
  const wasmFlags = process.execArgv.filter((a) => a.startsWith('--experimental-wasm-'));
  return spawnSync(process.execPath, [...wasmFlags, ...flags, '--input-type=module', '-e', script],
    { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env } });
}
