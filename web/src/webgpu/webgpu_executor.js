// The WebGPU executor (dispatch.js's Executor): one module's state on a GPUDevice — its weights,
// uploaded by loadStateDict() and kept on the GPU, and a cache of per-call buffers — and
// forward() on it (forward_pass.js encodes the kernels). It never falls back by itself: a call
// it cannot take is refused by fits(), a call that fails throws, and dispatch.js decides what
// happens then (its failure policy), reading `lost` to tell a lost device from other errors.
//
// Per-call buffers (inputs, masks, Q/K/V, heads, row stats, decode partials, weights, output,
// readback, uniforms) come from a cache keyed by role: a role's buffer is reused while it is big
// enough and replaced by one of the next power of two (at least 256 bytes, capped at the device's
// limits) when a call needs more. Storage bindings name the bytes the call uses, so a larger
// buffer is harmless. GPU calls of one module are serialised (a promise chain) so that two
// overlapping forward() calls never share those buffers; calls of different modules still
// overlap. The cache is destroyed by dispose(), when the device is lost, and after a failed GPU
// call (whose buffers may be left mapped or half-written).
import { BackendError, WebAttentionError } from '../base/errors.js';
import { BATCH } from '../base/batch_protocol.js';
import { weightsPerBatch } from '../base/call_plan.js';
import { addModuleDevice } from '../base/module_devices.js';
import { cachedPasses } from './cached_passes.js';
import { recordSubmitted } from './batch_records.js';
import { checkCachedCall, checkKeepRows, storageLost } from './cache_checks.js';
import { GpuKvCache } from './gpu_kv_cache.js';
import { keptRows } from './cache_keep.js';
import { FLASH_BR, flashKeyTile } from './kernels/flash_attention.wgsl.js';
import { LINEAR_TILE } from './kernels/linear.wgsl.js';
import { DeviceLost, cdiv, reserveBuffers, runForwardPass, untilRecordable } from './forward_pass.js';
import { F32, STORAGE_IN } from './encoding_context.js';
import { expectedPlan } from './expected_call.js';
import { warmCachePipelines, warmPipelines } from './warm_pipelines.js';
import { attentionPath } from './selection/attention_path.js';
import { kernelProfile, precisionProfile } from './selection/kernel_profile.js';
import { selectsKernels } from './selection/kernel_selection.js';
import { StagingUploads } from './staging_uploads.js';
import { BufferPool } from './buffer_pool.js';
import { disposeResult } from './pass_merge.js';
import { encodedCacheOptions, fillingPlan } from './gpu_encode.js';
import { uploadedResults } from './gpu_tensor.js';
import { parameterBufferBytes, parameterWrites } from './weight_storage.js';

/** Test seam: beforePass(index) before each pass of a cached call (a throw fails that pass). */
export const cacheHooks = { beforePass: null };

/** The parameter buffers' labels (tests tell them from the per-call buffers by these). */
const PARAMETER_LABELS = {
  win: 'in-projection weights', bin: 'in-projection bias', wout: 'out_proj.weight', bout: 'out_proj.bias',
  swin: 'in-projection weight scales', swout: 'out_proj.weight scales',
  zwin: 'in-projection weight zero points', zwout: 'out_proj.weight zero points',
  sinks: 'sinks weights', qNorm: 'q_norm.weight', kNorm: 'k_norm.weight',
};

/** Largest d_k + d_v the flash kernel takes: at least 4 key rows per 16 KiB tile. */
const MAX_HEAD_WIDTHS = 1024;

export class WebGpuExecutor {
  #config;
  #device;
  #lost = null;            // GPUDeviceLostInfo-like { reason, message } once lost
  #lostSignal;             // rejects with DeviceLost when the device is lost
  #params;                 // { win, bin, wout, bout } GPU buffers, null once released
  #disposed = false;
  #pool;                   // BufferPool: per-call buffers, reused across calls (buffer_pool.js)
  #queue = Promise.resolve();  // the tail of this module's GPU calls (they run one at a time)
  #inFlight = 0;               // those queued or running
  #pass;                   // the executor as runForwardPass() sees it
  #staging;                // StagingUploads: the inputs' staging buffers (transferModes.staging)
  #batched = null;         // { batch, flush() } of the GpuBatch last given this module's work (recordForward())

