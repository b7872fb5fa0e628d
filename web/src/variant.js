// Which WASM module to load: the SIMD128 build where the engine validates SIMD code, else the
// scalar build. `forced` ('simd' | 'scalar') overrides detection (tests, debugging).

// A minimal module whose one function uses SIMD (i32x4.splat + i8x16.popcnt): valid only on
// engines with WASM SIMD.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15,
  253, 98, 11,
]);

export function simdSupported() {
  return WebAssembly.validate(SIMD_PROBE);
}

export function pickVariant(forced) {
  if (forced !== undefined && forced !== '') {
    if (forced !== 'simd' && forced !== 'scalar') {
      throw new Error(`WEBATTENTION_WASM: expected 'simd' or 'scalar', got '${forced}'`);
    }
    return forced;
  }
  return simdSupported() ? 'simd' : 'scalar';
}
