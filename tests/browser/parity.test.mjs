// Every PyTorch fixture (MHA, SDPA, self-attention) in headless Chromium, once per WASM module
// the browser can pick: the pthreads + relaxed-SIMD module on a cross-origin-isolated page, the
// relaxed-SIMD module on a plain page (Chromium has relaxed SIMD), and the pthreads, SIMD and
// scalar modules forced. parity.html runs the test contract (tests/contract/): the same cases,
// calls and tolerance (1e-4 abs + 1e-4 rel) as the Node suite.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServer } from './harness.mjs';

const servers = {};
let browser;
let watchdog;

describe('PyTorch parity in Chromium', { timeout: 120_000 }, () => {
  before(async () => {
    watchdog = setTimeout(() => { console.error('parity browser test: stuck, giving up'); process.exit(1); }, 120_000);
    watchdog.unref();
    servers.isolated = await startServer({ isolated: true });
    servers.plain = await startServer({ isolated: false });
    browser = await launchChromium();
  });
  after(async () => {
    clearTimeout(watchdog);
    await browser?.close();
    for (const s of Object.values(servers)) s.child.kill('SIGTERM');
  });

  const runs = [
    { name: 'pthreads + relaxed-SIMD module (cross-origin-isolated page)', server: 'isolated', query: '', module: 'mt-relaxed', minThreads: 2 },
    { name: 'pthreads module (forced, cross-origin-isolated page)', server: 'isolated', query: '?wasm=mt', module: 'mt', minThreads: 2 },
    { name: 'relaxed-SIMD module (plain page)', server: 'plain', query: '', module: 'relaxed', minThreads: 1 },
    { name: 'SIMD module (forced)', server: 'plain', query: '?wasm=simd', module: 'simd', minThreads: 1 },
    { name: 'scalar module (forced)', server: 'plain', query: '?wasm=scalar', module: 'scalar', minThreads: 1 },
  ];
  for (const run of runs) {
    test(run.name, async () => {
      const page = await browser.context.newPage();
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text()); });
      await page.goto(`${servers[run.server].url}/tests/browser/parity.html${run.query}`, { timeout: 20_000 });
      await page.waitForFunction(() => document.body?.dataset.status, null, { timeout: 60_000 });
      const r = await page.evaluate(() => ({ ...document.body.dataset }));
      await page.close();
      assert.equal(r.status, 'ok', r.error);
      assert.equal(r.module, run.module);
      assert.ok(Number(r.threads) >= run.minThreads, `threads ${r.threads}`);
      assert.ok(Number(r.cases) >= 40, `only ${r.cases} cases`);
      assert.ok(Number(r.worst) <= 1, `worst error ${r.worst}× the tolerance\n${r.failures}`);
      assert.deepEqual(problems, []);
    });
  }
});
