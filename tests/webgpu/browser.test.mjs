// The WebGPU backend in headless Chromium on its SwiftShader adapter (no GPU needed): serves the
// repository (tests/browser/harness.mjs: scripts/serve.mjs, plain page), opens
// tests/webgpu/page.html, which runs every check (page.mjs), and asserts on what it reports: the
// PyTorch MHA fixtures on backend 'webgpu' (those over MAX_FLOPS would be named in a test
// title; none are), a device destroyed mid-sequence, 'auto' on a software adapter, BackendError
// without an adapter. Then, in a Chromium without WebGPU enabled, 'auto' modules making large
// calls: WASM results and a single adapter probe.
//   node --test tests/webgpu/       (needs web/dist: bash scripts/build.sh)
//   CHROMIUM=/path/to/chromium       another browser binary
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CHROMIUM, ROOT, launchChromium, startServer } from '../browser/harness.mjs';
import { forwardFlops } from '../../web/src/dispatch.js';
import { resolveMhaConfig, resolveMhaForward } from '../../web/src/shapes.js';
import { loadFixtures } from '../js/fixtures.js';

const OVERALL_MS = 90_000;
const MAX_FLOPS = 2e8;
// --enable-unsafe-webgpu is the one flag headless Chromium needs for WebGPU on SwiftShader. Never
// add --enable-features=Vulkan with --use-angle=swiftshader: requestAdapter() then hangs.
const WEBGPU_ARGS = ['--enable-unsafe-webgpu'];

const fixtures = loadFixtures().filter((c) => c.kind === 'mha');
const flopsOf = (c) => {
  const config = resolveMhaConfig(c.create);
  return forwardFlops(resolveMhaForward(config, c.inputs.query, c.inputs.key, c.inputs.value, c.options), config);
};
const names = fixtures.filter((c) => flopsOf(c) <= MAX_FLOPS).map((c) => c.name);
const leftOut = fixtures.filter((c) => flopsOf(c) > MAX_FLOPS).map((c) => c.name);

let server;
let browser;
let watchdog;
let report;        // the page's window.__webgpu
let pageLog = '';

describe('WebGPU backend in headless Chromium (SwiftShader)', { timeout: OVERALL_MS }, () => {
  before(async () => {
    assert.ok(existsSync(join(ROOT, 'web/dist/webattention_core.wasm')), 'run `bash scripts/build.sh` first');
    assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (set CHROMIUM=...)`);
    // A hang anywhere (browser start, requestAdapter, the page) fails the run instead of stalling it.
    watchdog = setTimeout(() => {
      console.error(`webgpu browser test: still running after ${OVERALL_MS / 1000} s, giving up\n${pageLog}`);
      server?.child.kill('SIGKILL');
      process.exit(1);
    }, OVERALL_MS);
    watchdog.unref();
    server = await startServer({ isolated: false });
    browser = await launchChromium(WEBGPU_ARGS);
    const page = await browser.context.newPage();
    page.on('console', (m) => { pageLog += `console.${m.type()}: ${m.text()}\n`; });
    page.on('pageerror', (e) => { pageLog += `page error: ${e.message}\n`; });
    await page.goto(`${server.url}/tests/webgpu/page.html?maxFlops=${MAX_FLOPS}`, { waitUntil: 'load', timeout: 20_000 });
    await page.waitForFunction(() => window.__webgpu?.done, null, { timeout: OVERALL_MS - 30_000, polling: 200 });
    report = await page.evaluate(() => window.__webgpu);
  });

  after(async () => {
    clearTimeout(watchdog);
    await browser?.close();
    server?.child.kill('SIGTERM');
  });

  test('the page ran to the end on a SwiftShader adapter', () => {
    assert.equal(report.error, null, `${report.error}\n${pageLog}`);
    assert.equal(report.adapter?.architecture, 'swiftshader', JSON.stringify(report.adapter));
  });

  test(`fixtures over ${MAX_FLOPS / 1e6} MFLOP left out of software WebGPU: ${leftOut.join(', ') || 'none'}`, () => {
    assert.deepEqual(report.leftOut, leftOut);
    assert.ok(names.length >= 30, `${names.length} fixtures run`);
  });

  const result = (name) => {
    const r = report.cases[name];
    assert.ok(r, `no result for '${name}'\n${pageLog}`);
    assert.ok(r.ok, `${name}: ${r.detail}`);
    return r;
  };

  for (const name of names) {
    test(`webgpu parity with PyTorch in Chromium: mha ${name}`, () => {
      const r = result(`parity ${name}`);
      assert.equal(r.backend, 'webgpu');
      assert.deepEqual(r.ran, ['webgpu'], 'the call ran on the GPU');
    });
  }

  test('device.destroy() mid-sequence: every call correct, then backend wasm with one warning', () => {
    assert.equal(result('device loss mid-sequence').backend, 'wasm');
  });

  test("'auto' on the software adapter keeps WASM", () => {
    assert.equal(result('auto on a software adapter stays on WASM').backend, 'wasm');
  });

  test("'webgpu' without an adapter throws BackendError", () => {
    result('webgpu without an adapter: BackendError');
  });
});

describe('backend auto in Chromium without WebGPU enabled (navigator.gpu finds no adapter)', { timeout: 60_000 }, () => {
  let plainServer;
  let plainBrowser;
  let noAdapterReport;
  const messages = [];

  before(async () => {
    plainServer = await startServer({ isolated: false });
    plainBrowser = await launchChromium();
    const page = await plainBrowser.context.newPage();
    page.on('console', (m) => messages.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => messages.push(`page error: ${e.message}`));
    await page.goto(`${plainServer.url}/tests/webgpu/page.html?mode=noadapter`, { waitUntil: 'load', timeout: 20_000 });
    await page.waitForFunction(() => window.__webgpu?.done, null, { timeout: 40_000, polling: 200 });
    noAdapterReport = await page.evaluate(() => window.__webgpu);
  });

  after(async () => {
    await plainBrowser?.close();
    plainServer?.child.kill('SIGTERM');
  });

  test("two 'auto' modules, two large calls each: all on WASM, same results as backend 'wasm', one adapter probe", () => {
    assert.equal(noAdapterReport.error, null, noAdapterReport.error);
    const r = noAdapterReport.cases['auto without an adapter: WASM, one probe'];
    assert.ok(r?.ok, r?.detail);
    assert.equal(r.backend, 'wasm');
    // Chromium logs this warning for every requestAdapter() that finds nothing: the package asks once.
    assert.equal(messages.filter((m) => m.includes('No available adapters')).length, 1, messages.join('\n'));
  });
});
