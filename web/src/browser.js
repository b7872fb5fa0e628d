// Browser entry: the literal new URL(..., import.meta.url) and import(...) forms let bundlers
// find and copy both modules; only the one the engine can run is fetched.
import { bindApi } from './api.js';
import { pickVariant } from './variant.js';

const modules = {
  simd: {
    glue: () => import('../dist/webattention_core.mjs'),
    wasm: () => new URL('../dist/webattention_core.wasm', import.meta.url).href,
  },
  scalar: {
    glue: () => import('../dist/webattention_core_scalar.mjs'),
    wasm: () => new URL('../dist/webattention_core_scalar.wasm', import.meta.url).href,
  },
};

const api = bindApi(async () => {
  const variant = pickVariant(globalThis.WEBATTENTION_WASM);
  const { glue, wasm } = modules[variant];
  const { default: create } = await glue();
  return { core: await create({ locateFile: () => wasm() }), variant };
});

export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready } = api;
export * from './errors.js';
