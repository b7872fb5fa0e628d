// Every executor of a module is made here, by createExecutors(): the calling thread's
// WasmExecutor (always), a PoolExecutor (threads > 1 on a single-threaded WASM module) and the
// WebGpuExecutor (now for backend 'webgpu', at the first large call for 'auto'). dispatch.js
// then routes each call to one of them.
import { forwardFlops } from '../base/cost_model.js';
import { coreConfig, resolveBackendOptions } from '../checks/module_config.js';
import { moduleEntry } from '../wasm/variant.js';
import { gpuSide } from '../webgpu/gpu_acquisition.js';
import { PoolExecutor } from '../pool/pool_executor.js';
import { WasmExecutor } from '../wasm/wasm_executor.js';

/**
 * The executors of a module of resolved `config`, from its create() `options` (threads and the
 * backend options, checked here) and the package's `runtime` (runtime.js). Resolves to what the
 * Dispatcher takes: { wasm, pool, autoThreads, gpu, gpuMinFlops, measureThreshold, hostWeights }
 * (hostWeights false: no pool, the WASM side one thread; it never computes).
 */
export async function createExecutors(config, options, runtime) {
  const { threads, auto } = runtime.threads(options.threads);
  // The GPU is looked for before any WASM memory is taken: a BackendError leaves nothing behind.
  // The WebGpuExecutor class (with its WGSL) comes from the entry file: Node imports it only
  // when there is a GPU (importing it costs ~9 ms of a Node cold start that most processes,
  // having no GPU, would pay for nothing); browsers import it statically, since a lazy import
  // would split the package into two chunks for a bundler.
  const backendOptions = resolveBackendOptions(options);
  const side = await gpuSide(backendOptions, async (found) => {
    // The GPU side's config carries the arithmetic its projections and attention may use (create()'s gpuPrecision).
    const executor = new (await runtime.loadWebGpuExecutor())({ ...config, gpuPrecision: backendOptions.gpuPrecision }, found);
    await executor.ready;  // the module's pipelines, compiled before its first call
    return executor;
  });
  const { gpuMinFlops, measureThreshold = false } = side;
  const gpu = backendOptions.expect && side.gpu ? await expectedCalls(side.gpu, backendOptions.expect, config, gpuMinFlops) : side.gpu;
  const loaded = await runtime.load();
  const wasm = new WasmExecutor(loaded.core, config, coreConfig(config));
  let pool = null;
  if (moduleEntry(loaded.variant).threads) {
    // The pthreads module splits work over its own threads in shared memory: no worker pool.
    wasm.threads = threads === 1 || !backendOptions.hostWeights ? 1 : loaded.core.threadCount();
  } else if (threads > 1 && backendOptions.hostWeights) {
    // 'auto' never waits for the workers, so they need not keep Node alive while they start, and
    // starts them only at its first call big enough to use them (dispatch.js).
    pool = new PoolExecutor(wasm, config, { threads, makePool: () => runtime.pool(loaded), keepAlive: !auto });
  }
  return { wasm, pool, autoThreads: auto, gpu, gpuMinFlops, measureThreshold, hostWeights: backendOptions.hostWeights };
}

/**
 * create({ expect }): the expected calls' GPU buffers and pipelines made now (WebGpuExecutor
 * reserve()). 'auto' asks for its GPU now where such a call would go to it (at least its
 * threshold), and is WASM only from the start where it finds none. Returns the GPU side as
 * gpuSide() gave it or as it is now.
 */
async function expectedCalls(gpu, expect, config, minFlops) {
  const plan = { B: expect.batchSize, L: expect.L, S: expect.S, needWeights: false };
  if (!gpu.executor && forwardFlops(plan, config) < minFlops) return gpu;
  const executor = gpu.executor ?? await gpu.acquire().catch(() => null);
  if (!executor) return null;
  await executor.reserve(expect);
  return { executor };
}

