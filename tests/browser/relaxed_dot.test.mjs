// tests/js/relaxed_dot.test.js in the browser engines (browsers.mjs): in Chromium and Firefox, each
// in its baseline tier alone and its optimising tier alone, i16x8.relaxed_dot_i8x16_i7x16_s gives
// the exact sums (tests/contract/relaxed_dot.mjs), and the relaxed modules' int8 activations
// calls give the SIMD128 module's bits (tests/contract/act8_bits.mjs, on act8_bits.html): 'relaxed'
// on a plain page, 'mt-relaxed' (its projections split over pthreads) on a cross-origin-isolated one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINES, installed, launchBrowser } from './browsers.mjs';
import { startServer } from './harness.mjs';

const TIERS = {
  chromium: { baseline: { chromiumArgs: ['--js-flags=--liftoff-only'] }, optimising: { chromiumArgs: ['--js-flags=--no-liftoff'] } },
  firefox: {
    baseline: { firefoxPrefs: { 'javascript.options.wasm_optimizingjit': false } },
    optimising: { firefoxPrefs: { 'javascript.options.wasm_baselinejit': false } },
  },
};

const servers = {};
let watchdog;

async function pageResult(browser, wasm) {
  const page = await browser.newPage();
  try {
    const server = wasm.startsWith('mt') ? servers.isolated : servers.plain;
    await page.goto(`${server.url}/tests/browser/act8_bits.html?wasm=${wasm}`, { timeout: 20_000 });
    await page.waitForFunction(() => document.body?.dataset.status, null, { timeout: 60_000 });
    const { status, result } = await page.evaluate(() => ({ ...document.body.dataset }));
    assert.equal(status, 'ok', result);
    return JSON.parse(result);
  } finally {
    await page.close();
  }
}

describe('relaxed SIMD dot products in the browsers', { timeout: 300_000 }, () => {
  before(async () => {
    watchdog = setTimeout(() => { console.error('relaxed_dot browser test: stuck, giving up'); process.exit(1); }, 300_000);
    watchdog.unref();
    servers.plain = await startServer({ isolated: false });
    servers.isolated = await startServer({ isolated: true });
  });
  after(() => {
    clearTimeout(watchdog);
    for (const s of Object.values(servers)) s.child.kill('SIGTERM');
  });

  for (const engine of ENGINES) {
    for (const [tier, options] of Object.entries(TIERS[engine])) {
      test(`${engine}, ${tier} tier alone: the instruction's exact sums, and the relaxed modules' bits equal the SIMD128 module's`, async () => {
        assert.ok(installed(engine), `${engine} is not installed (bash scripts/setup.sh)`);
        const browser = await launchBrowser(engine, options);
        try {
          const simd = await pageResult(browser, 'simd');
          assert.equal(simd.module, 'simd');
          assert.equal(Object.keys(simd.bits).length, 18);
          for (const wasm of ['relaxed', 'mt-relaxed']) {
            const relaxed = await pageResult(browser, wasm);
            assert.equal(relaxed.module, wasm);
            assert.deepEqual(relaxed.dot.map((r) => r.dot), [true, true]);
            for (const [name, bits] of Object.entries(simd.bits)) assert.deepEqual(relaxed.bits[name], bits, `${wasm}: ${name}`);
          }
        } finally {
          await browser.close();
        }
      });
    }
  }
});
