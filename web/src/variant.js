// Which WASM module to load: on cross-origin-isolated pages a pthreads build ('mt-relaxed' where
// the engine validates relaxed SIMD, else 'mt': SIMD128 + threads), else the relaxed-SIMD build
// ('relaxed': SIMD128 with f32x4.relaxed_madd) where the engine validates relaxed SIMD, else the
// SIMD128 build where it validates SIMD code, else the scalar build. `forced` ('simd' |
// 'relaxed' | 'scalar' | 'mt' | 'mt-relaxed') overrides detection (tests, debugging).

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
export const THREADS_VARIANTS = ['mt', 'mt-relaxed'];

/** threadsModule: whether this platform can run the pthreads modules at all (browsers only). */
export function pickVariant(forced, { threadsModule = false } = {}) {
  const known = threadsModule ? ['simd', 'relaxed', 'scalar', ...THREADS_VARIANTS] : ['simd', 'relaxed', 'scalar'];
  if (forced !== undefined && forced !== '') {
    if (!known.includes(forced)) {
      throw new Error(`WEBATTENTION_WASM: expected ${known.map((k) => `'${k}'`).join(' or ')}, got '${forced}'`);
    }
    return forced;
  }
  if (!simdSupported()) return 'scalar';
  if (threadsModule && sharedMemorySupported()) return relaxedSimdSupported() ? 'mt-relaxed' : 'mt';
  return relaxedSimdSupported() ? 'relaxed' : 'simd';
}
