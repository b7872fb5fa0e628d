// Browser test of the demo's newer panels and layout: the "This machine" panel and its backend
// comparison, the panels' opening states (convolution at a sharpness where it is exact, §2 under
// the module's own mask), readable heatmaps at L = 1024, and the page at phone width (390 px: no
// sideways scrolling, no cut values). Screenshots at 1280 and 390 px go to build/screenshots/
// (git-ignored: CI keeps them as artifacts). Chromium only (demo.test.mjs and
// demo_product.test.mjs cover Firefox too): it runs with --enable-unsafe-webgpu, so its
// software adapter (SwiftShader) is there to be labelled. Needs `bash scripts/build.sh` first.
//   Run: node --test tests/browser/demo_panels.test.mjs
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, openDemoPage, startServer } from './harness.mjs';
import { launchBrowser } from './browsers.mjs';
import { compareBackends as compare, withoutOrtProbe } from './demo_compare.mjs';
import { generate } from './demo_generation.mjs';

const SHOTS = join(ROOT, 'build/screenshots');
const ORT_SERVED = existsSync(join(ROOT, 'bench/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs'));
const PHONE = { width: 390, height: 844 };
const golden = JSON.parse(readFileSync(join(ROOT, 'web/model/golden.json'), 'utf8'));

let server;
let browser;
let baseUrl;

const openDemo = (query = '', viewport = undefined) => openDemoPage(browser, `${baseUrl}/web/demo/${query}`, viewport);
const data = (page) => page.evaluate(() => ({ ...document.body.dataset }));
const unexpected = (problems) => withoutOrtProbe(problems, ORT_SERVED);

