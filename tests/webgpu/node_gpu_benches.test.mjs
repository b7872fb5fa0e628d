// The GPU benches that a session with a GPU runs first (scripts/gpu_check.sh, bench/README.md)
// start, run every part and exit 0 here, on the test adapter, at their smallest sizes: a bench
// broken by a change elsewhere (an internal signature) would otherwise be found only on the GPU,
// in its scarce minutes. What they measure is not checked. Set-up: node_setup.mjs (it points
// VK_ICD_FILENAMES at SwiftShader unless set; the children inherit it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import './node_setup.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

const BENCHES = [
  ['bench/gpu/gpu.mjs', '--smoke'],
  ['bench/gpu/gpu.mjs', '--decode', '--smoke'],
  ['bench/gpu/gpu_decode_stack.mjs', '--quick', '--layers', '2', '--steps-ms', '100'],
  ['bench/gpu/gpu_sdpa.mjs', '--quick', '--ms', '100'],
  ['bench/gpu/gpu_host_side.mjs', '--cross', '--shapes', '4096/64/1', '--rounds', '3'],
  ['bench/gpu/gpu_cross_attention.mjs', '--quick', '--steps-ms', '100'],
  ['bench/gpu/step_in_browser.mjs', '--layers', '2', '--tokens', '5'],  // in headless Chromium
];

for (const [script, ...args] of BENCHES) {
  test(`${script} ${args.join(' ')}: runs to its end, no ERROR row`, { timeout: 180_000 }, async () => {
    const { stdout } = await run(process.execPath, [script, ...args], { cwd: root, env: process.env, maxBuffer: 16 << 20 });
    assert.doesNotMatch(stdout, /\bERROR\b|DEVICE LOST|NO ADAPTER/, stdout);
    assert.ok(stdout.trim().length > 0, 'it printed its table');
  });
}
