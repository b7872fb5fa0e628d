// Every PyTorch fixture (MHA, SDPA, self-attention) in headless Chromium, once per WASM module of
// web/modules.json (modulesToRun() below). parity.html runs the test contract (tests/contract/): the same cases,
// calls and tolerance (1e-4 abs + 1e-4 rel) as the Node suite.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FEATURES, MODULES } from '../../web/dist/modules.js';
import { isPlausible, relaxedPays } from '../../web/src/wasm/madd_probe.js';
import { launchBrowser } from './browsers.mjs';
import { startServer } from './harness.mjs';

/**
 * One run per module of web/modules.json, forced with ?wasm=: threads modules on a
 * cross-origin-isolated page, the others on a plain one. Then one run per kind of page as feature
 * detection picks: the most valued module (Chromium has every feature), except that a relaxed-SIMD
 * one only where the page measured relaxed SIMD paying (capabilities().relaxedSimdSpeedup and
 * relaxedDotSpeedup, by relaxedPays(), or null where it could not measure; web/src/wasm/madd_probe.js).
 */
function modulesToRun() {
  const forced = MODULES.map((m) => ({
    name: `${m.name} module (forced, ${m.threads ? 'cross-origin-isolated' : 'plain'} page)`,
    server: m.threads ? 'isolated' : 'plain',
    query: `?wasm=${m.name}`,
    module: () => m.name,
    minThreads: m.threads ? 2 : 1,
  }));
  const rank = (m) => FEATURES.map((f) => (m[f] ? 1 : 0)).join('');
  const detected = [true, false].map((threads) => ({
    name: `the module detection picks (${threads ? 'cross-origin-isolated' : 'plain'} page)`,
    server: threads ? 'isolated' : 'plain',
    query: '',
    module: (speedups) => MODULES.filter((m) => m.threads === threads && (!m.relaxed || relaxedPays(speedups)))
      .reduce((best, m) => (rank(m) > rank(best) ? m : best)).name,
    minThreads: threads ? 2 : 1,
  }));
  return [...forced, ...detected];
}

const servers = {};
let browser;
let watchdog;

describe('PyTorch parity in Chromium', { timeout: 120_000 }, () => {
  before(async () => {
    watchdog = setTimeout(() => { console.error('parity browser test: stuck, giving up'); process.exit(1); }, 120_000);
    watchdog.unref();
    servers.isolated = await startServer({ isolated: true });
    servers.plain = await startServer({ isolated: false });
    browser = await launchBrowser('chromium');
  });
  after(async () => {
    clearTimeout(watchdog);
    await browser?.close();
    for (const s of Object.values(servers)) s.child.kill('SIGTERM');
  });

  const runs = modulesToRun();
  for (const run of runs) {
    test(run.name, async () => {
      const page = await browser.newPage();
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text()); });
      await page.goto(`${servers[run.server].url}/tests/browser/parity.html${run.query}`, { timeout: 20_000 });
      await page.waitForFunction(() => document.body?.dataset.status, null, { timeout: 60_000 });
      const r = await page.evaluate(() => ({ ...document.body.dataset }));
      await page.close();
      assert.equal(r.status, 'ok', r.error);
      const speedups = r.relaxedSimdSpeedup === 'null' ? null : { fused: Number(r.relaxedSimdSpeedup), dot: Number(r.relaxedDotSpeedup) };
      assert.equal(r.module, run.module(speedups), `relaxedSimdSpeedup ${r.relaxedSimdSpeedup}, relaxedDotSpeedup ${r.relaxedDotSpeedup}`);
      // Measured (an isolated page, where the probe's times settled within its limit: about half
      // of Chromium page loads here) or not (null: the feature rule).
      for (const key of speedups ? ['fused', 'dot'] : []) {
        assert.ok(isPlausible(key, speedups[key]), `${key} ${speedups[key]}`);
      }
      assert.ok(Number(r.threads) >= run.minThreads, `threads ${r.threads}`);
      assert.ok(Number(r.cases) >= 40, `only ${r.cases} cases`);
      assert.ok(Number(r.worst) <= 1, `worst error ${r.worst}× the tolerance\n${r.failures}`);
      assert.deepEqual(problems, []);
    });
  }
});
