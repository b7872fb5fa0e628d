#!/usr/bin/env node
// Runs build/simd_peak/register_blocks.cjs (built by bench/limits/simd_peak/run.sh) in Node, headless
// Chromium and Firefox, one after the other, and prints each engine's lines side by side.
//   node bench/limits/simd_peak/engines.mjs [node] [chromium] [firefox]     (default: all three)
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { launchBrowser } from '../../../tests/browser/browsers.mjs';
import { startServer } from '../../../tests/browser/harness.mjs';

const BUILT = fileURLToPath(new URL('../../../build/simd_peak/register_blocks.cjs', import.meta.url));
const engines = process.argv.slice(2).length ? process.argv.slice(2) : ['node', 'chromium', 'firefox'];

function inNode() {
  // Node 20 validates relaxed SIMD only behind the flag; --no-experimental-fetch: Emscripten 3.1.6's
  // glue would fetch() the .wasm path.
  return execFileSync(process.execPath, ['--experimental-wasm-relaxed-simd', '--no-experimental-fetch', BUILT],
    { encoding: 'utf8' }).trim().split('\n');
}

async function inBrowser(engine, server) {
  const browser = await launchBrowser(engine);
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/bench/limits/simd_peak/page.html`);
    await page.waitForFunction(() => window.__peak?.done || window.__peak?.lines.some((l) => l.startsWith('error')), null, { timeout: 300_000 });
    return (await page.evaluate(() => window.__peak.lines)).filter((l) => l !== 'done');
  } finally {
    await browser.close();
  }
}

const columns = {};
const server = engines.some((e) => e !== 'node') ? await startServer({ isolated: true }) : null;
const load = [loadavg()[0]];
try {
  for (const engine of engines) columns[engine] = engine === 'node' ? inNode().filter((l) => l !== 'done') : await inBrowser(engine, server);
} finally {
  server?.child.kill();
}
load.push(loadavg()[0]);
// Each line is "<case>  <x> GFLOP/s": one row per case, one column per engine.
const rows = columns[engines[0]].map((line) => line.replace(/\s+[\d.]+ GFLOP\/s$/, ''));
console.log(`| case | ${engines.map((e) => `${e} GFLOP/s`).join(' | ')} |`);
console.log(`|---|${engines.map(() => '---:').join('|')}|`);
rows.forEach((label, i) => {
  const values = engines.map((e) => columns[e][i]?.match(/([\d.]+) GFLOP\/s$/)?.[1] ?? columns[e][i] ?? '?');
  console.log(`| ${label.replace(/\s+/g, ' ').trim()} | ${values.join(' | ')} |`);
});
console.log(`load average (1 min) at start / end: ${load.map((l) => l.toFixed(1)).join(' / ')}`);
