// The WASM modules under Node: each variant's glue and .wasm, and how one is loaded (node.js on
// the calling thread, node_worker.js for the glue alone in pool workers, bench/ scripts). The
// .wasm is read and compiled here, not by the glue: 3.1.6's own file loading fails under
// Node >= 18.
import { readFile } from 'node:fs/promises';
import { instantiateCore } from './wasm_backend.js';

const modules = {
  simd: { glue: () => import('../dist/webattention_core.mjs'), wasm: '../dist/webattention_core.wasm' },
  relaxed: { glue: () => import('../dist/webattention_core_relaxed.mjs'), wasm: '../dist/webattention_core_relaxed.wasm' },
  scalar: { glue: () => import('../dist/webattention_core_scalar.mjs'), wasm: '../dist/webattention_core_scalar.wasm' },
};

/** The Emscripten factory of `variant` ('simd' | 'relaxed' | 'scalar'). */
export async function loadGlue(variant) {
  return (await modules[variant].glue()).default;
}

/**
 * Compiles `variant`'s .wasm once and instantiates it: { core, variant, module } (the pool's
 * workers get `module`, already compiled).
 */
export async function loadNodeCore(variant) {
  const [create, module] = await Promise.all([loadGlue(variant),
    readFile(new URL(modules[variant].wasm, import.meta.url)).then((bytes) => WebAssembly.compile(bytes))]);
  return { core: await instantiateCore(create, module), variant, module };
}
