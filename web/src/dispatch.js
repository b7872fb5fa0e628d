// Where each MultiHeadAttention.forward() runs, decided here and nowhere else.
//
// A module has up to three executors, each implementing the Executor interface below:
//   wasm    the calling thread's WASM instance (wasm_backend.js). Always there: it also answers
//           parameterSpecs() and headBilinearForm(), and reports a missing state dict.
//   pool    the same module on workers of the shared worker pool (pool_executor.js), for
//           threads > 1 on a single-threaded WASM module (the pthreads modules split work inside
//           the wasm executor instead).
//   webgpu  the GPU (webgpu/executor.js), for backend 'webgpu', or 'auto' where WebGPU exists.
// route(plan) picks one per call from the thresholds below, all in FLOPs of forwardFlops().
//
// Failure policy (one place): a worker that fails stops the pool (pool.js) and every later call
// routes to wasm; a GPU call that fails runs again on wasm; if the device was lost the module
// stays on wasm for good ('backend' then reads 'wasm'), otherwise only that call moves; either
// way console.warn says so once and the caller gets a correct result.
import { KvCache } from './decoding.js';
import { BackendError, DisposedError, WebAttentionError } from './errors.js';
import { planWithCopies } from './shapes.js';

/**
 * @typedef {object} ForwardPlan  resolveMhaForward()'s checked call (shapes.js): { B, L, S,
 *   query, key, value, keyPaddingMask, attnMask, isCausal, needWeights, averageAttnWeights,
 *   outputShape, weightsShape }
 * @typedef {{ output: Float32Array, weights: Float32Array | null, path?: string }} ForwardResult
 *   path: the GPU attention kernels used ('flash' | 'decode'), for tests
 * @typedef {{ name: string, data: Float32Array }} StateDictEntry  checked against parameterSpecs()
 * @typedef {object} Executor
 * @property {(entries: StateDictEntry[]) => void} loadStateDict  copies what it keeps
 * @property {(plan: ForwardPlan, config: object) => ForwardResult | Promise<ForwardResult>} forward
 * @property {() => void} dispose  frees what the executor holds (never shared resources)
 */

/**
 * threads 'auto': a call under this many FLOPs stays on the calling thread. A worker round trip
 * costs about 120 µs (Node 20, 2 cores), so below ~10 MFLOP (~0.4 ms on one thread) the pool is
 * slower; at 25 MFLOP it is 1.3× faster.
 */
export const AUTO_MIN_FLOPS = 16e6;

/**
 * How long a pool worker may take to answer a request before it counts as hung: then the pool
 * stops with a WorkerError and its modules carry on on the calling thread. Generous on purpose:
 * 10 s plus the work at 0.1 GFLOP/s (a hundredth of the speed measured in docs/benchmarks.md);
 * requests without work (start, weights, memory) get the 10 s alone. Measured from when the
 * request reaches the head of the worker's queue (a worker answers in order).
 */
export const workerAnswerMs = (flops = 0) => 10_000 + flops / 1e5;

/**
 * Output projections (after head-range tasks) of at least this many FLOPs are split by rows over
 * the workers too: one more round trip, paid for above ~10 MFLOP.
 */
export const SPLIT_PROJECTION_FLOPS = 16e6;

/**
 * backend 'auto': the FLOPs from which a call goes to a hardware GPU. 2^26 ≈ 67 MFLOP is about
 * 2 ms of single-threaded WASM at the 27–32 GFLOP/s in docs/benchmarks.md (≈ 1.3 ms on the pool);
 * below that, the 0.7–0.9 ms fixed cost of a GPU round trip (upload, dispatches, readback) leaves
 * a GPU little to win. docs/webgpu.md says how to measure it for a given GPU (webgpuMinFlops
 * overrides it). A software adapter (SwiftShader) is never used by 'auto' unless webgpuMinFlops
 * is given.
 */
export const DEFAULT_WEBGPU_MIN_FLOPS = 2 ** 26;

/**
 * Work of one MHA forward in FLOPs (multiply-adds ×2): the four projections, the scores and the
 * weighted sum, plus the scores again when weights are asked for (every backend recomputes them
 * in a second pass).
 */
export function forwardFlops(plan, config) {
  const { B, L, S } = plan;
  const { embedDim: E, kdim, vdim, numHeads: H, headDim: dk, valueHeadDim: dv } = config;
  const G = config.numKvHeads ?? H;
  const T = plan.T ?? S;  // keys attended: with a cache, every cached position
  const projections = L * E * H * dk + S * kdim * G * dk + S * vdim * G * dv + L * H * dv * E;
  const attention = H * L * T * (dk + dv) + (plan.needWeights ? H * L * T * dk : 0);
  return 2 * B * (projections + attention);
}

