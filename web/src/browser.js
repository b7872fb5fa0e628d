// Browser entry. Each module's files are found through web/dist/browser_modules.js (generated
// from web/modules.json), in the literal new URL(..., import.meta.url) and new Worker(new URL(...))
// forms that let bundlers find and copy them, or where configure({ wasmPaths }) says
// (browser_files.js); only the module the engine can run is fetched. The glue is imported by URL
// at run time, never by a literal import(): the package's code is one chunk for a bundler, which
// an app's own worker can import with Vite's default worker format.
// globalThis.WEBATTENTION_WASM (a module's name: 'simd' | 'relaxed' | 'scalar' | 'mt' |
// 'mt-relaxed') and WEBATTENTION_THREADS ('auto' | n) override the defaults, as the environment
// variables do in Node.
import { LOADERS } from '../dist/browser_modules.js';
import { bindApi } from './api/api.js';
import { fileUrl, moduleWorkerUrl, scriptBlobUrl } from './browser_files.js';
import { THREADS_VARIANTS, chooseVariant, moduleEntry } from './wasm/variant.js';
import { instantiateCore, instantiateThreadsCore } from './wasm/instantiate_core.js';
import { fetchWasmModule, loadError } from './wasm/wasm_fetch.js';
import { warnOnce } from './base/warn_once.js';
// Statically here (Node imports it lazily): a dynamic import would split a bundle in two chunks.
import { WebGpuExecutor } from './webgpu/webgpu_executor.js';
import * as lazyExports from './lazy_exports.js';
import { setLazyLoader } from './base/lazy_modules.js';

/** `variant`'s Emscripten factory and compiled .wasm; a LoadError names a file that is not there. */
async function fetchModule(variant) {
  const glueUrl = fileUrl(variant, 'glue');
  const [glue, wasm] = await Promise.allSettled([
    import(/* @vite-ignore */ /* webpackIgnore: true */ glueUrl), fetchWasmModule(fileUrl(variant, 'wasm'))]);
  // The .wasm's error first: it says what the server sent (an HTML page) where the import cannot.
  if (wasm.status === 'rejected') throw wasm.reason;
  if (glue.status === 'rejected') throw loadError(glueUrl, `could not be imported (${glue.reason?.message ?? glue.reason})`, 'a failed import');
  return { create: glue.value.default, module: wasm.value, glueUrl };
}

function spawnWorker(variant) {
  const url = fileUrl(variant, 'poolWorker');
  const worker = url ? new Worker(moduleWorkerUrl(url), { type: 'module' }) : LOADERS[variant].poolWorker();
  return {
    post: (message, transfer) => worker.postMessage(message, transfer),
    onMessage: (fn) => { worker.onmessage = (event) => fn(event.data); },
    onFailure: (fn) => {
      worker.onerror = (event) => {
        event.preventDefault?.();
        fn(`failed: ${event.message || 'its script could not be loaded or threw'}`);
      };
      worker.onmessageerror = () => fn('sent a message that could not be read');
    },
    terminate: () => worker.terminate(),
  };
}

// A pthreads module whose workers cannot start (instantiateThreadsCore's time limit) gives way to
// its fallback below.
async function loadThreadsModule(variant) {
  const { create, module, glueUrl } = await fetchModule(variant);
  const { threadWorkerSource } = LOADERS[variant];
  if (!threadWorkerSource) throw new Error('its worker script was not built into web/dist/browser_modules.js');
  const threadWorker = scriptBlobUrl(threadWorkerSource);
  // locateFile: the glue's own worker script (a blob: URL of its text, which works on any
  // origin and under any bundler); that worker imports the glue from mainScriptUrlOrBlob.
  return instantiateThreadsCore(create, module, { locateFile: () => threadWorker, mainScriptUrlOrBlob: glueUrl });
}

setLazyLoader(() => lazyExports);
const api = bindApi(async () => {
  let variant = await chooseVariant(globalThis.WEBATTENTION_WASM, { threadsModule: true });
  if (THREADS_VARIANTS.includes(variant)) {
    try {
      return { core: await loadThreadsModule(variant), variant };
    } catch (e) {
      const { fallback } = moduleEntry(variant);
      warnOnce('threads-module', `webattention: the pthreads module '${variant}' did not start (${e.message ?? e}); `
        + `using the single-threaded '${fallback}' module and the worker pool`);
      variant = fallback;
    }
  }
  const { create, module } = await fetchModule(variant);
  return { core: await instantiateCore(create, module), variant, module };
}, {
  autoThreads: typeof Worker === 'function' ? Math.min(globalThis.navigator?.hardwareConcurrency || 1, 4) : 1,
  defaultThreads: () => globalThis.WEBATTENTION_THREADS ?? 'auto',
  spawnWorker,
  loadWebGpuExecutor: async () => WebGpuExecutor,
  loadCheckpointMappings: async () => lazyExports,
});

export { loadGguf, loadSafetensors, saveSafetensors, attentionOptionsFromConfig } from './lazy_exports.js';
export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready } = api;
export { configure } from './api/configure.js';
export { gpuKernelVariants } from './webgpu/selection/gpu_kernel_pins.js';
export * from './api/public_errors.js';
export { KvCache } from './dispatch/kv_cache.js';
export { GpuBatch } from './dispatch/gpu_batch.js';
export { GpuStep } from './dispatch/gpu_step.js';
