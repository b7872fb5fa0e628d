// Node entry: reads the chosen .wasm beside its glue and hands it over (3.1.6's own file loading
// fails under Node >= 18). WEBATTENTION_WASM=scalar|simd forces a module.
import { readFile } from 'node:fs/promises';
import { bindApi } from './api.js';
import { pickVariant } from './variant.js';

const modules = {
  simd: { glue: () => import('../dist/webattention_core.mjs'), wasm: '../dist/webattention_core.wasm' },
  scalar: { glue: () => import('../dist/webattention_core_scalar.mjs'), wasm: '../dist/webattention_core_scalar.wasm' },
};

const api = bindApi(async () => {
  const variant = pickVariant(process.env.WEBATTENTION_WASM);
  const { glue, wasm } = modules[variant];
  const [{ default: create }, wasmBinary] = await Promise.all([glue(), readFile(new URL(wasm, import.meta.url))]);
  return { core: await create({ wasmBinary }), variant };
});

export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready } = api;
export * from './errors.js';
