// What the browser entry's module choice measures on this device (web/src/madd_probe.js): relaxed
// SIMD's fused multiply-add against mul + add in the projection's register block, as a speed-up
// (relaxed modules are picked from RELAXED_MIN_SPEEDUP up), three times, with the time each took.
//   node --experimental-wasm-relaxed-simd bench/madd_probe.mjs     (Node 20 needs the flag)
import { RELAXED_MIN_SPEEDUP, measureFusedSpeedup } from '../web/src/madd_probe.js';

for (let i = 0; i < 3; i += 1) {
  const start = performance.now();
  const speedup = await measureFusedSpeedup();
  const ms = (performance.now() - start).toFixed(2);
  console.log(speedup === null ? `not measured (no relaxed SIMD here, or a coarse clock), ${ms} ms`
    : `fused / separate speed ${speedup.toFixed(3)} in ${ms} ms: relaxed SIMD ${speedup >= RELAXED_MIN_SPEEDUP ? 'pays' : 'does not pay'} here`);
}
