// What the browser entry's module choice measures on this device (web/src/madd_probe.js): relaxed
// SIMD's fused multiply-add against mul + add in the projection's register block, and its dot
// product against the SIMD128 form in the int4 × int8 kernel's step, as speed-ups (relaxedPays()
// decides), with the time it took. Each of the
// three measurements runs in a fresh process, as a page's does: within one process the engine's
// code is optimised already, and a second measurement says null.
//   node --experimental-wasm-relaxed-simd bench/limits/madd_probe.mjs     (Node 20 needs the flag)
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { measureRelaxedSpeedups, relaxedPays } from '../../web/src/wasm/madd_probe.js';

if (process.argv[2] === '--once') {
  const start = performance.now();
  const speedups = await measureRelaxedSpeedups();
  const ms = (performance.now() - start).toFixed(2);
  console.log(speedups === null ? `not measured (no relaxed SIMD here, a coarse clock, or no optimised code in time), ${ms} ms`
    : `fused / separate speed ${speedups.fused.toFixed(3)}, relaxed / widened dot speed ${speedups.dot.toFixed(3)} in ${ms} ms: `
      + `relaxed SIMD ${relaxedPays(speedups) ? 'pays' : 'does not pay'} here`);
} else {
  for (let i = 0; i < 3; i += 1) {
    // Only the relaxed-SIMD flag passes on (no -e or test-runner flags).
    const flags = process.execArgv.filter((flag) => flag === '--experimental-wasm-relaxed-simd');
    process.stdout.write(execFileSync(process.execPath, [...flags, fileURLToPath(import.meta.url), '--once']));
  }
}
