// Which WASM module to load (web/modules.json lists them): the one with the most features this
// engine has, threads first, then relaxed SIMD, then SIMD128: on cross-origin-isolated pages a
// pthreads build ('mt-relaxed' where the engine validates relaxed SIMD, else 'mt'), else the
// relaxed-SIMD build ('relaxed': SIMD128 with f32x4.relaxed_madd) where the engine validates
// relaxed SIMD, else the SIMD128 build where it validates SIMD code, else the scalar build.
// `forced` (a module's name) overrides detection (tests, debugging). Relaxed SIMD must also pay
// on this device where the package can measure it (chooseVariant, madd_probe.js).
import { FEATURES, MODULES } from '../../dist/modules.js';
import { OptionError } from '../base/errors.js';
import { measureRelaxedSpeedups, relaxedPays } from './madd_probe.js';

// A minimal module whose one function uses SIMD (i32x4.splat + i8x16.popcnt): valid only on
// engines with WASM SIMD.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15,
  253, 98, 11,
]);

export function simdSupported() {
  return WebAssembly.validate(SIMD_PROBE);
}

// A minimal module whose one function computes f32x4.relaxed_madd (0xfd 0x85 0x02) of three
// i32x4.splat(0): valid only on engines with relaxed SIMD (Chromium 114+, Node 22+; Node 20 only
// with --experimental-wasm-relaxed-simd).
const RELAXED_SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0,
  65, 0, 253, 17, 65, 0, 253, 17, 65, 0, 253, 17, 253, 133, 2, 11,
]);

export function relaxedSimdSupported() {
  return WebAssembly.validate(RELAXED_SIMD_PROBE);
}

/** Shared memory and Atomics: a cross-origin-isolated page (COOP + COEP headers). */
export function sharedMemorySupported() {
  return globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function';
}

/** The pthreads modules: the core splits work over its own threads in shared memory. */
export const THREADS_VARIANTS = MODULES.filter((m) => m.threads).map((m) => m.name);

/** The manifest entry of module `name` (web/modules.json), or undefined. */
export const moduleEntry = (name) => MODULES.find((m) => m.name === name);

// FEATURES lists the most valued first (threads, then relaxed SIMD, then SIMD128): a module
// with a more valued feature outranks any without it.
const rank = (m) => FEATURES.reduce((sum, f, i) => sum + (m[f] ? 2 ** (FEATURES.length - 1 - i) : 0), 0);

/**
 * threadsModule: whether this platform can run the pthreads modules at all (browsers only).
 * relaxed: whether detection may pick the relaxed-SIMD modules (by default: where the engine has
 * relaxed SIMD; chooseVariant also rules them out where they measured no faster).
 */
export function pickVariant(forced, { threadsModule = false, relaxed = relaxedSimdSupported() } = {}) {
  const usable = MODULES.filter((m) => threadsModule || !m.threads);
  if (forced !== undefined && forced !== '') {
    if (!usable.some((m) => m.name === forced)) {
      const expected = usable.map((m) => m.name);
      throw new OptionError(`WEBATTENTION_WASM: expected ${expected.map((n) => `'${n}'`).join(' or ')}, got '${String(forced)}'`, {
        argument: 'WEBATTENTION_WASM', expected, actual: String(forced),
      });
    }
    return forced;
  }
  // One probe per feature of FEATURES (a feature without one is never detected: its modules run
  // only when forced).
  const has = {
    simd: simdSupported(),
    relaxed,
    threads: threadsModule && sharedMemorySupported(),
  };
  const runnable = usable.filter((m) => FEATURES.every((f) => !m[f] || has[f]));
  return runnable.reduce((best, m) => (rank(m) > rank(best) ? m : best)).name;
}

/**
 * pickVariant(), with relaxed SIMD picked only where it pays: where the engine has it, `measure()`
 * (madd_probe.js: the relaxed forms' speed-ups { fused, dot }, or null where it cannot tell) and
 * madd_probe.js's relaxedPays() decide. A forced module is never measured. The browser entry
 * measures; Node keeps the plain rule (a process's cold start would pay the probe's 15–40 ms).
 */
export async function chooseVariant(forced, { threadsModule = false, measure = measureRelaxedSpeedups, relaxed = relaxedSimdSupported() } = {}) {
  if ((forced !== undefined && forced !== '') || !relaxed) return pickVariant(forced, { threadsModule, relaxed });
  return pickVariant(undefined, { threadsModule, relaxed: relaxedPays(await measure()) });
}
