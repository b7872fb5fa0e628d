// Whether relaxed SIMD pays on this device, measured. The relaxed-SIMD modules differ from the
// SIMD128 ones in two instructions. Their matrix kernels multiply-add with f32x4.relaxed_madd (one
// fused instruction where the CPU has FMA) instead of f32x4.mul + f32x4.add: that depends on the
// CPU, not the engine: the projection's register block ran 1.6x faster fused on an Intel Xeon (the
// relaxed module 1.12-1.51x the SIMD128 one), and 0.97x on AMD Zen 5, whose separate adders keep
// mul + add at the same rate (the relaxed module 0.96-0.98x;
// docs/performance/platform.md#relaxed-simd). And their int4 × int8 decode kernel takes
// i16x8.relaxed_dot_i8x16_i7x16_s (7 operations per 32 weights where SIMD128's one-row step widens
// to int16 in 12; its older step took 15): 1.7x faster than the 15 on an AMD Zen where fusing
// gained nothing, so an int4 model decoded 1.3x faster in the relaxed module there; 1.24x the 12 on
// an Intel Xeon (docs/performance/platform.md#relaxed-simd). So the package times both steps both
// ways (cpp/probe/, ~3 KB, embedded in web/dist/madd_probe.js) before it picks a module (variant.js
// chooseVariant), in 15-40 ms, and relaxedPays() below decides.
import { MADD_PROBE } from '../../dist/madd_probe.js';

/** Fused must run the block at least this much faster than separate for relaxed SIMD to be picked, */
export const RELAXED_MIN_SPEEDUP = 1.1;
/** or the relaxed dot product the int4 × int8 step this much faster than the widened one, */
export const DOT_MIN_SPEEDUP = 1.3;
/** while fusing costs the float kernels at most this (fused's speed over separate's, at least). */
export const FUSED_MIN_WITH_DOT = 0.95;

/**
 * Whether the relaxed modules pay for speed-ups { fused, dot } (measureRelaxedSpeedups()), or for
 * null (not measured: they run wherever the engine has relaxed SIMD, the feature rule).
 */
export function relaxedPays(speedups) {
  if (speedups === null) return true;
  const { fused, dot } = speedups;
  return fused >= RELAXED_MIN_SPEEDUP || (dot >= DOT_MIN_SPEEDUP && fused >= FUSED_MIN_WITH_DOT);
}

// The clock must resolve a call of ~0.1-0.3 ms: Node and cross-origin-isolated pages (5-20 µs)
// do; other pages (100 µs or coarser) would need calls long enough to cost tens of ms, so there
// the package keeps the unmeasured rule (relaxed SIMD wherever the engine has it).
const MAX_CLOCK_STEP_MS = 0.02;
const MEASURED_CALL_MS = 0.3;   // each timed call, at least (and 20 clock steps)
const WARM_MS = 8;              // the warm-up's time, at least
const WARM_LIMIT_MS = 40;       // and at most
const WARM_REPS = 20, WARM_CALLS = 10;  // each function's calls in a warm-up round, and their repetitions
// Every loop here stops by count as well as by the clock, so that a clock that stops moving (or
// moves without time passing) gives no measurement instead of a load that never ends: reads of
// the clock while finding its step, warm-up rounds in a row that left it where it was (each round
// runs 400 repetitions of the block, longer than a 20 µs step), and the timed call's length (6400
// repetitions on this machine; the probe's argument is an i32).
const MAX_CLOCK_READS = 1e6;
const MAX_STALE_ROUNDS = 100;
const MAX_REPS = 1 << 20;
// The probe's pairs of functions, the relaxed form first, and the speed-ups each can give (fusing
// saves at most half the multiply-adds' instructions; the dot product 8 of 15): outside them a
// measurement says null.
const PAIRS = {
  fused: { names: ['fused', 'separate'], plausible: [0.5, 2.2] },
  dot: { names: ['dot_relaxed', 'dot_widened'], plausible: [0.5, 3] },
};
/** Whether `speedup` is one the pair `key` ('fused' or 'dot') can give. */
export const isPlausible = (key, speedup) => speedup >= PAIRS[key].plausible[0] && speedup <= PAIRS[key].plausible[1];

let lastSpeedups = null;

/**
 * The speed-ups the last measurement found, { fused, dot } (capabilities().relaxedSimdSpeedup,
 * relaxedDotSpeedup), or null.
 */
