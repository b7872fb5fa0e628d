// Relaxed SIMD must pay its way: where a browser can time it, the package measures relaxed SIMD's
// fused multiply-add against mul + add in the projection's register block, and its dot product
// against the SIMD128 form in the int4 × int8 kernel's step (web/src/wasm/madd_probe.js, the probe
// module cpp/probe/madd_probe_relaxed.cpp), and picks a relaxed module where relaxedPays() says so
// (variant.js chooseVariant). Here: the choice for given measurements, and the probe itself where
// this Node runs relaxed SIMD (--experimental-wasm-relaxed-simd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  DOT_MIN_SPEEDUP, FUSED_MIN_WITH_DOT, MADD_PROBE, RELAXED_MIN_SPEEDUP, isPlausible, chooseVariant, measureRelaxedSpeedups,
  measuredSpeedups, relaxedSimdSupported,
} from '../internals.mjs';

const BENCH = fileURLToPath(new URL('../../bench/limits/madd_probe.mjs', import.meta.url));
const RELAXED_FLAG = '--experimental-wasm-relaxed-simd';  // what this process runs with where it has relaxed SIMD (Node 20)

const measuring = (speedups) => {
  const calls = [];
  return { calls, measure: async () => { calls.push(speedups); return speedups; } };
};

test('chooseVariant: relaxed where fusing measured RELAXED_MIN_SPEEDUP faster, or the dot product DOT_MIN_SPEEDUP faster and fusing no slower than FUSED_MIN_WITH_DOT, or nothing could be measured', async () => {
  const dotSlow = 1.0;  // a dot product that gains nothing: fusing alone decides
  const cases = [
    [{ fused: 0.97, dot: dotSlow }, 'simd'],  // AMD Zen 5's adders, were its dot product no faster
    [{ fused: RELAXED_MIN_SPEEDUP - 0.01, dot: dotSlow }, 'simd'],
    [{ fused: RELAXED_MIN_SPEEDUP, dot: dotSlow }, 'relaxed'],
    [{ fused: 1.63, dot: dotSlow }, 'relaxed'],  // an Intel Xeon
    [{ fused: 1.0, dot: 1.7 }, 'relaxed'],  // an AMD Zen: fusing gains nothing, the dot product 1.7x
    [{ fused: FUSED_MIN_WITH_DOT, dot: DOT_MIN_SPEEDUP }, 'relaxed'],
    [{ fused: FUSED_MIN_WITH_DOT - 0.01, dot: 2.0 }, 'simd'],  // fusing would cost the float kernels too much
    [{ fused: 1.0, dot: DOT_MIN_SPEEDUP - 0.01 }, 'simd'],
    [null, 'relaxed'],  // a clock too coarse to tell: the feature rule
  ];
  for (const [speedups, expected] of cases) {
    const { calls, measure } = measuring(speedups);
    assert.equal(await chooseVariant(undefined, { measure, relaxed: true }), expected, `measured ${JSON.stringify(speedups)}`);
    assert.equal(calls.length, 1);
  }
});

test('chooseVariant measures nothing where relaxed SIMD is not there, or for a forced module', async () => {
  for (const [forced, relaxed, expected] of [[undefined, false, 'simd'], ['relaxed', true, 'relaxed'], ['scalar', true, 'scalar'], ['', false, 'simd']]) {
    const { calls, measure } = measuring({ fused: 0.5, dot: 0.5 });
    assert.equal(await chooseVariant(forced, { measure, relaxed }), expected);
    assert.equal(calls.length, 0, `forced ${forced}, relaxed ${relaxed}: no measurement`);
  }
  // The pthreads modules follow the same rule where they can run (never under Node: no isolation).
  assert.equal(await chooseVariant(undefined, { threadsModule: true, measure: async () => ({ fused: 0.97, dot: 1.0 }), relaxed: true }), 'simd');
  assert.equal(await chooseVariant(undefined, { threadsModule: true, measure: async () => ({ fused: 0.97, dot: 1.7 }), relaxed: true }), 'relaxed');
});

test('the probe module is built, and measures where the engine runs relaxed SIMD (numbers within what each relaxed form can give), else says null', async () => {
  assert.ok(MADD_PROBE instanceof Uint8Array && MADD_PROBE.length > 0, 'web/dist/madd_probe.js holds the probe (bash scripts/build.sh)');
  if (!relaxedSimdSupported()) {
    assert.equal(await measureRelaxedSpeedups(), null, 'no relaxed SIMD: the probe does not compile');
    assert.equal(measuredSpeedups(), null);
    return;
  }
  // A measurement says null where the two functions had not both reached optimised code within
  // the warm-up's limit (a very busy machine); within one process the engine's code is optimised
  // from then on and a second measurement says null too, so further tries run in fresh processes
  // (bench/limits/madd_probe.mjs --once, as a page would).
  const start = performance.now();
  let speedups = await measureRelaxedSpeedups();
  const ms = performance.now() - start;
  assert.ok(ms < 250, `the probe took ${ms.toFixed(1)} ms`);  // bounded: its loops stop by time
  assert.deepEqual(measuredSpeedups(), speedups);
  for (let tries = 0; tries < 2 && speedups === null; tries += 1) {
    const line = execFileSync(process.execPath, [RELAXED_FLAG, BENCH, '--once'], { encoding: 'utf8' });
    const [fused, dot] = [/fused \/ separate speed ([0-9.]+)/, /relaxed \/ widened dot speed ([0-9.]+)/].map((re) => re.exec(line)?.[1]);
    speedups = fused === undefined ? null : { fused: Number(fused), dot: Number(dot) };
  }
  assert.ok(speedups !== null, 'no measurement in three processes');
  for (const key of ['fused', 'dot']) {
    assert.ok(isPlausible(key, speedups[key]), `${key} ${speedups[key]}`);
  }
});

// measureRelaxedSpeedups() with performance.now() replaced by `now` (restored after).
async function measureWithClock(now) {
  const own = Object.getOwnPropertyDescriptor(performance, 'now');
  Object.defineProperty(performance, 'now', { value: now, configurable: true, writable: true });
  try {
    return await measureRelaxedSpeedups();
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
