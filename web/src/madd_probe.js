// Whether relaxed SIMD pays on this device, measured. The relaxed-SIMD modules differ from the
// SIMD128 ones in one thing: their matrix kernels multiply-add with f32x4.relaxed_madd (one fused
// instruction where the CPU has FMA) instead of f32x4.mul + f32x4.add. Whether that is faster
// depends on the CPU, not the engine: the projection's register block ran 1.6x faster fused on an
// Intel Xeon (the relaxed module 1.12-1.51x the SIMD128 one), and 0.97x on AMD Zen 5, whose
// separate adders keep mul + add at the same rate (the relaxed module 0.96-0.98x;
// docs/benchmarks.md). So the package times that block both ways (cpp/probe/, ~1 KB, embedded in
// web/dist/madd_probe.js) before it picks a module (variant.js chooseVariant), in a few ms.
import { MADD_PROBE } from '../dist/madd_probe.js';

/** Fused must run the block at least this much faster than separate for relaxed SIMD to be picked. */
export const RELAXED_MIN_SPEEDUP = 1.1;

// The clock must resolve a call of ~0.1-0.3 ms: Node and cross-origin-isolated pages (5-20 µs)
// do; other pages (100 µs or coarser) would need calls long enough to cost tens of ms, so there
// the package keeps the unmeasured rule (relaxed SIMD wherever the engine has it).
const MAX_CLOCK_STEP_MS = 0.02;
const MEASURED_CALL_MS = 0.15;  // each timed call, at least (and 20 clock steps)
const WARM_LIMIT_MS = 40;       // the warm-up's time, at most
const TIER_UP_GAIN = 3;         // optimised code runs the block at least this much faster
/** The speed-ups a measurement can give: outside them it says null. */
export const PLAUSIBLE = [0.5, 2.2];

let lastSpeedup = null;

/** The speed-up the last measurement found (capabilities().relaxedSimdSpeedup), or null. */
export const measuredFusedSpeedup = () => lastSpeedup;

/** The smallest step performance.now() takes here, in ms (Infinity if it does not move in 5 ms). */
function clockStep() {
  const start = performance.now();
  let last = start, step = Infinity;
  for (let changes = 0; changes < 3 && last - start < 5;) {
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

const NAMES = ['fused', 'separate'];  // the probe's two functions

/**
 * Times the probe's register block fused and separate: resolves to fused's speed over separate's
 * (above 1: relaxed SIMD's multiply-add is faster here), or null where it cannot tell (no probe
 * built, an engine without relaxed SIMD, a clock too coarse, no optimised code seen in time: a
 * second measurement in one process finds the engine's code already optimised and says null).
 */
export async function measureFusedSpeedup() {
  lastSpeedup = null;
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
  // Engines run a function's baseline code first and swap in optimised code, compiled on another
  // thread, once it has run a while (V8: within ~1-2 ms here). Baseline code runs this block 3-4x
  // slower, fused or not, so timing it would say nothing: warm both until each runs TIER_UP_GAIN
  // faster than the slowest round either made (a baseline one: the first, with the baseline
  // compile, takes ~2x a later baseline round, less than TIER_UP_GAIN; V8 sometimes optimises
  // both within it, pausing ~1 ms), yielding between rounds so that on a busy machine the
  // compiler's thread gets a core. No optimised code within WARM_LIMIT_MS (or code optimised from
  // the start, as in a second measurement in one process): no measurement.
  // A round is 10 short calls of each: V8's tier-up budget is spent over a few rounds, so the
  // baseline code's speed shows in the rounds before.
  const WARM_REPS = 20, WARM_CALLS = 10;
  const best = { fused: Infinity, separate: Infinity };
  let slowest = 0;
  const warmStart = performance.now();
  for (let round = 0; round < 3 || !NAMES.every((n) => best[n] * TIER_UP_GAIN <= slowest); round += 1) {
    for (const name of NAMES) {
      const ms = timed(probe[name], WARM_REPS, WARM_CALLS);
      slowest = Math.max(slowest, ms);
      best[name] = Math.min(best[name], ms);
    }
    const elapsed = performance.now() - warmStart;
    if (elapsed > WARM_LIMIT_MS) return null;
    if (elapsed > 1) await new Promise((resolve) => setTimeout(resolve, 0));
  }
  // Then the two in turn, each call long enough for the clock, and the best of each.
  const perRep = Math.max(best.fused, best.separate, step) / (WARM_CALLS * WARM_REPS);
  const reps = Math.ceil(Math.max(MEASURED_CALL_MS, 20 * step) / perRep);
  const ms = { fused: Infinity, separate: Infinity };
  for (let i = 0; i < 5; i += 1) {
    for (const name of NAMES) ms[name] = Math.min(ms[name], timed(probe[name], reps));
  }
  // A call that reads as 0 ms tells nothing; nor does a ratio fusing cannot give (it saves at most
  // half the multiply-adds' instructions), which means one of the two still ran baseline code.
  const speedup = ms.separate / ms.fused;
  if (!(ms.fused > 0 && ms.separate > 0 && speedup >= PLAUSIBLE[0] && speedup <= PLAUSIBLE[1])) return null;
  lastSpeedup = speedup;
  return lastSpeedup;
}
