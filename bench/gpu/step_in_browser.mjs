#!/usr/bin/env node
// A GpuStep's replays in headless Chromium (its WebGPU: SwiftShader here, a GPU where the browser
// offers one), where each WebGPU call crosses to the GPU process: per token, the host's time from
// replay() to its queue.submit() and the whole token (replay and read()), median, mean and best
// after 3 warm-up tokens. The page (step_in_browser.html) is served cross-origin isolated, so that
// performance.now() is fine-grained.
//
//   node bench/gpu/step_in_browser.mjs [--layers N] [--e E] [--tokens N]
import { launchBrowser } from '../../tests/browser/browsers.mjs';
import { startServer } from '../../tests/browser/harness.mjs';

const args = process.argv.slice(2);
const flag = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const params = new URLSearchParams({ layers: flag('--layers', 24), e: flag('--e', 128), tokens: flag('--tokens', 40) });

const stats = (values) => {
  const sorted = values.slice(3).sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return `median ${sorted[sorted.length >> 1].toFixed(3)}, mean ${mean.toFixed(3)}, best ${sorted[0].toFixed(3)} ms`;
};

const server = await startServer();
const browser = await launchBrowser('chromium', { chromiumArgs: ['--enable-unsafe-webgpu'] });
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/bench/gpu/step_in_browser.html?${params}`, { waitUntil: 'load', timeout: 20_000 });
  await page.waitForFunction(() => window.__step, null, { timeout: 540_000, polling: 200 });
  const result = await page.evaluate(() => window.__step);
  if (result.error) throw new Error(result.error);
  console.log(`${result.layers} layers in Chromium (${result.adapter}), ${result.tokens} tokens`);
  console.log(`replay() to its submit: ${stats(result.record)}`);
  console.log(`token (replay and read()): ${stats(result.token)}`);
} finally {
  await browser.close();
  server.child.kill();
}
