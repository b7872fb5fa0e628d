// Instantiating a WASM module's Emscripten glue on a compiled WebAssembly.Module: the one way the
// calling thread (node_core.js, browser.js) and the pool's workers (worker_core.js) make a core.
/**
 * Instantiates the Emscripten glue `create` on an already compiled WebAssembly.Module (the
 * calling thread compiles it once; workers receive it), resolving to the core (with its Embind
 * objects: cpp/bindings/embind.cpp, core_binding.js) or rejecting.
 * moduleOptions: more Emscripten Module settings (the pthreads modules' locateFile).
 */
export function instantiateCore(create, module, moduleOptions = {}) {
  let fail;
  const failed = new Promise((_, reject) => { fail = reject; });
  const core = create({
    ...moduleOptions,
    instantiateWasm(imports, receiveInstance) {
      WebAssembly.instantiate(module, imports).then((instance) => receiveInstance(instance, module), fail);
      return {};
    },
  });
  return Promise.race([core, failed]);
}

// A pthreads module's glue resolves only once every thread has started; where they cannot (a CSP,
// a server that refuses workers, a thread that fails at its start) it never does: the loaders
// (browser.js, node_threads.js) give up after this long.
const THREADS_MODULE_TIMEOUT_MS = 15000;

/**
 * instantiateCore for a pthreads module: rejects with "no answer in … ms" after
 * THREADS_MODULE_TIMEOUT_MS, or as `failed` does if it rejects first (a thread's own failure).
 */
export async function instantiateThreadsCore(create, module, moduleOptions, failed = new Promise(() => {})) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${THREADS_MODULE_TIMEOUT_MS} ms`)), THREADS_MODULE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([instantiateCore(create, module, moduleOptions), timeout, failed]);
  } finally {
    clearTimeout(timer);
  }
}
