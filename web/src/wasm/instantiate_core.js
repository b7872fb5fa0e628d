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
