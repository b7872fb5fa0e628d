// Node entry: reads the .wasm beside the glue and hands it over (3.1.6's own file loading fails
// under Node >= 18).
import { readFile } from 'node:fs/promises';
import createWebAttentionCore from '../dist/webattention_core.mjs';
import { bindApi } from './api.js';

const api = bindApi(async () => {
  const wasmBinary = await readFile(new URL('../dist/webattention_core.wasm', import.meta.url));
  return createWebAttentionCore({ wasmBinary });
});

export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, ready } = api;
export * from './errors.js';
