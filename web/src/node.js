// Node entry: loads the chosen module once (node_core.js; the pool's workers get the compiled
// module). WEBATTENTION_WASM=<name> forces a module (web/modules.json: simd|relaxed|scalar, or
// the pthreads mt|mt-relaxed, loaded by node_threads.js when asked for);
// WEBATTENTION_THREADS=auto|<n> sets the default of create()'s `threads` option. Workers are worker_threads, unreferenced while idle.
import os from 'node:os';
import { bindApi } from './api/api.js';
import { loadNodeCore } from './node_core.js';
import { takeEarlyLoad } from './node_early.js';
import { moduleEntry, pickVariant } from './wasm/variant.js';
import { setLazyLoader } from './base/lazy_modules.js';

// Pool workers get no node flags (execArgv: []). By default a Worker inherits the process's, and
// it refuses those that are per process (--max-old-space-size, --expose-gc, V8's
// --experimental-wasm-*: a refused flag failed the pool silently), while --input-type stops it from
// loading a file. V8 flags hold for the whole process, workers included (relaxed SIMD on Node 20
// still validates in them), and the worker's own code needs no node option.
// node:worker_threads is loaded on the first spawn: its import is ~2 ms of a cold start that a
// process with threads: 1 (or only small calls) never needs. process.getBuiltinModule (Node >=
// 20.16) hands it over at once; older Node imports it. (A createRequire() from node:module,
// imported for this, cost every cold start's import ~0.4 ms.)
async function spawnWorker(variant) {
  const { Worker } = process.getBuiltinModule?.('node:worker_threads') ?? await import('node:worker_threads');
  const worker = new Worker(new URL('./node_worker.js', import.meta.url), {
    name: `webattention ${variant}`, execArgv: [],
  });
  return {
    post: (message, transfer) => worker.postMessage(message, transfer),
    onMessage: (fn) => worker.on('message', fn),
    onFailure: (fn) => {
      worker.on('error', (e) => fn(`threw ${e?.name ?? 'an error'}: ${e?.message ?? e}`));
      worker.on('messageerror', () => fn('sent a message that could not be read'));
      worker.on('exit', (code) => fn(`exited (code ${code})`));
    },
    terminate: () => { worker.terminate(); },
    ref: () => worker.ref(),
    unref: () => worker.unref(),
  };
}

// lazy_exports.js, loaded where first used: require() takes an ES module synchronously where Node
// can (process.features.require_module: Node >= 20.19, 22.12; with process.getBuiltinModule to
// reach node:module without importing it at every cold start), so that loadGguf(),
// loadSafetensors(), saveSafetensors(), attentionOptionsFromConfig() and the internals that
// base/lazy_modules.js reaches stay synchronous; it shares the module instances the import loaded
// (one errors.js); node:module is reached only then (createRequire() at import cost a cold start
// ~1 ms). Older Node imports it with the entry, as before.
const canRequire = process.features?.require_module && typeof process.getBuiltinModule === 'function';
const imported = canRequire ? null : await import('./lazy_exports.js');
let required = null;
const lazyExports = () => imported
  ?? (required ??= process.getBuiltinModule('node:module').createRequire(import.meta.url)('./lazy_exports.js'));
setLazyLoader(lazyExports);

// A pthreads module only where WEBATTENTION_WASM names one: detection never picks one here (no
// cross-origin isolation in Node). node_threads.js is imported then only (it imports
// node:worker_threads, ~2 ms of a cold start).
const loadCore = () => {
  const variant = pickVariant(process.env.WEBATTENTION_WASM, { threadsModule: true });
  const entry = moduleEntry(variant);
  if (entry.threads) return import('./node_threads.js').then(({ loadNodeThreadsCore }) => loadNodeThreadsCore(entry));
  return takeEarlyLoad(variant) ?? loadNodeCore(variant);
};
const api = bindApi(loadCore, {
  autoThreads: Math.min(os.availableParallelism?.() ?? os.cpus().length, 4),
  defaultThreads: () => {
    const env = process.env.WEBATTENTION_THREADS;
    return env === undefined || env === '' ? 'auto' : /^[0-9]+$/.test(env) ? Number(env) : env;
  },
  spawnWorker,
  loadWebGpuExecutor: async () => (await import('./webgpu/webgpu_executor.js')).WebGpuExecutor,
  loadCheckpointMappings: async () => lazyExports(),
  // The module's file is read and compiled from the import on (its read, compile and instantiate
  // were ~4 ms of a cold start's first create(), docs/performance/memory_and_startup.md#cold-start):
  // a process that imports the package means to compute with it, and configure()'s wasmPaths,
  // which Node ignores, stays open.
  preload: true,
});

export function loadSafetensors(bytes, options) {
  return lazyExports().loadSafetensors(bytes, options);
}
export function loadGguf(bytes, options) {
  return lazyExports().loadGguf(bytes, options);
}
export function saveSafetensors(tensors, options) {
  return lazyExports().saveSafetensors(tensors, options);
}
export function attentionOptionsFromConfig(config, options) {
  return lazyExports().attentionOptionsFromConfig(config, options);
}
export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready } = api;
export { configure } from './api/configure.js';
export { gpuKernelVariants } from './webgpu/selection/gpu_kernel_pins.js';
export * from './api/public_errors.js';
export { KvCache } from './dispatch/kv_cache.js';
export { GpuBatch } from './dispatch/gpu_batch.js';
export { GpuStep } from './dispatch/gpu_step.js';
