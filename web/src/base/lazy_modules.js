// The code a first create(), loadStateDict() and forward() never run, reached where first used:
// lazy_exports.js's internals (quantised-tensor loading, other checkpoint namings, the GPU-tensor
// checks, forward() on a GPU input, encode(), KvCache.keep()'s checks), through a loader each entry sets (setLazyLoader()). The bundled
// Node entry requires that file synchronously on first use (node.js lazyExports()), so these calls
// stay synchronous and the import never parses them (docs/performance/memory_and_startup.md#cold-start); the browser
// entry imports it with the rest (one chunk for a bundler).
let load = null;

/** Sets how lazy_exports.js's module namespace is reached (each entry, once, at its import). */
export function setLazyLoader(loader) {
  load = loader;
}

/** lazy_exports.js's module namespace, loaded on the first call. */
export function lazyModules() {
  if (load === null) throw new Error('webattention: internal error: no entry set the lazy loader (import the package through its entry)');
  return load();
}
