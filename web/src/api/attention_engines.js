// scaledDotProductAttention() and selfAttention() on a backend other than the calling thread's
// WASM (a `backend` option, or GPU-resident tensors). Each such call is routed by a Dispatcher
// (dispatch/dispatch.js) of an attention-only config: one head of widths d_k and d_v, no
// projections and no weights (webgpu/forward_encode.js reads the inputs as Q, K and V). So these
// calls keep a module's rules, from their one place: the NaN rule and the failure policy (the call
// then runs on WASM), 'auto''s threshold, GPU tensors and 'gpu-buffer' results (device_calls.js).
//
// One dispatcher per (backend options, d_k, d_v), made at its first call and kept: its GPU
// executor holds the compiled pipelines and the per-call buffers of those widths. Past MAX_ENGINES
// the least recently used one is disposed, once the calls it has taken have settled (a batched
// call's once its GpuBatch was submitted), and so is one
// left idle for engineHooks.idleMs: nothing holds its GPU buffers for a caller who made one large
// call and went on (a later call makes it again; the device keeps the compiled pipelines).
//
// Calls of the same widths in one GpuBatch (a model's layers, each calling attention at one width)
// would share per-call buffers, so the batch would submit before each (dispatch/gpu_batch.js). The
// n-th such call since the batch's last submit takes the n-th engine of its widths instead (its
// slot), so the batch stays one submit; engines past the first of their widths are not counted in
// MAX_ENGINES (a stack of n layers needs n) and leave when idle.
import { Dispatcher } from '../dispatch/dispatch.js';
import { BATCH } from '../base/batch_protocol.js';
import { attentionConfig } from '../base/attention_only.js';
import { gpuSide } from '../webgpu/gpu_acquisition.js';
import { WasmSdpaExecutor } from '../wasm/wasm_sdpa.js';

/** Dispatchers kept at most (each a set of pipelines and buffers on the GPU). */
export const MAX_ENGINES = 8;
/** idleMs: how long a dispatcher with no call is kept (tests shorten it). */
export const engineHooks = { idleMs: 10_000 };

const objectIds = new WeakMap();  // a `gpu` option (GPU or GPUDevice) → a number for the engines' keys
let lastId = 0;
const idOf = (object) => {
  if (object === undefined || object === null) return 0;
  if (typeof object !== 'object' && typeof object !== 'function') return `(${typeof object})`;  // refused by gpuSide()
  if (!objectIds.has(object)) objectIds.set(object, ++lastId);
  return objectIds.get(object);
};

// The engines of one backend option set and widths share this key (and differ in their slot).
const engineKey = ({ backend, gpu, minFlops }, dk, dv) => `${backend}:${idOf(gpu)}:${minFlops ?? ''}:${dk}:${dv}`;

export class AttentionEngines {
  #engines = new Map();  // key → { key, slot, dispatcher: Promise<Dispatcher>, calls, evicted, idle }, least recently used first
  #runtime;

  /** runtime: api/runtime.js's Runtime (the core, the WebGpuExecutor class). */
  constructor(runtime) {
    this.#runtime = runtime;
  }

  /**
   * Runs plan (resolveSdpa()'s) on the dispatcher of its backendOptions (resolveBackendOptions()'s
   * { backend, gpu, minFlops }) and widths. Resolves to the Dispatcher's result ({ output, weights }).
   */
  async forward(plan) {
    const engine = this.#engine(plan, this.#slotOf(plan));
    engine.calls++;
    clearTimeout(engine.idle);
    try {
      const dispatcher = await engine.dispatcher;
      const result = await dispatcher.forward(plan);
      // A batched call's work reads the engine's per-call buffers at the batch's submit: held till then.
      if (plan.batch) this.#holdUntilSubmitted(engine, plan.batch);
      return result;
    } finally {
      engine.calls--;
      this.#afterCall(engine);
      // Slots count from 0 again once the batch's calls are submitted (at once if it holds none).
      plan.batch?.[BATCH.afterPending](() => this.#batchSlots.delete(plan.batch));
    }
  }

  // A call's slot: 0, or for a batched call the number of calls of its widths made into the batch
  // since its last submit (counted when made, so that calls not awaited in turn get theirs too).
  #batchSlots = new WeakMap();  // GpuBatch → Map(engine key without slot → calls made)
  #slotOf({ batch, dk, dv, backendOptions }) {
    if (!batch) return 0;
    if (!this.#batchSlots.has(batch)) this.#batchSlots.set(batch, new Map());
    const counts = this.#batchSlots.get(batch);
    const key = engineKey(backendOptions, dk, dv);
    const slot = counts.get(key) ?? 0;
    counts.set(key, slot + 1);
    return slot;
  }

  // The engine of a call's key, moved to the most recently used end; a new one made (the oldest
  // evicted past MAX_ENGINES). One that failed to be made is forgotten, so the next call tries again.
  #engine({ dk, dv, backendOptions }, slot) {
    const key = `${engineKey(backendOptions, dk, dv)}:${slot}`;
    let engine = this.#engines.get(key);
    this.#engines.delete(key);
    if (!engine) {
      engine = { key, slot, dispatcher: this.#dispatcher(attentionConfig(dk, dv), backendOptions), calls: 0, evicted: false, idle: null };
      engine.dispatcher.catch(() => {
        if (this.#engines.get(key) === engine) this.#engines.delete(key);
      });
    }
    this.#engines.set(key, engine);
    // (No list made while the engines fit: most calls.)
    const firsts = this.#engines.size > MAX_ENGINES ? [...this.#engines].filter(([, e]) => e.slot === 0) : [];
    for (const [oldKey, old] of firsts.slice(0, Math.max(0, firsts.length - MAX_ENGINES))) {
      this.#engines.delete(oldKey);
      old.evicted = true;
      this.#afterCall(old);
    }
    return engine;
  }

  // A Dispatcher as create_executors.js makes a module's, with the core's SDPA as its WASM executor.
  async #dispatcher(config, backendOptions) {
    const side = await gpuSide(backendOptions, async (found) => {
      const executor = new (await this.#runtime.loadWebGpuExecutor())(config, found);
      await executor.ready;
      return executor;
    });
    const wasm = new WasmSdpaExecutor(await this.#runtime.core());
    const { gpu, gpuMinFlops, measureThreshold = false } = side;
    return new Dispatcher(config, { wasm, gpu, gpuMinFlops, measureThreshold });
  }

  #holdUntilSubmitted(engine, batch) {
    engine.calls++;
    batch[BATCH.afterPending](() => {
      engine.calls--;
      this.#afterCall(engine);
    });
  }

  // Once an engine has no call: disposed now if evicted, else after engineHooks.idleMs without one.
  #afterCall(engine) {
    if (engine.calls > 0) return;
    clearTimeout(engine.idle);
    if (!engine.evicted) {
      engine.idle = setTimeout(() => {
        if (engine.calls > 0 || this.#engines.get(engine.key) !== engine) return;
        this.#engines.delete(engine.key);
        engine.evicted = true;
        this.#afterCall(engine);
      }, engineHooks.idleMs);
      engine.idle.unref?.();  // Node: an idle engine never keeps the process alive
      return;
    }
    engine.dispatcher.then((d) => d.dispose(), () => {});
  }
}