/**
 * Test seam: onRun(where, plan, path) after each forward() of a module that has a GPU (none is
 * reported for a module without one): where = 'webgpu' | 'wasm' (calling thread or pool), path =
 * the GPU attention kernels ('flash' | 'decode').
 */
export const testHooks = { onRun: null };

/** One module's executors and the rules that pick one per call. */
export class Dispatcher {
  #config;
  #wasm;
  #pool;
  #autoThreads;
  #gpu;              // null, or the GPU slot (below)
  #loaded = false;   // loadStateDict() succeeded: before, the wasm executor reports what is missing
  #disposed = false;
  #caches = new Set();  // WeakRefs to this module's KV caches: released with the module

  /**
   * wasm: the calling thread's executor. pool: a PoolExecutor or null; autoThreads: threads
   * 'auto' (the pool only takes calls of AUTO_MIN_FLOPS once its workers are up, never waiting).
   * gpu: null (WASM only), { executor } (a device is there), or { acquire } (backend 'auto': a
   * function resolving to an executor or null, called at the first call that would use it);
   * gpuMinFlops: calls under it stay on WASM.
   */
  constructor(config, { wasm, pool = null, autoThreads = false, gpu = null, gpuMinFlops = 0 }) {
    this.#config = config;
    this.#wasm = wasm;
    this.#pool = pool;
    this.#autoThreads = autoThreads;
    // state: 'pending' (not asked for yet) | 'ready' | 'none' ('auto' found nothing to use)
    this.#gpu = gpu && {
      state: gpu.acquire ? 'pending' : 'ready', executor: gpu.executor ?? null, acquire: gpu.acquire ?? null,
      acquiring: null, pendingEntries: null, minFlops: gpuMinFlops, warned: false,
    };
  }

  /** 'webgpu' while a device is in use, else 'wasm' (not chosen yet, none, or lost). */
  get backend() {
    return this.#gpuUsable() ? 'webgpu' : 'wasm';
  }

  /** Threads forward() computes on: 1 once the pool has failed. */
  get threads() {
    if (this.#pool) return this.#pool.working ? this.#pool.threads : 1;
    return this.#wasm.threads;
  }

  parameterSpecs() {
    return this.#wasm.parameterSpecs();
  }

  /** The GPU executor's kernel profile, or null without one in use. */
  gpuProfile() {
    return this.#gpuUsable() ? this.#gpu.executor.gpuProfile() : null;
  }

  headBilinearForm(head) {
    return this.#wasm.headBilinearForm(head);
  }

  /**
   * A KV cache (options from resolveCacheOptions()), bound at creation to where the module runs
   * then: on the GPU while its WebGPU executor is in use (backend 'webgpu', or 'auto' once a
   * large call has acquired it), else in the calling thread's WASM instance (so an 'auto' cache
   * made before the GPU was acquired stays on WASM). Its calls run there (route() below).
   */
  createCache(options) {
    const owner = this.#gpuUsable() ? this.#gpu.executor : this.#wasm;
    const cache = new KvCache(owner, owner.createCache(options), options);
    this.#caches.add(new WeakRef(cache));
    return cache;
  }

  /** entries: checked against parameterSpecs(). The wasm executor throws before others see them. */
  loadStateDict(entries) {
    this.#wasm.loadStateDict(entries);
    this.#loaded = true;
    if (this.#pool?.working) this.#pool.loadStateDict(entries);
    const gpu = this.#gpu;
    if (gpu?.state === 'pending') {
      // Copied, as the WASM core copies: the caller may reuse its arrays before the upload.
      gpu.pendingEntries = entries.map(({ name, data }) => ({ name, data: data.slice() }));
    } else if (this.#gpuUsable()) {
      gpu.executor.loadStateDict(entries);
    }
  }

  /**
   * Where a call runs now: 'webgpu' | 'pool' | 'wasm'. With { gpu: false } the GPU is not
   * considered (a call whose GPU attempt failed). 'webgpu' while the GPU is still pending means
   * "ask for it first"; 'pool' before the workers are up means "wait for them" (explicit threads).
   */
  route(plan, { gpu: allowGpu = true } = {}) {
    if (!this.#loaded) return 'wasm';
    // A WASM cache lives in the calling thread's memory. The pool declines cache calls: to split a
    // step over workers each would have to hold its heads' part of the cache and get every new
    // row; one step takes 0.5–7 ms on one thread (docs/benchmarks.md, "Incremental decoding"),
    // so a split could save at most part of the attention, less a round trip per step. A cache
    // made on the GPU runs there (whatever its size: its storage is there).
    if (plan.cache) return this.#gpu?.executor && plan.cache.cache.isOf(this.#gpu.executor) ? 'webgpu' : 'wasm';
    const flops = forwardFlops(plan, this.#config);
    const gpu = this.#gpu;
    if (allowGpu && gpu && flops >= gpu.minFlops
      && (gpu.state === 'pending' || (this.#gpuUsable() && gpu.executor.fits(plan, this.#config)))) {
      return 'webgpu';
    }
    const pool = this.#pool;
    // A call with one (batch, K/V head) unit has nothing to split.
    if (pool?.working && plan.B * this.#config.numKvHeads > 1
      && (!this.#autoThreads || (pool.isReady && flops >= AUTO_MIN_FLOPS))) {
      return 'pool';
    }
    return 'wasm';
  }

  /** plan: from resolveMhaForward(). Resolves to a ForwardResult. */
  async forward(plan, config) {
    let where = this.route(plan);
    // A call that may wait before its inputs are read (for the GPU to be found, for earlier GPU
    // calls of this module, for the workers to start) reads them now: into copies.
    if (where === 'webgpu' || (where === 'pool' && !this.#pool.isReady)) plan = planWithCopies(plan).plan;
    if (where === 'webgpu' && this.#gpu.state === 'pending') {
      await this.#acquireGpu();
      this.#live();
      where = this.route(plan);
    }
    if (where === 'webgpu') {
      try {
        const result = await this.#gpu.executor.forward(plan, config);
        testHooks.onRun?.('webgpu', plan, result.path);
        return result;
      } catch (e) {
        if (this.#disposed) throw e;
        // A cache on the GPU cannot move to WASM: the call fails (the module's other calls follow
        // the failure policy).
        if (plan.cache) {
          if (e instanceof WebAttentionError) throw e;  // CacheError, DisposedError
          throw new BackendError(`cache: the WebGPU call on it failed (${e?.message ?? e}); its storage is on that device`, {
            argument: 'cache', expected: 'a working WebGPU device', actual: e?.message ?? String(e),
          });
        }
        await this.#gpuFailed(e);
        where = this.route(plan, { gpu: false });
      }
    }
    if (where === 'pool' && !this.#pool.isReady) {
      await this.#pool.ready;
      this.#live();
      where = this.route(plan, { gpu: false });
    }
    const result = await (where === 'pool' ? this.#pool : this.#wasm).forward(plan, config);
    if (this.#gpu) testHooks.onRun?.('wasm', plan);
    return result;
  }

  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.#gpu) {
      this.#gpu.executor?.dispose();
      this.#gpu.pendingEntries = null;
    }
    for (const ref of this.#caches) ref.deref()?.release('its module was disposed');
    this.#caches.clear();
    this.#pool?.dispose();
    this.#wasm.dispose();
  }

  #gpuUsable() {
    const gpu = this.#gpu;
    return gpu?.state === 'ready' && !gpu.executor.lost;
  }

  // Backend 'auto', first large call: ask for the GPU once (concurrent calls share the asking).
  #acquireGpu() {
    const gpu = this.#gpu;
    gpu.acquiring ??= (async () => {
      let executor = null;
      try {
        executor = await gpu.acquire();
      } catch {
        executor = null;  // 'auto' never fails over WebGPU: WASM it is
      }
      if (this.#disposed || gpu.state !== 'pending') {
        executor?.dispose();
        return;
      }
      gpu.state = executor ? 'ready' : 'none';
      gpu.executor = executor;
      if (executor && gpu.pendingEntries) executor.loadStateDict(gpu.pendingEntries);
      gpu.pendingEntries = null;
    })();
    return gpu.acquiring;
  }

  // The failure policy of a GPU call (see the top of this file).
  async #gpuFailed(error) {
    const { executor } = this.#gpu;
    // A lost device reports through device.lost, which may settle a moment after the failed
    // call: give it that moment before deciding.
    await executor.settleLoss();
    if (executor.lost) {
      const { reason, message } = executor.lost;
      console.warn(`webattention: the WebGPU device was lost (${reason}${message ? `: ${message}` : ''}); `
        + 'this module computes on WASM from now on (mha.backend is \'wasm\')');
      executor.dispose();
    } else if (!this.#gpu.warned) {
      this.#gpu.warned = true;
      console.warn(`webattention: a WebGPU forward() failed (${error?.message ?? error}); that call ran on WASM`);
    }
  }

  #live() {
    if (this.#disposed) {
      throw new DisposedError('MultiHeadAttention.forward: the module was disposed during the call');
    }
  }
}
