// Relaxed SIMD must pay its way: where a browser can time it, the package measures relaxed SIMD's
// fused multiply-add against mul + add in the projection's register block (web/src/madd_probe.js,
// the probe module cpp/probe/madd_probe_relaxed.cpp) and picks a relaxed module only from
// RELAXED_MIN_SPEEDUP up (variant.js chooseVariant). Here: the choice for given measurements,
// and the probe itself where this Node runs relaxed SIMD (--experimental-wasm-relaxed-simd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MADD_PROBE, PLAUSIBLE, RELAXED_MIN_SPEEDUP, chooseVariant, measureFusedSpeedup, measuredFusedSpeedup, relaxedSimdSupported,
} from '../internals.mjs';

const measuring = (speedup) => {
  const calls = [];
  return { calls, measure: async () => { calls.push(speedup); return speedup; } };
};

test('chooseVariant: relaxed only where fused multiply-add measured at least RELAXED_MIN_SPEEDUP faster, or could not be measured', async () => {
  const cases = [
    [0.97, 'simd'],  // AMD Zen 5: separate adders keep mul + add as fast
    [RELAXED_MIN_SPEEDUP - 0.01, 'simd'],
    [RELAXED_MIN_SPEEDUP, 'relaxed'],
    [1.63, 'relaxed'],  // an Intel Xeon
    [null, 'relaxed'],  // a clock too coarse to tell: the feature rule
  ];
  for (const [speedup, expected] of cases) {
    const { calls, measure } = measuring(speedup);
    assert.equal(await chooseVariant(undefined, { measure, relaxed: true }), expected, `measured ${speedup}`);
    assert.equal(calls.length, 1);
  }
});

test('chooseVariant measures nothing where relaxed SIMD is not there, or for a forced module', async () => {
  for (const [forced, relaxed, expected] of [[undefined, false, 'simd'], ['relaxed', true, 'relaxed'], ['scalar', true, 'scalar'], ['', false, 'simd']]) {
    const { calls, measure } = measuring(0.5);
    assert.equal(await chooseVariant(forced, { measure, relaxed }), expected);
    assert.equal(calls.length, 0, `forced ${forced}, relaxed ${relaxed}: no measurement`);
  }
  // The pthreads modules follow the same rule where they can run (never under Node: no isolation).
  assert.equal(await chooseVariant(undefined, { threadsModule: true, measure: async () => 0.97, relaxed: true }), 'simd');
});

test('the probe module is built, and measures where the engine runs relaxed SIMD (a number within what fusing can give), else says null', async () => {
  assert.ok(MADD_PROBE instanceof Uint8Array && MADD_PROBE.length > 0, 'web/dist/madd_probe.js holds the probe (bash scripts/build.sh)');
  if (!relaxedSimdSupported()) {
    assert.equal(await measureFusedSpeedup(), null, 'no relaxed SIMD: the probe does not compile');
    assert.equal(measuredFusedSpeedup(), null);
    return;
  }
  // A measurement says null where one of the two functions had not reached optimised code within
  // the warm-up's limit (a busy machine): up to three tries, each bounded (its loops stop by time).
  let speedup = null;
  for (let tries = 0; tries < 3 && speedup === null; tries += 1) {
    const start = performance.now();
    speedup = await measureFusedSpeedup();
    const ms = performance.now() - start;
    assert.ok(ms < 250, `the probe took ${ms.toFixed(1)} ms`);
  }
  assert.ok(speedup >= PLAUSIBLE[0] && speedup <= PLAUSIBLE[1], `speedup ${speedup}`);
  assert.equal(measuredFusedSpeedup(), speedup);
});
