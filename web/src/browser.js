// Browser entry: the literal new URL(..., import.meta.url) lets bundlers find and copy the .wasm.
import createWebAttentionCore from '../dist/webattention_core.mjs';
import { bindApi } from './api.js';

const api = bindApi(() => createWebAttentionCore({
  locateFile: () => new URL('../dist/webattention_core.wasm', import.meta.url).href,
}));

export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, ready } = api;
export * from './errors.js';
