// Where each MultiHeadAttention.forward() runs, decided here and nowhere else.
//
// A module has up to three executors (pool/, wasm/, webgpu/; made by api/create_executors.js), each
// implementing the Executor interface (base/call_plan.js):
//   wasm    the calling thread's WASM instance (WasmExecutor). Always there: it also answers
//           parameterSpecs() and headBilinearForm(), and reports a missing state dict.
//   pool    the same module on workers of the shared worker pool (PoolExecutor), for threads > 1
//           on a single-threaded WASM module (the pthreads modules split work inside the wasm
//           executor instead).
//   webgpu  the GPU (WebGpuExecutor), for backend 'webgpu', or 'auto' where WebGPU exists.
// route(plan) picks one per call, once, from the thresholds of cost_model.js (all in FLOPs of
// forwardFlops()) and the state after the waiting: forward() first lets an 'auto' module's first
// large call find the GPU; a pool whose workers are still starting is waited for by the pool
// executor, after the decision. A plain call with a NaN or an infinity in view stays on the CPU
// (finite_inputs.js: the GPU's attention kernels promise nothing for them); a call on a cache
// stored on the GPU stays there, where the NaN rule's kernels apply the rule
// (webgpu/kernels/nonfinite_rows.wgsl.js).
//
// Failure policy (one place): a worker that fails stops the pool (pool.js) and every later call
// routes to wasm; a GPU call that fails runs again on the CPU executor route() chose as its
// fallback (pool or wasm); if the device was lost the module stays off the GPU for good
// ('backend' then reads 'wasm'), otherwise only that call moves; either way console.warn says so
// once and the caller gets a correct result. A call with GPU-resident tensors (a GPU input, or
// output 'gpu-buffer') has its own rules: dispatch/device_calls.js. So does a module that keeps
// its weights on the GPU only (create()'s hostWeights: false): each load goes through the core's
// checks and is then freed there, and a call route() sends to the CPU is a typed error
// (off_gpu.js requireGpu()), as is a load of weights the GPU promises nothing for.
import { AUTO_MIN_FLOPS, forwardFlops } from '../base/cost_model.js';
import { deviceInputs, isDeviceCall } from '../base/gpu_tensors.js';
import { BackendError, DisposedError, StateDictError, WebAttentionError } from '../base/errors.js';
import { finiteInputs, finiteWeights } from './finite_inputs.js';
import { ownedPlan } from '../base/call_plan.js';
import { HostCopies } from '../base/host_copies.js';
import { acquireGpu, gpuFailed, gpuSlot } from './gpu_slot.js';
import { copyEntries } from '../storage/state_dict.js';
import { KvCache } from './kv_cache.js';
import { lazyModules } from '../base/lazy_modules.js';
import { deviceThreshold, moduleThreshold, sampleBoth, thresholdReport, wantsSample } from './auto_threshold.js';
import { WEIGHTS_ON_GPU_ONLY, incompleteWeights, requireGpu } from './off_gpu.js';