  /** gpu: { device } from acquireGpu() (shared: dispose() leaves the device alone). */
  constructor(config, gpu) {
    this.#config = config;
    this.#device = gpu.device;
    addModuleDevice(gpu.device);  // GpuBatch.encode() takes it
    this.#lostSignal = gpu.device.lost.then((info) => {
      if (!this.#disposed) this.#lost = { reason: info?.reason ?? 'unknown', message: info?.message ?? '' };
      this.#releasePool();
      throw new DeviceLost(`the WebGPU device was lost (${info?.reason ?? 'unknown'}${info?.message ? `: ${info.message}` : ''})`);
    });
    this.#lostSignal.catch(() => {});
    this.#params = this.#createParams();
    this.#pool = new BufferPool(gpu.device, () => this.#disposed || this.#lost !== null);
    this.#staging = new StagingUploads(gpu.device);
    /** Resolves once the module's default pipelines are compiled (create() awaits it). */
    this.ready = warmPipelines(this.#device, config).catch(() => {});  // a failure shows at the call
    precisionProfile(this.#device, config.gpuPrecision);  // warns now where float16 cannot be had
    // What forward_pass.js reads of this executor, made once (not per call).
    const executor = this;
    this.#pass = {
      device: this.#device,
      get params() { return executor.#params; },
      pooled: (role, floats, usage) => this.#pool.take(role, floats, usage),
      releasePool: () => this.#releasePool(),
      untilLost: (promise) => Promise.race([promise, this.#lostSignal]),
      gone: () => this.#lost !== null || this.#disposed,
      selecting: selectsKernels(this.#device),
      staging: this.#staging,
      recorded: (batch, flush) => { this.#batched = { batch, flush }; },
      // A GpuStep's replay of a recorded call (forward_pass.js recordAgain()): in turn, as a call.
      inTurn: (batch, fn) => this.#serialised(() => { this.#flushBatch(batch); return fn(); }),
    };
  }

  /** The GPUDevice (GPU-resident tensors' buffers must be on it). */
  get device() {
    return this.#device;
  }

  /** { reason, message } once the device was lost, else null. */
  get lost() {
    return this.#lost;
  }

  /** Resolves once a loss that is on its way has been seen (device.lost may settle a moment late). */
  settleLoss() {
    return Promise.race([this.#lostSignal, new Promise((r) => setTimeout(r, 0))]).catch(() => {});
  }

  /**
   * entries: [{ name, data, dtype }] checked against the module's parameterSpecs(), all of them
   * (the WASM executor refused a bad state dict before this one saw it): stored as the module
   * stores its weights (weight_storage.js's parameterWrites(), every conversion done before the
   * first write), each entry written where it goes, from the caller's memory where it needs no
   * conversion (writeBuffer() copies it before returning: the caller may reuse its arrays).
   */
  loadStateDict(entries) {
    if (!this.#params) return;
    for (const { buffer, offset, data } of parameterWrites(this.#config, entries)) {
      this.#device.queue.writeBuffer(this.#params[buffer], offset, data.buffer, data.byteOffset, data.byteLength);
    }
  }

  /** Whether this call fits the device: buffer sizes, dispatch sizes, workgroup memory. */
  fits(plan) {
    const config = this.#config;
    const { B, L, S } = plan;
    const { embedDim: E, numHeads: H, numKvHeads: G, headDim: dk, valueHeadDim: dv } = config;
    if (dk + dv > MAX_HEAD_WIDTHS || flashKeyTile(dk, dv) < 1) return false;
    const limits = this.#device.limits;
    const maxBytes = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
    const weightFloats = B * weightsPerBatch(plan, H);
    const biggest = Math.max(plan.query?.length ?? 0, plan.key?.length ?? 0, plan.value?.length ?? 0,
      B * L * (H * dk + G * dk + G * dv), B * S * G * (dk + dv), B * L * E, weightFloats, B * H * L * 2,
      plan.attnMask.data?.length ?? 0, config.rotary ? (plan.positionIds?.length ?? Math.max(L, S)) * dk : 0);
    if (biggest * F32 > maxBytes || (B * L * E + weightFloats) * F32 > limits.maxBufferSize) return false;
    const maxGroups = limits.maxComputeWorkgroupsPerDimension;
    const rows = Math.max(B * L, B * S);
    return cdiv(rows, LINEAR_TILE) <= maxGroups && B * H <= maxGroups && L <= maxGroups && B <= maxGroups
      && cdiv(Math.max(L, S), FLASH_BR) <= maxGroups && (!config.rotary || S <= maxGroups);
  }

  /**
   * plan: a call fits() accepted, or any call with a cache this executor made (createCache()).
   * Resolves to { output, weights, path } or throws.
   */
  async forward(plan) {
    const config = this.#config;
    if (this.#lost || this.#disposed || !this.#params) throw new DeviceLost('the WebGPU device was lost');
    // A cached call runs as the cache's queue starts it: a dispose() of the cache from then on
    // waits for this call (KvCache.release()).
    if (plan.cache) {
      return this.#serialised(async () => {
        this.#flushBatch(plan.batch);
        const result = await this.#forwardCached(plan, plan.cache.storage);
        plan.cache.storage.recordCall(plan);
        this.#afterCall();
        return result;
      });
    }
    const path = attentionPath(plan, config, this.#device.limits);
    const result = await this.#serialised(async () => {
      this.#flushBatch(plan.batch);
      const done = await runForwardPass(this.#pass, plan, config, path);
      this.#afterCall();
      return done;
    });
    return { ...result, path };
  }

  // After a call: the per-call buffers its recent calls outgrew are freed (buffer_pool.js), unless a
  // GpuBatch still holds recorded work of this module (its submit would read them).
  #afterCall() {
    if (this.#batched) return;
    this.#pool.afterCall();
    this.#staging.afterCall();
  }

  /**
   * create({ expect }): the buffers and pipelines of a call of expect's shapes (expected_call.js)
   * made now, so that such a first call creates none. Best effort, like `ready`: a call that does
   * not fit the device is left alone, and what fails here the call makes again.
   */
  reserve(expect) {
    const plan = expectedPlan(expect, this.#config);
    if (this.#lost || this.#disposed || !this.fits(plan)) return Promise.resolve();
    const path = attentionPath(plan, this.#config, this.#device.limits);
    return this.#serialised(() => reserveBuffers(this.#pass, plan, this.#config, path)).catch(() => {});
  }

  /** A 'gpu-buffer' call's CPU result ({ output, weights } arrays) put on the GPU (uploadedResults()). */
  deviceResult({ output, weights }, plan) {
    if (this.#lost || this.#disposed) {
      throw new BackendError('output: the WebGPU device was lost; a \'gpu-buffer\' result has nowhere to go', {
        argument: 'output', expected: 'a working WebGPU device', actual: 'lost',
      });
    }
    return uploadedResults(this.#device, { output, weights }, plan);
  }

  /**
   * mha.gpuProfile(): the kernel selection on this module's device (selection/kernel_profile.js),
   * the module's precision there (precisionProfile()) and bufferBytes, what its per-call and
   * staging buffers hold now (buffer_pool.js).
   */
  gpuProfile() {
    return {
      ...kernelProfile(this.#device), precision: precisionProfile(this.#device, this.#config.gpuPrecision),
      bufferBytes: this.#pool.bytes + this.#staging.bytes,
    };
  }

  /** A KV cache's storage on this device (options: resolveCacheOptions()'s). */
  createCache(options) {
    if (this.#lost || this.#disposed) throw new DeviceLost('the WebGPU device was lost');
    const cache = new GpuKvCache(this.#device, this.#config, options);
    cache.beforeOwnWork = () => this.#flushBatch();
    warmCachePipelines(this.#device, this.#config, cache.dtype);
    return cache;
  }

  /** mha.encode() here: a read-only cache of plan's projected key and value (gpu_encode.js); null: it does not fit. */
  encode(plan) {
    if (this.#lost || this.#disposed || !this.#params) return Promise.reject(new DeviceLost('the WebGPU device was lost'));
    if (!this.fits(fillingPlan(plan, null, this.#config))) return Promise.resolve(null);
    const cache = this.createCache(encodedCacheOptions(plan));
    return this.#serialised(() => this.#forwardCached(fillingPlan(plan, cache, this.#config), cache)).then(() => cache, (e) => {
      cache.delete();
      throw e;
    });
  }

  /** cache.keep()'s limit here, before it is queued (cache_checks.js). */
  checkKeep(rows, indices, inputsHeld = true) {
    checkKeepRows(rows, indices, inputsHeld);
  }

  /** A cached call that cannot run here: an error before anything runs (cache_checks.js). */
  checkCachedFits(plan) {
    checkCachedCall(plan, this.#config, (pass) => this.fits(pass), this.#device.limits);
  }

  /** cache.truncate(): kv_cache.js has checked `length`; runs on the device, in queue order. */
  truncateCache(handle, length) {
    handle.truncate(length);
  }

  /**
   * cache.keep(): kv_cache.js has checked `indices` (an Int32Array) against the last call; runs
   * in queue order. The rows that move are written again on the device (cache_keep.js).
   */
  keepCache(handle, indices) {
    // A failure is the next call's to report (kv_cache.js): a rejection, never a throw here.
    if (this.#lost || this.#disposed) return Promise.reject(new DeviceLost('the WebGPU device was lost'));
    return this.#serialised(async () => {
      this.#flushBatch();
      const { length, plan } = keptRows(handle.lastCall, indices, this.#config.rotary);
      handle.truncate(length);
      if (plan) await this.#forwardCached(plan, handle);
    });
  }

  /** cache.fork(): a new cache of `options` (its source's) holding a device copy of `handle`. */
  forkCache(handle, options) {
    const fork = this.forkStorage(options);
    fork.copyFrom(handle);
    return fork;
  }

  /**
   * A fork's storage, its copy to come (copyCache()): a BackendError once the device is gone (the
   * cache's storage was there: it cannot move to WASM).
   */
  forkStorage(options) {
    if (this.#lost || this.#disposed) throw storageLost('cache.fork', this.#lost?.message);
    return this.createCache(options);
  }

  /** A fork's copy: `to` (from forkStorage()) becomes a copy of `from`, on the device. */
  copyCache(from, to) {
    to.copyFrom(from);
  }

  /**
   * cache.read(): positions [first, first + count) of a cache this executor made, after its calls;
   * a BackendError naming `cache` once the device is gone.
   */
  readCache(handle, first, count) {
    if (this.#lost || this.#disposed) return Promise.reject(storageLost('cache.read', this.#lost?.message));
    return this.#serialised(() => {
      this.#flushBatch();
      return handle.read(first, count, this.#pass.untilLost);
    }).catch((e) => {
      throw e instanceof WebAttentionError ? e : storageLost('cache.read', e?.message ?? String(e));
    });
  }

  // A cached call (the cache's queue has checked its length): its passes (cachedPasses()) one
  // after the other, each appending its rows; the length advances once every pass succeeded, and
  // a call of several passes that fails puts the storage back (GpuKvCache.snapshot()). Such a call
  // in a GpuBatch submits what the batch holds, then its passes, and is recorded as the batch's
  // call once they succeeded (batch_records.js recordSubmitted(), which keeps the snapshot until
  // the batch's submit was accepted).
  async #forwardCached(plan, cache) {
    const config = this.#config;
    const { passes, merge } = cachedPasses(plan, cache.maxRowsPerPass, config);
    const batched = passes.length > 1 && plan.batch;
    if (batched) await untilRecordable(plan);  // a submit of the batch since its turn: the verdict first
    if (batched) plan.batch[BATCH.submitHeld]();  // before the snapshot: the batch's earlier work on this cache
    const snapshot = passes.length > 1 ? cache.snapshot(this.#pool) : null;
    const results = [];
    let path;
    let merged;
    try {
      for (const [index, pass] of passes.entries()) {
        await cacheHooks.beforePass?.(index);
        path = attentionPath(pass, config, this.#device.limits);
        results.push(await runForwardPass(this.#pass, batched ? { ...pass, ownSubmit: true } : pass, config, path, cache));
      }
      merged = await merge(results, this.#device);
      if (batched) await untilRecordable(plan);  // and one made while its passes ran
    } catch (e) {
      snapshot?.restore();
      if (passes.length > 1 && plan.output === 'gpu-buffer') results.forEach(disposeResult);  // the passes' result buffers
      throw e;
    }
    // The rows appended (a plain step's L, none on an encoded cache); a batched call of one pass
    // advanced it as it was recorded (forward_pass.js recordForward()).
    if (!plan.batch || batched) cache.advance(plan.S, plan.cache.rows);
    if (batched) return { ...recordSubmitted(this.#pass, plan, cache, merged, snapshot), path };
    snapshot?.discard();
    return { ...merged, path };
  }

  /**
   * Frees the module's GPU buffers (the device is shared and stays), after submitting the GpuBatch
   * that holds calls of this module: WebGPU refuses a command buffer that uses a destroyed buffer,
   * and would refuse every call of that batch; a buffer destroyed after the submit lives on until
   * the GPU is done with it, so those calls' results still read.
   */
  dispose() {
    if (this.#disposed) return;
    this.#flushBatch();
    this.#disposed = true;
    this.#releaseParams();
    this.#releasePool();
  }

  // The module's parameter buffers (weight_storage.js): { win, bin, wout, bout } (+ swin, swout
  // for int8 and int4 weights, + zwin, zwout for int4).
  #createParams() {
    // Zero-initialised, as WebGPU buffers are: a module without biases keeps zero bias buffers.
    return Object.fromEntries(Object.entries(parameterBufferBytes(this.#config)).map(([name, size]) => [name, this.#device.createBuffer({
      size, usage: STORAGE_IN, label: `webattention ${PARAMETER_LABELS[name]}`,
    })]));
  }

  // Before work of this module outside `batch` (its own submit, another batch's call): the batch
  // that holds its recorded calls submitted first (synchronously), so that the queue runs them
  // first and this work's writeBuffer() calls (uniforms, inputs) do not overwrite theirs. That
  // submit's errors are its batch's to report (submit(), its results' read()).
  #flushBatch(batch = null) {
    if (!this.#batched || this.#batched.batch === batch) return;
    const { flush } = this.#batched;
    this.#batched = null;
    flush();
  }

  // Runs fn after this module's earlier GPU calls have settled (resolved or not).
  #serialised(fn) {
    this.#inFlight += 1;
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {}).then(() => { this.#inFlight -= 1; });
    return run;
  }

  /** Whether calls (or other work) of this module are queued or running on the GPU. */
  get busy() {
    return this.#inFlight > 0;
  }

  #releasePool() {
    this.#pool?.release();
    this.#staging?.destroy();
  }

  #releaseParams() {
    if (!this.#params) return;
    for (const buffer of Object.values(this.#params)) buffer.destroy();
    this.#params = null;
  }
}
