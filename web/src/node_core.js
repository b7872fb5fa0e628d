// The single-threaded WASM modules under Node (web/modules.json; the pthreads ones, opt-in:
// node_threads.js): how one is
// loaded (node.js on the calling thread, node_worker.js for the glue alone in pool workers,
// bench/ scripts). Node needs no literal import paths (no bundler), so they come from the
// manifest. The .wasm is read and compiled here, not by the glue: 3.1.6's own file loading fails
// under Node >= 18.
import { readFile } from 'node:fs/promises';
import { moduleEntry } from './wasm/variant.js';
import { instantiateCore } from './wasm/instantiate_core.js';

/** web/dist/<stem><ext> of module `variant`. */
export function distUrl(variant, ext) {
  const entry = moduleEntry(variant);
  if (!entry) throw new Error(`webattention: no WASM module '${variant}'`);
  return new URL(`../dist/${entry.stem}${ext}`, import.meta.url);
}

/** The Emscripten factory of `variant`. */
export async function loadGlue(variant) {
  return (await import(distUrl(variant, '.mjs').href)).default;
}

/** `variant`'s glue factory and its .wasm, read and compiled once: { create, module }. */
export async function loadGlueAndModule(variant) {
  const [create, module] = await Promise.all([loadGlue(variant),
    readFile(distUrl(variant, '.wasm')).then((bytes) => WebAssembly.compile(bytes))]);
  return { create, module };
}

/**
 * A single-threaded module, compiled once and instantiated: { core, variant, module } (the pool's
 * workers get `module`, already compiled).
 */
export async function loadNodeCore(variant) {
  if (moduleEntry(variant)?.threads) throw new Error(`webattention: '${variant}' is a pthreads module (node_threads.js loads it)`);
  const { create, module } = await loadGlueAndModule(variant);
  return { core: await instantiateCore(create, module), variant, module };
}