describe('demo panels and layout', { timeout: 180_000 }, () => {
  before(async () => {
    ({ child: server, url: baseUrl } = await startServer());
    browser = await launchBrowser('chromium', { chromiumArgs: ['--enable-unsafe-webgpu'] });
  });
  after(async () => {
    await browser?.close();
    if (server?.exitCode === null) server.kill('SIGTERM');
  });

  test('desktop (1280 px): machine facts, Compare backends fills ms, GFLOP/s and |diff| per backend', async (t) => {
    const { page, problems } = await openDemo('', { width: 1280, height: 1000 });
    const rows = await compare(page, '128,256,4');
    const d = await data(page);
    t.diagnostic(`module ${d.machineModule}, threads ${d.machineThreads}, isolated ${d.machineIsolated}, gpu ${d.machineGpu}: ${await page.textContent('#m-gpu')}`);
    for (const r of rows) t.diagnostic(`${r.backend}: ${r.available ? `${r.ms.toFixed(3)} ms, ${r.gflops.toFixed(2)} GFLOP/s, max |diff| ${r.maxDiff}` : r.note}`);

    assert.match(await page.textContent('#m-module'), new RegExp(`^${d.machineModule} \\(`));
    // The panel says what the relaxed-SIMD probe measured, where it measured (an isolated page).
    assert.match(await page.textContent('#m-module'),
      /\)(; relaxed SIMD's fused multiply-add ran \d+\.\d\d× as fast as separate ones here, its dot product \d+\.\d\d× as fast as widened ones)?$/);
    assert.equal(d.machineIsolated, '1', 'scripts/serve.mjs serves COOP/COEP');
    assert.match(await page.textContent('#m-isolated'), /^yes/);
    assert.match(await page.textContent('#m-threads'), new RegExp(`^${d.machineThreads} \\(`));
    assert.ok(['hardware', 'software', 'none'].includes(d.machineGpu), d.machineGpu);
    const gpuText = await page.textContent('#m-gpu');
    if (d.machineGpu === 'none') assert.match(gpuText, /^none: /);
    if (d.machineGpu === 'software') assert.match(gpuText, /software/);
    assert.match(await page.textContent('#compare-flops'), /^0\.084 GFLOP per forward/);  // 8·128·256² + 4·128²·256 = 83.9 M

    assert.deepEqual(rows.map((r) => r.backend.split(/[ ,(]/)[0]), ['wasm', 'wasm', 'webgpu', 'onnxruntime-web']);
    const [one, threaded, gpu, ort] = rows;
    assert.ok(one.available && one.maxDiff === 0 && one.gflops > 0 && one.ms > 0, JSON.stringify(one));
    if (Number(d.machineThreads) > 1) {
      assert.ok(threaded.available && threaded.gflops > 0 && threaded.maxDiff < 1e-4, JSON.stringify(threaded));
      assert.match(threaded.backend, /\d+ threads \((pthreads|worker pool)\)/);
    }
    assert.equal(gpu.available, d.machineGpu !== 'none', JSON.stringify(gpu));
    if (gpu.available) {
      assert.ok(gpu.maxDiff < 1e-3 && gpu.gflops > 0 && gpu.note === '', JSON.stringify(gpu));
      if (d.machineGpu === 'software') assert.match(gpu.backend, /software adapter/);
    } else {
      assert.match(gpu.note, /^not run: no WebGPU adapter/);
    }
    assert.equal(ort.available, ORT_SERVED, JSON.stringify(ort));
    if (ORT_SERVED) assert.ok(ort.maxDiff < 1e-4 && ort.gflops > 0, JSON.stringify(ort));
    else assert.match(ort.note, /^not loaded: bench\/node_modules\/onnxruntime-web is not served/);
    const cells = await page.$$eval('#compare-table tbody tr', (trs) => trs.map((tr) => tr.cells.length));
    assert.deepEqual(cells.map((n) => n === 4 || n === 2), [true, true, true, true]);

    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'demo-1280.png'), fullPage: true });
    t.diagnostic(`screenshot: ${join(SHOTS, 'demo-1280.png')}`);
    assert.deepEqual(unexpected(problems), [], problems.join('\n'));
    await page.close();
  });

  test('generation with the whole model on WebGPU (a GpuStep a character): greedy is PyTorch\'s text, the heatmaps left blank', async (t) => {
    const { page, problems } = await openDemo();
    await page.waitForFunction(() => document.body.dataset.machineGpu !== undefined, null, { timeout: 20_000 });
    const gpu = (await data(page)).machineGpu;
    const choice = '#gen-controls option[value=webgpu-model]';
    await page.waitForFunction((sel) => !/^WebGPU, whole model$/.test(document.querySelector(sel).textContent)
      || document.body.dataset.machineGpu !== 'none', choice, { timeout: 20_000 });
    assert.equal(await page.isDisabled(choice), gpu === 'none', `adapter: ${gpu}`);
    if (gpu === 'none') return;  // offered only where the page has an adapter: checked above
    const n = 16;
    await page.selectOption('#gen-controls select[name=backend]', 'webgpu-model');
    await page.check('#gen-controls input[name=greedy]');
    const info = await generate(page, n);
    assert.equal(info.genStatus, 'done', info.statusText);
    assert.equal(info.genBackend, 'webgpu, whole model');
    assert.equal(info.shown, golden.greedyContinuation.slice(0, n));
    assert.ok(Number(info.genTokensPerS) > 0);
    assert.equal(info.heads.length, 8, 'a (blank) map per layer and head');
    t.diagnostic(`${gpu} adapter, whole model: ${Number(info.genTokensPerS).toFixed(1)} characters/s`);
    assert.deepEqual(unexpected(problems), [], `console errors / failed requests:\n${unexpected(problems).join('\n')}`);
    await page.close();
  });

  test('phone (390 px): no sideways scrolling, no cut values, panels filled', async (t) => {
    const { page, problems } = await openDemo('', PHONE);
    assert.equal((await data(page)).status, 'ok');
    await compare(page, '128,256,4');
    const layout = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      // A value is cut when its box ends past the viewport or its text is wider than its box.
      const cut = Array.from(document.querySelectorAll('.facts dd, .facts dt, #compare-table th, #compare-table td, figcaption, .status, canvas, select, button'))
        .filter((el) => el.getBoundingClientRect().right > width + 0.5 || el.scrollWidth > el.clientWidth + 1)
        .map((el) => `${el.tagName.toLowerCase()}#${el.id || '?'}.${el.className}: right ${el.getBoundingClientRect().right.toFixed(0)}, `
          + `scroll ${el.scrollWidth} > client ${el.clientWidth}`);
      return { scrollWidth: document.documentElement.scrollWidth, width, cut };
    });
    t.diagnostic(`390 px: scrollWidth ${layout.scrollWidth}`);
    assert.ok(layout.scrollWidth <= PHONE.width, `the page scrolls sideways: scrollWidth ${layout.scrollWidth}`);
    assert.deepEqual(layout.cut, []);
    for (const id of ['m-module', 'm-threads', 'm-isolated', 'm-gpu', 'out-shape', 'conv-bias-diff']) {
      assert.notEqual((await page.textContent(`#${id}`)).trim(), '–', `#${id} is empty`);
    }
    await page.screenshot({ path: join(SHOTS, 'demo-390.png'), fullPage: true });
    t.diagnostic(`screenshot: ${join(SHOTS, 'demo-390.png')}`);
    assert.deepEqual(unexpected(problems), [], problems.join('\n'));
    await page.close();
  });

  test('opening states: convolution exact at s = 64 and explained; §2 under the module\'s mask', async () => {
    const { page, problems } = await openDemo();
    let d = await data(page);
    assert.equal(d.convSharpness, '64');
    assert.ok(Number(d.convBiasMaxDiff) < 1e-5, `opens on a failing setting: ${d.convBiasMaxDiff}`);
    assert.match(await page.textContent('#conv-explain'), /^s = 64: every head's softmax is one-hot/);
    await page.locator('#conv-sharpness').fill('1');
    await page.waitForFunction(() => document.body.dataset.convSharpness === '2', null, { timeout: 10_000 });
    assert.match(await page.textContent('#conv-explain'), /^s = 2: the bias is too soft.*slide right\.$/);

    // The module above is causal by default: both §2 maps use its mask, and say so.
    assert.match(await page.textContent('#self-mask'), /^causal/);
    assert.match(await page.textContent('#head-mask'), /^causal/);
    const corner = () => page.evaluate(() => Array.from(['heat-self', 'heat-head'], (id) => {
      const c = document.getElementById(id);
      return Array.from(c.getContext('2d').getImageData(c.width - 4, 2, 1, 1).data.slice(0, 3));
    }));
    // viridis(0) = rgb(68, 1, 84), up to the browser's colour conversion.
    const isZero = (rgb) => Math.max(...rgb.map((v, i) => Math.abs(v - [68, 1, 84][i]))) <= 4;
    const causalCorner = await corner();
    assert.ok(causalCorner.every(isZero), `query 0 must not see the last key: ${JSON.stringify(causalCorner)}`);
    await page.uncheck('input[name=causal]');
    await page.click('#controls button');
    await page.waitForFunction(() => document.getElementById('head-mask').textContent === 'none', null, { timeout: 20_000 });
    const openCorner = await corner();
    assert.ok(!openCorner.some(isZero), `without the mask query 0 sees the last key: ${JSON.stringify(openCorner)}`);
    d = await data(page);
    assert.equal(d.status, 'ok');
    assert.deepEqual(problems, [], problems.join('\n'));
    await page.close();
  });

  test('L = 1024: the weight maps open on the log scale and are brighter than on the √ scale', async (t) => {
    const { page, problems } = await openDemo('?L=1024&E=64&h=4&causal=0');
    assert.equal((await data(page)).status, 'ok');
    const meanLevel = () => page.evaluate(() => {
      const c = document.getElementById('heat-mha');
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let sum = 0;
      for (let i = 0; i < px.length; i += 4) sum += (px[i] + px[i + 1] + px[i + 2]) / 3;
      return sum / (px.length / 4) / 255;
    });
    assert.equal((await data(page)).heatScale, 'log');
    assert.match(await page.textContent('#scale-lo'), /^10⁻[⁰¹²³⁴⁵⁶⁷⁸⁹]+$/);
    const log = await meanLevel();
    await page.selectOption('#heat-scale', 'sqrt');
    assert.equal((await data(page)).heatScale, 'sqrt');
    const sqrt = await meanLevel();
    t.diagnostic(`L = 1024, mean level of the averaged map: log ${log.toFixed(3)}, √ ${sqrt.toFixed(3)}`);
    assert.ok(log > 0.35 && log > sqrt + 0.1, `log ${log}, √ ${sqrt}`);
    assert.deepEqual(problems, [], problems.join('\n'));
    await page.close();
  });
});
