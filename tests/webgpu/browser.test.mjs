// The WebGPU backend in headless Chromium on its SwiftShader adapter (no GPU needed; on a machine
// where Chromium offers a hardware adapter, that one, with the hardware expectations: adapter.mjs):
// serves the repository (tests/browser/harness.mjs: scripts/serve.mjs, plain page), opens
// tests/webgpu/page.html, which runs every check (page.mjs), and asserts on what it reports: the
// PyTorch MHA fixtures on backend 'webgpu' (those over MAX_FIXTURE_FLOPS would be named in a test
// title; none are), the SDPA and selfAttention fixtures with backend 'webgpu', a device destroyed mid-sequence, 'auto' at its default threshold (WASM on a
// software adapter, the GPU on a hardware one), BackendError without an adapter. Then, in a Chromium without WebGPU enabled, 'auto' modules making large
// calls: WASM results and a single adapter probe.
//   node --test tests/webgpu/       (needs web/dist: bash scripts/build.sh)
//   CHROMIUM=/path/to/chromium       another browser binary
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { launchBrowser } from '../browser/browsers.mjs';
import { CHROMIUM, ROOT, startServer } from '../browser/harness.mjs';
import { caseFlops, webgpuCases } from '../internals.mjs';
import { loadFixtures } from '../js/fixtures.js';
import { MAX_FIXTURE_FLOPS, autoBackendForLargeCalls } from './adapter.mjs';

// A hang guard, not a speed check: the page takes about 45 s alone on a two-core machine on
// SwiftShader, and node_test.mjs runs another WebGPU file beside it (one per core), whose Dawn
// compiles on the same cores. 90 s cancelled a CI run on two cores.
const OVERALL_MS = 300_000;
// --enable-unsafe-webgpu is the one flag headless Chromium needs for WebGPU on SwiftShader. Never
// add --enable-features=Vulkan with --use-angle=swiftshader: requestAdapter() then hangs.
const WEBGPU_ARGS = ['--enable-unsafe-webgpu'];

const fixtures = webgpuCases(loadFixtures());
const names = fixtures.filter((c) => caseFlops(c) <= MAX_FIXTURE_FLOPS).map((c) => c.name);
const leftOut = fixtures.filter((c) => caseFlops(c) > MAX_FIXTURE_FLOPS).map((c) => c.name);
const decodeCases = loadFixtures().filter((c) => c.kind === 'decode');
const sdpaCases = loadFixtures().filter((c) => c.kind === 'sdpa' || c.kind === 'self');

let server;
let browser;
let watchdog;
let report;        // the page's window.__webgpu
let pageLog = '';

describe('WebGPU backend in headless Chromium (SwiftShader, or the hardware adapter it offers)', { timeout: OVERALL_MS }, () => {
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
    browser = await launchBrowser('chromium', { chromiumArgs: WEBGPU_ARGS });
    const page = await browser.newPage();
    page.on('console', (m) => { pageLog += `console.${m.type()}: ${m.text()}\n`; });
    page.on('pageerror', (e) => { pageLog += `page error: ${e.message}\n`; });
    await page.goto(`${server.url}/tests/webgpu/page.html`, { waitUntil: 'load', timeout: 20_000 });
    await page.waitForFunction(() => window.__webgpu?.done, null, { timeout: OVERALL_MS - 30_000, polling: 200 });
    report = await page.evaluate(() => window.__webgpu);
  });

  after(async () => {
    clearTimeout(watchdog);
    await browser?.close();
    server?.child.kill('SIGTERM');
  });

  test('the page ran to the end; the adapter is what the page detected, and the package agrees', () => {
    assert.equal(report.error, null, `${report.error}\n${pageLog}`);
    const adapter = JSON.stringify(report.adapter);
    if (report.adapter?.kind === 'software') {
      assert.equal(report.adapter.architecture, 'swiftshader', adapter);
      assert.equal(report.adapter.packageSoftware, true, `the package sees a software adapter: ${adapter}`);
    } else {
      assert.equal(report.adapter?.kind, 'hardware', adapter);
      assert.equal(report.adapter.packageSoftware, false, `the package sees a hardware adapter: ${adapter}`);
    }
  });

  test(`fixtures over ${MAX_FIXTURE_FLOPS / 1e6} MFLOP left out of software WebGPU: ${leftOut.join(', ') || 'none'}`, () => {
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

  for (const c of sdpaCases) {
    test(`webgpu parity with PyTorch in Chromium: ${c.kind} ${c.name}`, () => {
      assert.deepEqual(result(`sdpa ${c.name}`).ran, ['webgpu'], 'the call ran on the GPU');
    });
  }

  for (const c of decodeCases) {
    test(`webgpu decode parity with PyTorch in Chromium (KV cache on the GPU): ${c.name}`, () => {
      const r = result(`decode ${c.name}`);
      assert.equal(r.backend, 'webgpu');
      assert.deepEqual(r.ran, [...c.chunks, ...c.chunks].map(() => 'webgpu'), 'every step ran on the GPU (the sequence is fed twice)');
    });
  }

  test('device.destroy() mid-sequence: every call correct, then backend wasm with one warning', () => {
    assert.equal(result('device loss mid-sequence').backend, 'wasm');
  });

  test("'auto' at its default threshold: WASM on a software adapter, the GPU on a hardware one; backend 'wasm''s result", () => {
    const r = result("auto at the default threshold: this adapter's backend");
    assert.equal(r.backend, autoBackendForLargeCalls(report.adapter.kind), JSON.stringify(report.adapter));
  });

  test('GPU-resident tensors in Chromium: a 2-layer chain, a cached decode step buffer to buffer, one batched into out with a copy of the page\'s between the layers (encode()), and a GpuStep replayed, bit for bit the host\'s', () => {
    assert.equal(result('gpu tensors: a 2-layer chain and a cached step, buffer to buffer').backend, 'webgpu');
  });

  test('the same with the weights on the GPU only (hostWeights: false)', () => {
    assert.equal(result('gpu tensors, weights on the GPU only (hostWeights: false): the same chain and step').backend, 'webgpu');
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
    plainBrowser = await launchBrowser('chromium');
    const page = await plainBrowser.newPage();
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
