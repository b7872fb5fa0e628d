// Relaxed SIMD must pay its way: where a browser can time it, the package measures relaxed SIMD's
// fused multiply-add against mul + add in the projection's register block (web/src/wasm/madd_probe.js,
// the probe module cpp/probe/madd_probe_relaxed.cpp) and picks a relaxed module only from
// RELAXED_MIN_SPEEDUP up (variant.js chooseVariant). Here: the choice for given measurements,
// and the probe itself where this Node runs relaxed SIMD (--experimental-wasm-relaxed-simd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  MADD_PROBE, PLAUSIBLE, RELAXED_MIN_SPEEDUP, chooseVariant, measureFusedSpeedup, measuredFusedSpeedup, relaxedSimdSupported,
} from '../internals.mjs';

const BENCH = fileURLToPath(new URL('../../bench/limits/madd_probe.mjs', import.meta.url));
const RELAXED_FLAG = '--experimental-wasm-relaxed-simd';  // what this process runs with where it has relaxed SIMD (Node 20)

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
  // A measurement says null where the two functions had not both reached optimised code within
  // the warm-up's limit (a very busy machine); within one process the engine's code is optimised
  // from then on and a second measurement says null too, so further tries run in fresh processes
  // (bench/limits/madd_probe.mjs --once, as a page would).
  const start = performance.now();
  let speedup = await measureFusedSpeedup();
  const ms = performance.now() - start;
  assert.ok(ms < 250, `the probe took ${ms.toFixed(1)} ms`);  // bounded: its loops stop by time
  assert.equal(measuredFusedSpeedup(), speedup);
  for (let tries = 0; tries < 2 && speedup === null; tries += 1) {
    const line = execFileSync(process.execPath, [RELAXED_FLAG, BENCH, '--once'], { encoding: 'utf8' });
    speedup = /fused \/ separate speed ([0-9.]+)/.exec(line)?.[1] ?? null;
    speedup = speedup === null ? null : Number(speedup);
  }
  assert.ok(speedup >= PLAUSIBLE[0] && speedup <= PLAUSIBLE[1], `speedup ${speedup}`);
});

// measureFusedSpeedup() with performance.now() replaced by `now` (restored after).
async function measureWithClock(now) {
  const own = Object.getOwnPropertyDescriptor(performance, 'now');
  Object.defineProperty(performance, 'now', { value: now, configurable: true, writable: true });
  try {
    return await measureFusedSpeedup();
  } finally {
    if (own) Object.defineProperty(performance, 'now', own);
    else delete performance.now;
  }
}

test('a clock that never moves gives no measurement, and does not hang the load', async () => {
  assert.equal(await measureWithClock(() => 42), null);
  assert.ok(performance.now() !== 42);
});

test('a clock that stops, or that moves without time passing, gives no measurement and does not hang the load', async () => {
  // (Without relaxed SIMD the probe does not compile and says null before it reads the clock.)
  // Moves 5 µs a read for its first 20 reads (its step is found), then stops (the warm-up's
  // rounds leave it where it was).
  let reads = 0;
  assert.equal(await measureWithClock(() => 5e-3 * Math.min(reads++, 20)), null);
  // Moves 5 µs at every read whatever runs between two: the warm-up ends once its reads add up to
  // its 8 ms, and no call, however long, reaches the timed call's minimum.
  reads = 0;
  assert.equal(await measureWithClock(() => 5e-3 * reads++), null);
});