export const measuredSpeedups = () => lastSpeedups;

/**
 * The smallest step performance.now() takes here, in ms (Infinity if it does not move 3 times in
 * 5 ms, or in MAX_CLOCK_READS reads).
 */
function clockStep() {
  const start = performance.now();
  let last = start, step = Infinity;
  for (let changes = 0, reads = 0; changes < 3 && last - start < 5 && reads < MAX_CLOCK_READS; reads += 1) {
    const now = performance.now();
    if (now !== last) {
      step = Math.min(step, now - last);
      last = now;
      changes += 1;
    }
  }
  return step;
}

// ms that `calls` calls of f(reps) take.
const timed = (f, reps, calls = 1) => {
  const t = performance.now();
  for (let i = 0; i < calls; i += 1) f(reps);
  return performance.now() - t;
};

/**
 * Times the probe's two steps, each in its relaxed form and its SIMD128 one: resolves to each
 * relaxed form's speed over the other's, { fused, dot } (above 1: relaxed SIMD is faster here), or
 * null where it cannot tell (no probe built, an engine without relaxed SIMD, a clock too coarse,
 * times still changing at the end of the warm-up, a speed-up no pair can give: isPlausible).
 */
export async function measureRelaxedSpeedups() {
  lastSpeedups = null;
  if (!MADD_PROBE) return null;
  let probe;
  try {
    probe = new WebAssembly.Instance(new WebAssembly.Module(MADD_PROBE), {}).exports;
  } catch {
    return null;  // no relaxed SIMD here
  }
  const step = clockStep();
  if (!(step <= MAX_CLOCK_STEP_MS)) return null;
  probe._initialize();
  probe.fill(1e-3);
  if (!(await warm(probe, step))) return null;
  const speedups = {};
  for (const [key, { names: [relaxed, plain] }] of Object.entries(PAIRS)) {
    const speedup = timedPair(probe[relaxed], probe[plain], step);
    if (!isPlausible(key, speedup)) return null;
    speedups[key] = speedup;
  }
  lastSpeedups = speedups;
  return speedups;
}

// Engines run a function's baseline code first (3-4x slower here, and alike in both forms) and
// swap in optimised code, compiled on another thread, once it has run a while: warms every
// function in rounds for WARM_MS at least, then until none has got faster for 4 rounds, yielding
// between rounds so that on a busy machine the compiler's thread gets a core. Resolves to false
// where times were still changing after WARM_LIMIT_MS (or the clock stopped).
async function warm(probe, step) {
  const names = Object.values(PAIRS).flatMap((pair) => pair.names);
  const best = Object.fromEntries(names.map((name) => [name, Infinity]));
  const warmStart = performance.now();
  for (let still = 0, elapsed = 0, stale = 0; still < 4 || elapsed < WARM_MS;) {
    let faster = false;
    for (const name of names) {
      const ms = timed(probe[name], WARM_REPS, WARM_CALLS);
      if (ms < 0.9 * best[name] - 2 * step) faster = true;  // beyond the clock's steps
      best[name] = Math.min(best[name], ms);
    }
    still = faster ? 0 : still + 1;
    const now = performance.now() - warmStart;
    stale = now === elapsed ? stale + 1 : 0;
    elapsed = now;
    if (elapsed > WARM_LIMIT_MS || stale === MAX_STALE_ROUNDS) return false;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return true;
}

// The two forms of a step in turn, 5 times, the best of each: plain's time over relaxed's, or null.
// Calls long enough for the clock, sized on the code as it runs now (a size from the warm-up's
// slower rounds gave calls of a few clock steps in Chromium, and ratios from 0.7 to 1.9). A call
// that reads as 0 ms tells nothing.
function timedPair(relaxed, plain, step) {
  const minimum = Math.max(MEASURED_CALL_MS, 20 * step);
  let reps = WARM_REPS * WARM_CALLS;
  while (timed(relaxed, reps) < minimum) {
    reps *= 2;
    if (reps > MAX_REPS) return null;
  }
  let relaxedMs = Infinity, plainMs = Infinity;
  for (let i = 0; i < 5; i += 1) {
    relaxedMs = Math.min(relaxedMs, timed(relaxed, reps));
    plainMs = Math.min(plainMs, timed(plain, reps));
  }
  return relaxedMs > 0 && plainMs > 0 ? plainMs / relaxedMs : null;
}