// Executor and ForwardPlan: base/call_plan.js's typedefs. 'auto''s measured threshold: auto_threshold.js.

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
  #disposed = false;
  #caches = new Set();  // WeakRefs to this module's KV caches: released with the module
  // Order of effects: calls that have not read their weights yet (waiting for the GPU, for the
  // workers, for earlier GPU calls, for a deferred load), and the load waiting for them, if any.
  #unbound = new Set();
  #loading = null;
  #finiteWeights = true;  // the loaded weights hold no NaN or ±Inf (finite_inputs.js): the GPU may take calls
  #hostWeights;  // false: the core frees its copy after each load, the GPU's is the only one
  #copies = new HostCopies();

  /**
   * wasm: the calling thread's WasmExecutor. pool: a PoolExecutor or null; autoThreads: threads
   * 'auto' (the pool only takes calls of AUTO_MIN_FLOPS once its workers are up, never waiting).
   * gpu: null (WASM only), { executor } (a device is there), or { acquire } (backend 'auto': a
   * function resolving to an executor or null, called at the first call that would use it);
   * gpuMinFlops: calls under it stay on WASM (measureThreshold: until the GPU is there; then its
   * device's measured threshold, auto_threshold.js). hostWeights: false for a module whose weights
   * live on the GPU only (backend 'webgpu', no pool: checks/module_config.js).
   */
  constructor(config, { wasm, pool = null, autoThreads = false, gpu = null, gpuMinFlops = 0, measureThreshold = false, hostWeights = true }) {
    this.#config = config;
    this.#hostWeights = hostWeights;
    this.#wasm = wasm;
    this.#pool = pool;
    this.#autoThreads = autoThreads;
    this.#gpu = gpuSlot(gpu, gpuMinFlops, measureThreshold);
  }

  /** 'webgpu' while a device is in use, else 'wasm' (not chosen yet, none, or lost); always 'webgpu' with hostWeights: false (no WASM copy). */
  get backend() {
    return this.#gpuUsable() || !this.#hostWeights ? 'webgpu' : 'wasm';
  }

  /** Threads forward() computes on: 1 once the pool has failed. */
  get threads() {
    if (this.#pool) return this.#pool.working ? this.#pool.threads : 1;
    return this.#wasm.threads;
  }

  parameterSpecs() {
    return this.#wasm.parameterSpecs();
  }

  /** The GPU executor's kernel profile and the module's GPU threshold, or null without one in use. */
  gpuProfile() {
    return this.#gpuUsable() ? { ...this.#gpu.executor.gpuProfile(), autoThreshold: thresholdReport(this.#gpu) } : null;
  }

  /** The GPUDevice in use, or null (as gpuProfile()). */
  get gpuDevice() {
    return this.#gpuUsable() ? this.#gpu.executor.device : null;
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
    return KvCache.make(owner, owner.createCache(options), options, this.#adoptCache);
  }

  // A cache of this module, made or forked: released with the module (dispose()).
  #adoptCache = (cache) => this.#caches.add(new WeakRef(cache));

  /**
   * encode()'s cache (plan from resolveEncode()), after a load made before it, stored where
   * encode_call.js says (the GPU while its executor is in use, else the calling thread's WASM);
   * its calls then run there (route()). The plan's arrays are copied first when it waits.
   */
  async encode(plan) {
    let owned = plan;
    if (this.#loading) {
      owned = ownedPlan(plan);  // one copy of a tensor passed as both key and value: projected once
      await this.#loading;
      this.#live();
    }
    const options = { batchSize: owned.B, maxLength: owned.S, window: 0, dtype: owned.dtype, encoded: true };
    const { owner, storage } = await lazyModules().encodeStorage(this.#deviceSide, owned).catch((e) => {
      this.#live();
      throw e;
    });
    if (this.#disposed) storage.delete();
    this.#live();
    return KvCache.make(owner, storage, options, this.#adoptCache);
  }

  /**
   * entries: checked against parameterSpecs(), the package's own copies. A call made before this
   * load computes with the weights it was made under: while such calls still wait (the GPU, the
   * workers), the load waits for them, and calls made after it wait for the load. Else it loads
   * now, and the wasm executor throws (memory only) before the others see the entries.
   */
  loadStateDict(entries) {
    // Scanned for a module that has a GPU side only: the scan is the GPU's rule (a CPU module's load
    // would pay ~1 ms per 4 MB of weights for nothing). Refused now, not when a deferred load runs.
    const finite = this.#gpu ? finiteWeights(entries, this.#config.weightsDtype) : true;
    if (!finite && !this.#hostWeights) {
      throw new StateDictError(`loadStateDict: the weights hold a NaN or an infinity, which the GPU kernels promise nothing for, ${WEIGHTS_ON_GPU_ONLY}`, {
        argument: 'stateDict', expected: 'finite weights', actual: 'non-finite weights',
      });
    }
    if (this.#unbound.size === 0 && !this.#loading) {
      this.#load(entries, finite);
      return;
    }
    // Kept for later: copies (the entries may be the caller's memory: state_dict.js).
    const kept = copyEntries(entries);
    const loading = Promise.allSettled([...this.#unbound, this.#loading]).then(() => {
      if (!this.#disposed) this.#load(kept, finite);
    }).catch((e) => {
      // Only memory fails past the checks (the documented reset); no caller awaits a load.
      console.warn(`webattention: a loadStateDict() that waited for earlier calls failed (${e?.message ?? e}); `
        + 'the module has no weights until a load succeeds');
    }).finally(() => {
      if (this.#loading === loading) this.#loading = null;
    });
    this.#loading = loading;
  }

  #load(entries, finite) {
    this.#wasm.loadStateDict(entries);
    if (this.#gpu) this.#finiteWeights = finite;
    if (this.#pool?.working) this.#pool.loadStateDict(entries);
    const gpu = this.#gpu;
    if (gpu?.state === 'pending') {
      gpu.pendingEntries = copyEntries(entries);  // uploaded once the GPU is there
    } else if (this.#gpuUsable()) {
      gpu.executor.loadStateDict(entries);
    }
    // Checked, quantised and uploaded as any module's: now the GPU's copy is the only one.
    if (!this.#hostWeights) this.#wasm.releaseWeights();
  }

  /**
   * Where a call runs, decided once per call from the state after forward()'s waiting: { where:
   * 'webgpu' | 'pool' | 'wasm', fallback: where a call whose GPU attempt failed runs, 'pool' |
   * 'wasm', sample: whether it runs on the CPU and the GPU both, timed (auto_threshold.js) }.
   * 'pool' before the workers are up (explicit threads) runs once they are (the pool executor
   * waits for them).
   */
  route(plan) {
    // Until the core has every entry (before a first load, after one that failed part-way), calls
    // go to it, which refuses them naming what is missing (the pool's and GPU's weights unused).
    if (!this.#wasm.complete) return { where: 'wasm', fallback: 'wasm' };
    // A WASM cache lives in the calling thread's memory. The pool declines cache calls: to split a
    // step over workers each would have to hold its heads' part of the cache and get every new
    // row; one step takes 0.5–7 ms on one thread (docs/performance/decode.md#decode),
    // so a split could save at most part of the attention, less a round trip per step. A cache
    // made on the GPU runs there (whatever its size: its storage is there) and cannot fall back.
    if (plan.cache) {
      const onGpu = this.#gpu?.executor && plan.cache.kvCache.isOf(this.#gpu.executor);
      return { where: onGpu ? 'webgpu' : 'wasm', fallback: null };
    }
    const flops = forwardFlops(plan, this.#config);
    const pool = this.#pool;
    // A call with one (batch, K/V head) unit has nothing to split.
    const poolWanted = pool?.working && plan.B * this.#config.numKvHeads > 1 && (!this.#autoThreads || flops >= AUTO_MIN_FLOPS);
    // 'auto' starts its workers after the first call that wants them (which runs here).
    if (poolWanted && !pool.started) pool.startSoon();
    const cpu = poolWanted && (!this.#autoThreads || pool.isReady) ? 'pool' : 'wasm';
    // The GPU promises nothing for a NaN or an infinity a row sees: such a call runs on the CPU.
    // A GPU input (device_calls.js) is on the device already: no threshold, and no NaN scan of it (a readback).
    const wanted = plan.onDevice || this.#gpuWanted(plan, flops);
    // Near an 'auto' module's measured threshold it runs on both (auto_threshold.js).
    const sample = !plan.onDevice && this.#gpu?.measureThreshold && this.#gpuUsable() && wantsSample(deviceThreshold(this.#gpu.executor.device), flops);
    const gpu = (wanted || sample) && this.#gpuUsable() && this.#gpu.executor.fits(plan) && this.#finiteWeights && finiteInputs(plan);
    return { where: gpu && wanted ? 'webgpu' : cpu, fallback: cpu, sample: Boolean(gpu && sample) };
  }

  /**
   * plan: from resolveMhaForward(). A ForwardResult, or a promise of one: a host call on a cache with
   * no load pending waits for nothing (#gpuWanted() leaves cache calls where their cache is), so it
   * is queued now, as #forward would after its waiting (a WASM step then returns no promise: each
   * await cost a Firefox decode step ~5 µs). An unread-weights call holds back later loads till it settles.
   */
  forward(plan) {
    const call = { bound: false };
    const now = plan.cache && !isDeviceCall(plan) && !this.#loading;
    // A plain call's copies of its inputs are reused arrays (host_copies.js); a cache may hold its
    // last call's inputs (keep()), and a GPU-tensor call has its own rules (device_calls.js).
    const lease = plan.cache || isDeviceCall(plan) ? null : this.#copies.lease();
    const result = now ? this.#enqueueCached(plan, this.route(plan).where, call) : this.#forward(plan, call, lease?.copy);
    if (lease) result.then(lease.release, lease.release);
    if (!call.bound) {
      this.#unbound.add(result);
      const done = () => this.#unbound.delete(result);
      result.then(done, done);
    }
    return result;
  }

  // forward()'s body; sets call.bound where the call reads its weights before its first await.
  // copyOf: the call's copies of its inputs, reused arrays held until it settles (host_copies.js).
  async #forward(given, call, copyOf) {
    // The waiting first: a load made before this call, then an 'auto' module's GPU, looked for at its
    // first large call. A call that waits, or reads its inputs after an await (on the GPU, or on a
    // pool whose workers are not up), owns copies of them first (base/call_plan.js ownedPlan()):
    // the caller may change them after. A ready pool posts copies to its workers before its first await.
    let plan = given;
    // A call with GPU-resident tensors wants the GPU whatever its size (device_calls.js).
    const device = isDeviceCall(plan);
    const wantsGpu = () => this.#gpu?.state === 'pending' && (device || this.#gpuWanted(plan));
    if (this.#loading || wantsGpu()) plan = ownedPlan(plan, copyOf);
    if (this.#loading) {
      await this.#loading;
      this.#live();
    }
    if (wantsGpu()) {
      await acquireGpu(this.#gpu, () => this.#disposed);
      this.#live();
    }
    if (device) return lazyModules().forwardOnDevice(this.#deviceSide, plan);
    const { where, fallback, sample } = this.route(plan);
    if (plan.cache) return this.#enqueueCached(plan, where, call);
    requireGpu(this.#deviceSide, plan, where);
    if (sample) return this.#sampled(ownedPlan(plan, copyOf), where, fallback);
    if (where === 'webgpu' || (where === 'pool' && !this.#pool.isReady)) plan = ownedPlan(plan, copyOf);
    // The calling thread computes at once; a ready pool starts every share before its first await.
    call.bound = where === 'wasm' || (where === 'pool' && this.#pool.isReady);
    if (where === 'webgpu') {
      try {
        const result = await this.#gpu.executor.forward(plan);
        testHooks.onRun?.('webgpu', plan, result.path);
        return result;
      } catch (e) {
        this.#live();  // disposed during the call: a DisposedError, whatever the GPU said
        await gpuFailed(this.#gpu, e, this.#hostWeights, this.#hostWeights);
        requireGpu(this.#deviceSide, plan, fallback, e);
      }
    }
    const result = await ((where === 'webgpu' ? fallback : where) === 'pool' ? this.#pool : this.#wasm).forward(plan);
    if (this.#gpu) testHooks.onRun?.('wasm', plan);
    return result;
  }

  // A call sampled for the device's threshold (auto_threshold.js): on the CPU executor and the GPU,
  // both reported to onRun; the result is that of where route() sent it.
  async #sampled(plan, where, cpu) {
    const { executor } = this.#gpu;
    const ran = await sampleBoth(executor.device, forwardFlops(plan, this.#config), () => this.#deviceSide.cpu(cpu).forward(plan), () => executor.forward(plan), () => executor.busy);
    testHooks.onRun?.('wasm', plan);
    if (ran.gpuError) {
      this.#live();
      await gpuFailed(this.#gpu, ran.gpuError);
      return ran.cpu;
    }
    testHooks.onRun?.('webgpu', plan, ran.gpu.path);
    return where === 'webgpu' ? ran.gpu : ran.cpu;
  }

  // What device_calls.js and encode_call.js read of this dispatcher, made once.
  #deviceSide = {
    executor: () => (this.#gpuUsable() ? this.#gpu.executor : null),
    complete: () => this.#wasm.complete,
    finiteWeights: () => this.#finiteWeights,
    hostWeights: () => this.#hostWeights,
    route: (plan) => this.route(plan),
    cpu: (where) => (where === 'pool' ? this.#pool : this.#wasm),
    enqueueCached: (plan, where) => this.#enqueueCached(plan, where, { bound: false }),
    gpuFailed: (error, ranOnCpu) => gpuFailed(this.#gpu, error, ranOnCpu && this.#hostWeights, this.#hostWeights),
    onRun: (where, plan, path) => testHooks.onRun?.(where, plan, path),
    // encode_call.js: an 'auto' module's first look for its GPU, made by a call with GPU tensors.
    acquire: async () => {
      if (this.#gpu?.state !== 'pending') return;
      await acquireGpu(this.#gpu, () => this.#disposed);
      this.#live();
    },
  };

  // A call with a cache: its storage on the executor `where` names, looked up here once and put in
  // the plan (cache.storage: the executor never asks the KvCache), then the call is queued on it.
  #enqueueCached(plan, where, call) {
    const { kvCache } = plan.cache;
    // Before a complete load route() sends the call to the core, where a GPU cache cannot go.
    if (where !== 'webgpu' && !this.#wasm.complete && this.#gpu?.executor && kvCache.isOf(this.#gpu.executor)) throw incompleteWeights('forward');
    plan.cache.storage = kvCache.handleFor(where === 'webgpu' ? this.#gpu.executor : this.#wasm);
    // Up front, before it is queued: a cache on the GPU cannot move a call that does not fit.
    if (where === 'webgpu') this.#gpu.executor.checkCachedFits(plan);
    const queued = where === 'webgpu' || kvCache.busy ? ownedPlan(plan) : plan;
    // A call on GPU tensors leaves nothing a later keep() could write moved rows again from.
    return kvCache.enqueue(plan.cache, () => this.#forwardCached(queued, where, call), deviceInputs(plan).length === 0, plan.batch);
  }

  // A call with a cache, in its cache's queue (KvCache.enqueue()), where the cache is: on WASM at once; on
  // the GPU a failure rejects (the storage is there), the module's other calls follow the failure policy.
  #forwardCached(plan, where, call) {
    this.#live();
    if (where !== 'webgpu') {
      call.bound = true;  // too late to matter when the cache's queue ran it later
      const result = this.#wasm.forward(plan);
      if (this.#gpu) testHooks.onRun?.('wasm', plan);
      return result;
    }
    return this.#gpu.executor.forward(plan).then((result) => {
      testHooks.onRun?.('webgpu', plan, result.path);
      return result;
    }, (e) => {
      this.#live();
      if (e instanceof WebAttentionError) throw e;  // CacheError, DisposedError
      throw new BackendError(`cache: the WebGPU call on it failed (${e?.message ?? e}); its storage is on that device`, {
        argument: 'cache', expected: 'a working WebGPU device', actual: e?.message ?? String(e),
      });
    });
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
    this.#copies.clear();
  }

  // Whether a call is one the GPU should take, if there is one: a plain call (a cache call runs
  // where its cache is) of at least the module's GPU threshold, once a state dict is loaded.
  #gpuWanted(plan, flops = forwardFlops(plan, this.#config)) {
    // A module whose weights live on the GPU only has no other place: no threshold.
    return this.#wasm.complete && !plan.cache && this.#gpu !== null && (!this.#hostWeights || flops >= moduleThreshold(this.#gpu));
  }

  #gpuUsable() {
    const gpu = this.#gpu;
    return gpu?.state === 'ready' && !gpu.executor.lost;
  }

  #live() {
    if (this.#disposed) {
      throw new DisposedError('MultiHeadAttention.forward: the module was disposed during the call');
    }
  }
}
