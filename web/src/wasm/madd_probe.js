// Whether relaxed SIMD pays on this device, measured. The relaxed-SIMD modules differ from the
// SIMD128 ones in one thing: their matrix kernels multiply-add with f32x4.relaxed_madd (one fused
// instruction where the CPU has FMA) instead of f32x4.mul + f32x4.add. Whether that is faster
// depends on the CPU, not the engine: the projection's register block ran 1.6x faster fused on an
// Intel Xeon (the relaxed module 1.12-1.51x the SIMD128 one), and 0.97x on AMD Zen 5, whose
// separate adders keep mul + add at the same rate (the relaxed module 0.96-0.98x;
// docs/performance.md#relaxed-simd). So the package times that block both ways (cpp/probe/, ~1 KB, embedded in
// web/dist/madd_probe.js) before it picks a module (variant.js chooseVariant), in a few ms.
import { MADD_PROBE } from '../../dist/madd_probe.js';

/** Fused must run the block at least this much faster than separate for relaxed SIMD to be picked. */
export const RELAXED_MIN_SPEEDUP = 1.1;

// The clock must resolve a call of ~0.1-0.3 ms: Node and cross-origin-isolated pages (5-20 µs)
// do; other pages (100 µs or coarser) would need calls long enough to cost tens of ms, so there
// the package keeps the unmeasured rule (relaxed SIMD wherever the engine has it).
const MAX_CLOCK_STEP_MS = 0.02;
const MEASURED_CALL_MS = 0.3;   // each timed call, at least (and 20 clock steps)
const WARM_MS = 8;              // the warm-up's time, at least
const WARM_LIMIT_MS = 40;       // and at most
// Every loop here stops by count as well as by the clock, so that a clock that stops moving (or
// moves without time passing) gives no measurement instead of a load that never ends: reads of
// the clock while finding its step, warm-up rounds in a row that left it where it was (each round
// runs 400 repetitions of the block, longer than a 20 µs step), and the timed call's length (6400
// repetitions on this machine; the probe's argument is an i32).
const MAX_CLOCK_READS = 1e6;
const MAX_STALE_ROUNDS = 100;
const MAX_REPS = 1 << 20;
/** The speed-ups a measurement can give: outside them it says null. */
export const PLAUSIBLE = [0.5, 2.2];

let lastSpeedup = null;

/** The speed-up the last measurement found (capabilities().relaxedSimdSpeedup), or null. */
export const measuredFusedSpeedup = () => lastSpeedup;

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

const NAMES = ['fused', 'separate'];  // the probe's two functions

/**
 * Times the probe's register block fused and separate: resolves to fused's speed over separate's
 * (above 1: relaxed SIMD's multiply-add is faster here), or null where it cannot tell (no probe
 * built, an engine without relaxed SIMD, a clock too coarse, times still changing at the end of
 * the warm-up).
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
  // Engines run a function's baseline code first (3-4x slower here, and alike fused or not) and
  // swap in optimised code, compiled on another thread, once it has run a while: warm both in
  // rounds for WARM_MS at least, then until neither has got faster for 4 rounds, yielding between
  // rounds so that on a busy machine the compiler's thread gets a core; still changing after
  // WARM_LIMIT_MS: no measurement.
  const WARM_REPS = 20, WARM_CALLS = 10;
  const best = { fused: Infinity, separate: Infinity };
  const warmStart = performance.now();
  for (let still = 0, elapsed = 0, stale = 0; still < 4 || elapsed < WARM_MS;) {
    let faster = false;
    for (const name of NAMES) {
      const ms = timed(probe[name], WARM_REPS, WARM_CALLS);
      if (ms < 0.9 * best[name] - 2 * step) faster = true;  // beyond the clock's steps
      best[name] = Math.min(best[name], ms);
    }
    still = faster ? 0 : still + 1;
    const now = performance.now() - warmStart;
    stale = now === elapsed ? stale + 1 : 0;
    elapsed = now;
    if (elapsed > WARM_LIMIT_MS || stale === MAX_STALE_ROUNDS) return null;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  // Then the two in turn, 5 times, the best of each: calls long enough for the clock, sized on
  // the code as it runs now (a size from the warm-up's slower rounds gave calls of a few clock
  // steps in Chromium, and ratios from 0.7 to 1.9).
  const minimum = Math.max(MEASURED_CALL_MS, 20 * step);
  let reps = WARM_REPS * WARM_CALLS;
  while (timed(probe.fused, reps) < minimum) {
    reps *= 2;
    if (reps > MAX_REPS) return null;
  }
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
