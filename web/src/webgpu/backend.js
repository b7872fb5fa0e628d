// The WebGPU backend of MultiHeadAttention: the same interface as the WASM backend
// (parameterSpecs, loadStateDict, forward(plan, config) → { output, weights }, headBilinearForm,
// dispose), computing on a GPUDevice with the kernels in ./kernels/:
//
//   input projections   linear      Q = query·W_qᵀ + b_q (K, V alike; fused into one dispatch
//                                   when query, key and value are one array, or key and value)
//   attention           flash       softmax(Q Kᵀ/√d_k + masks) V per (batch, head), online
//                                   softmax, no L×S buffer; writes each row's max and sum
//     or, for L <= 4    decode      split-K: decode_partial (one workgroup per 256-key chunk of
//                                   each row: chunk max, sum, Σ p·v) then decode_reduce
//                                   (rescales and combines the chunks; same outputs and stats)
//   weights (optional)  weights     exp(s − max) / sum from those, averaged or per head
//   output projection   linear      heads·W_oᵀ + b_o
//
// It wraps a WASM backend (WasmMha or the worker pool), which keeps its own copy of the state
// dict and answers parameterSpecs() and headBilinearForm(). With backend 'auto' the device is
// only asked for at the first call of at least `minFlops` (so a page that never makes a large
// call never touches WebGPU). forward() runs on the fallback
//   - for calls below `minFlops` (backend 'auto'), and for every call when 'auto' found no GPU
//     it should use (none, or only a software one),
//   - for calls the GPU cannot take (a buffer over the device's limits, a head width whose K/V
//     tile does not fit 16 KiB of workgroup memory, more workgroups than a dispatch allows),
//   - when a GPU call fails: if the device was lost (device.destroy(), a driver reset) the module
//     switches to WASM for good (`backend` reads 'wasm', console.warn says why); any other GPU
//     error sends only that call to WASM (with a console.warn). Either way the call returns a
//     correct result.
// Weights are uploaded by loadStateDict() and stay on the GPU; per call only the inputs (and
// masks) go up and the output (and weights) come back.
//
// Per-call buffers (inputs, masks, Q/K/V, heads, row stats, decode partials, weights, output,
// readback, uniforms) come from a per-module cache keyed by role: a role's buffer is reused while
// it is big enough and replaced by one of the next power of two (at least 256 bytes, capped at
// the device's limits) when a call needs more. Storage bindings name the bytes the call uses, so
// a larger buffer is harmless. GPU calls of one module are serialised (a promise chain) so that
// two overlapping forward() calls never share those buffers; calls of different modules still
// overlap. The cache is destroyed by dispose(), when the device is lost, and after a failed GPU
// call (whose buffers may be left mapped or half-written).
import { forwardFlops, weightsPerBatch } from '../shapes.js';
import { MAP_READ, Usage } from './device.js';
import { bindGroupLayout, getPipeline } from './pipelines.js';
import { MASK_SENTINEL } from './kernels/attention_common.wgsl.js';
import { FLASH_BR, flashKeyTile } from './kernels/flash_attention.wgsl.js';
import { LINEAR_TILE } from './kernels/linear.wgsl.js';
import { DECODE_CHUNK } from './kernels/decode_partial.wgsl.js';
import { WEIGHTS_WORKGROUP } from './kernels/attention_weights.wgsl.js';

const F32 = 4;
const UNIFORM_SLOT = 256;  // minUniformBufferOffsetAlignment's largest allowed value
const STORAGE_IN = Usage.STORAGE | Usage.COPY_DST;
const STORAGE_OUT = Usage.STORAGE | Usage.COPY_SRC;
/** Largest d_k + d_v the flash kernel takes: at least 4 key rows per 16 KiB tile. */
const MAX_HEAD_WIDTHS = 1024;

/**
 * Test hooks: onRun(where, plan, path) after each forward, where = 'webgpu' | 'wasm', path (GPU
 * only) = 'flash' | 'decode', the attention path attentionPath() chose.
 */
export const testHooks = { onRun: null };

/**
 * Query lengths up to this take the decode path (split-K over keys) instead of the flash
 * kernel. The flash kernel puts one query row on each of a workgroup's 64 invocations and walks
 * the keys serially, so at L <= 4 at least 60 of 64 invocations idle and each (batch, head) has
 * one workgroup doing all S keys; the decode path spreads a row's keys over S / 256 workgroups of
 * 64 invocations. Its cost is per row (each row re-reads K and V), which is why it stops at a
 * few rows. For short S (one chunk) it is still one workgroup per row, no worse than flash.
 */
export const DECODE_MAX_L = 4;

/**
 * The attention kernels a call uses, decided here only: 'decode' (decode_partial +
 * decode_reduce) for L <= DECODE_MAX_L when its scratch buffer and grid fit the device's limits,
 * else 'flash'. needWeights does not change it: the weights kernel reads the same row stats.
 */
export function attentionPath(plan, config, limits) {
  const { B, L, S } = plan;
  if (L > DECODE_MAX_L) return 'flash';
  const chunks = cdiv(S, DECODE_CHUNK);
  const scratch = B * config.numHeads * L * chunks * (config.valueHeadDim + 2);
  const maxBytes = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const maxGroups = limits.maxComputeWorkgroupsPerDimension;
  const fits = scratch * F32 <= maxBytes && chunks <= maxGroups && B * config.numHeads <= maxGroups;
  return fits ? 'decode' : 'flash';
}


const cdiv = (a, b) => Math.ceil(a / b);

/** A mask as f32 for the shaders: additive values as they are, masked entries as the sentinel. */
function maskToF32(mask) {
  const out = new Float32Array(mask.data.length);
  if (mask.data instanceof Uint8Array) {
    for (let i = 0; i < out.length; i++) out[i] = mask.data[i] ? MASK_SENTINEL : 0;
  } else {
    for (let i = 0; i < out.length; i++) {
      const x = mask.data[i];
      out[i] = x <= -1e38 ? MASK_SENTINEL : x;
    }
  }
  return out;
}

/** Thrown inside the GPU path when the device is gone. */
class DeviceLost extends Error {}

export class WebGpuMha {
  #fallback;
  #config;
  #minFlops;
  #state;                  // 'pending' (auto: no device asked for yet) | 'ready' | 'none' (auto: no GPU to use)
  #acquire = null;         // pending: () => Promise<gpu | null>
  #acquiring = null;       // pending: that promise, once asked
  #pendingEntries = null;  // pending: a copy of the last state dict, uploaded once a device is there
  #device = null;
  #lost = null;            // GPUDeviceLostInfo-like { reason, message } once lost
  #lostSignal;             // rejects with DeviceLost when the device is lost
  #params = null;          // { win, bin, wout, bout } GPU buffers
  #warnedError = false;
  #disposed = false;
  #loaded = false;         // loadStateDict() has succeeded (the WASM core refuses calls before)
  #pool = new Map();       // role → { buffer, bytes, usage }: per-call buffers, reused across calls
  #queue = Promise.resolve();  // the tail of this module's GPU calls (they run one at a time)

  /**
   * fallback: a WASM backend for the same config. gpu: { device } from
   * acquireGpu() (the device is shared: dispose() leaves it alone), or a function resolving to
   * one or to null, called at the first forward() of at least minFlops (backend 'auto': a module
   * that only sees small calls never touches WebGPU). minFlops: calls with fewer FLOPs
   * (forwardFlops) run on the fallback.
   */
  constructor(fallback, config, gpu, { minFlops = 0 } = {}) {
    this.#fallback = fallback;
    this.#config = config;
    this.#minFlops = minFlops;
    if (typeof gpu === 'function') {
      this.#state = 'pending';
      this.#acquire = gpu;
    } else {
      this.#attach(gpu);
    }
  }

  /**
   * 'webgpu' while a device is in use; 'wasm' before backend 'auto' has made its choice, when
   * it found no GPU to use, and after the device was lost.
   */
  get backend() {
    return this.#state === 'ready' && !this.#lost ? 'webgpu' : 'wasm';
  }

  get threads() {
    return this.#fallback.threads;
  }

  parameterSpecs() {
    return this.#fallback.parameterSpecs();
  }

  headBilinearForm(head) {
    return this.#fallback.headBilinearForm(head);
  }

  /** entries: [{ name, data }] checked against parameterSpecs(); goes to WASM and to the GPU. */
  loadStateDict(entries) {
    this.#fallback.loadStateDict(entries);
    this.#loaded = true;
    if (this.#state === 'pending') {
      // Copied, as the WASM core copies: the caller may reuse its arrays before the upload.
      this.#pendingEntries = entries.map(({ name, data }) => ({ name, data: data.slice() }));
    } else if (this.#state === 'ready' && !this.#lost) {
      this.#upload(entries);
    }
  }

  /** plan: from resolveMhaForward(). Resolves to { output, weights }. */
  async forward(plan, config) {
    // Before loadStateDict() the fallback answers, with the core's StateDictError.
    if (this.#lost || !this.#loaded || forwardFlops(plan, config) < this.#minFlops) return this.#runFallback(plan, config);
    if (this.#state === 'pending') await this.#choose();
    if (this.#state !== 'ready' || this.#lost || this.#disposed || !this.#fits(plan, config)) return this.#runFallback(plan, config);
    try {
      const path = attentionPath(plan, config, this.#device.limits);
      const result = await this.#serialised(() => this.#forwardGpu(plan, config, path));
      testHooks.onRun?.('webgpu', plan, path);
      return result;
    } catch (e) {
      if (this.#disposed) throw e;
      // A lost device reports through device.lost, which may settle a moment after the failed
      // call: give it that moment before deciding.
      await Promise.race([this.#lostSignal, new Promise((r) => setTimeout(r, 0))]).catch(() => {});
      if (this.#lost) {
        const { reason, message } = this.#lost;
        console.warn(`webattention: the WebGPU device was lost (${reason}${message ? `: ${message}` : ''}); `
          + 'this module computes on WASM from now on (mha.backend is \'wasm\')');
        this.#releaseParams();
        this.#releasePool();
      } else if (!this.#warnedError) {
        this.#warnedError = true;
        console.warn(`webattention: a WebGPU forward() failed (${e?.message ?? e}); that call ran on WASM`);
      }
      return this.#runFallback(plan, config);
    }
  }

  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#releaseParams();
    this.#releasePool();
    this.#device = null;
    this.#pendingEntries = null;
    this.#fallback.dispose();
  }

  // Backend 'auto', first large call: ask for the GPU once (concurrent calls share the asking).
  #choose() {
    this.#acquiring ??= (async () => {
      let gpu = null;
      try {
        gpu = await this.#acquire();
      } catch {
        gpu = null;  // 'auto' never fails over WebGPU: WASM it is
      }
      if (this.#disposed || this.#state !== 'pending') return;
      if (!gpu) {
        this.#state = 'none';
      } else {
        this.#attach(gpu);
        if (this.#pendingEntries) this.#upload(this.#pendingEntries);
      }
      this.#pendingEntries = null;
    })();
    return this.#acquiring;
  }

  #attach(gpu) {
    this.#state = 'ready';
    this.#device = gpu.device;
    this.#lostSignal = gpu.device.lost.then((info) => {
      if (!this.#disposed) this.#lost = { reason: info?.reason ?? 'unknown', message: info?.message ?? '' };
      this.#releasePool();
      throw new DeviceLost(`the WebGPU device was lost (${info?.reason ?? 'unknown'}${info?.message ? `: ${info.message}` : ''})`);
    });
    this.#lostSignal.catch(() => {});
    this.#params = this.#createParams();
  }

  #upload(entries) {
    const { embedDim: E, kdim, numHeads: H, headDim: dk } = this.#config;
    const offsets = {
      in_proj_weight: [this.#params.win, 0],
      q_proj_weight: [this.#params.win, 0],
      k_proj_weight: [this.#params.win, H * dk * E],
      v_proj_weight: [this.#params.win, H * dk * E + H * dk * kdim],
      in_proj_bias: [this.#params.bin, 0],
      'out_proj.weight': [this.#params.wout, 0],
      'out_proj.bias': [this.#params.bout, 0],
    };
    for (const { name, data } of entries) {
      const [buffer, at] = offsets[name];
      this.#device.queue.writeBuffer(buffer, at * F32, data);
    }
  }

  async #runFallback(plan, config) {
    const result = await this.#fallback.forward(plan, config);
    testHooks.onRun?.('wasm', plan);
    return result;
  }

  #createParams() {
    const { embedDim: E, kdim, vdim, numHeads: H, headDim: dk, valueHeadDim: dv } = this.#config;
    // Zero-initialised, as WebGPU buffers are: a module without biases keeps zero bias buffers.
    const make = (floats, label) => this.#device.createBuffer({
      size: Math.max(floats, 1) * F32, usage: STORAGE_IN, label: `webattention ${label}`,
    });
    return {
      // [W_q; W_k; W_v] rows stacked, as in_proj_weight: [h·d_k, E], [h·d_k, kdim], [h·d_v, vdim].
      win: make(H * dk * E + H * dk * kdim + H * dv * vdim, 'in-projection weights'),
      bin: make(2 * H * dk + H * dv, 'in-projection bias'),
      wout: make(E * H * dv, 'out_proj.weight'),
      bout: make(E, 'out_proj.bias'),
    };
  }

  // Runs fn after this module's earlier GPU calls have settled (resolved or not).
  #serialised(fn) {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * The cached buffer of `role`, at least `floats` floats, created (or replaced by a bigger one:
   * next power of two, at least 256 bytes, within the device's limits) when needed.
   */
  #pooled(role, floats, usage) {
    const bytes = Math.max(floats, 1) * F32;
    let entry = this.#pool.get(role);
    if (!entry || entry.bytes < bytes || entry.usage !== usage) {
      entry?.buffer.destroy();
      const limits = this.#device.limits;
      let cap = (usage & Usage.STORAGE)
        ? Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize) : limits.maxBufferSize;
      cap -= cap % F32;
      const size = Math.max(bytes, Math.min(Math.max(256, 2 ** Math.ceil(Math.log2(bytes))), cap));
      const buffer = this.#device.createBuffer({ size, usage, label: `webattention ${role}` });
      entry = { buffer, bytes: size, usage };
      this.#pool.set(role, entry);
    }
    return entry.buffer;
  }

  #releasePool() {
    for (const { buffer } of this.#pool.values()) buffer.destroy();
    this.#pool.clear();
  }

  #releaseParams() {
    if (!this.#params) return;
    for (const buffer of Object.values(this.#params)) buffer.destroy();
    this.#params = null;
  }

  // Whether this call fits the device: buffer sizes, dispatch sizes, workgroup memory.
  #fits(plan, config) {
    const { B, L, S } = plan;
    const { embedDim: E, numHeads: H, headDim: dk, valueHeadDim: dv } = config;
    if (dk + dv > MAX_HEAD_WIDTHS || flashKeyTile(dk, dv) < 1) return false;
    const limits = this.#device.limits;
    const maxBytes = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
    const weightFloats = B * weightsPerBatch(plan, H);
    const biggest = Math.max(plan.query.length, plan.key.length, plan.value.length,
      B * L * (2 * H * dk + H * dv), B * S * H * (dk + dv), B * L * E, weightFloats, B * H * L * 2,
      plan.attnMask.data?.length ?? 0);
    if (biggest * F32 > maxBytes || (B * L * E + weightFloats) * F32 > limits.maxBufferSize) return false;
    const maxGroups = limits.maxComputeWorkgroupsPerDimension;
    const rows = Math.max(B * L, B * S);
    return cdiv(rows, LINEAR_TILE) <= maxGroups && B * H <= maxGroups && L <= maxGroups && B <= maxGroups
      && cdiv(Math.max(L, S), FLASH_BR) <= maxGroups;
  }

  async #forwardGpu(plan, config, path) {
    const device = this.#device;
    const params = this.#params;
    const { B, L, S } = plan;
    const { embedDim: E, kdim, vdim, numHeads: H, headDim: dk, valueHeadDim: dv } = config;
    const untilLost = (promise) => Promise.race([promise, this.#lostSignal]);

    const decode = path === 'decode';
    const [linear, flash, decodePartial, decodeReduce, weightsPipeline] = await untilLost(Promise.all([
      getPipeline(device, 'linear'),
      decode ? null : getPipeline(device, 'flash', { dk, dv }),
      decode ? getPipeline(device, 'decodePartial', { dk, dv }) : null,
      decode ? getPipeline(device, 'decodeReduce', { dv }) : null,
      plan.needWeights ? getPipeline(device, 'weights', { dk }) : null,
    ]));
    if (this.#lost || this.#disposed) throw new DeviceLost('the WebGPU device was lost');

    const sizes = new Map();  // buffer → the bytes this call uses of it (the binding size)
    let scopes = null;
    let failed = true;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    try {
      const buffer = (floats, usage, role) => {
        const b = this.#pooled(role, floats, usage);
        sizes.set(b, Math.max(floats, 1) * F32);
        return b;
      };
      const uploads = new Map();  // the same typed array goes up once
      const upload = (data, label) => {
        if (!uploads.has(data)) {
          const b = buffer(data.length, STORAGE_IN, label);
          device.queue.writeBuffer(b, 0, data);
          uploads.set(data, b);
        }
        return uploads.get(data);
      };

      // Uniform blocks, one 256-byte slot per dispatch.
      const slots = [];
      const uniform = (u32s, f32s = []) => {
        const block = new ArrayBuffer(64);
        new Uint32Array(block).set(u32s);
        new Float32Array(block).set(f32s, u32s.length);
        slots.push(block);
        return (slots.length - 1) * UNIFORM_SLOT;
      };
      const dispatches = [];
      const dispatch = (pipeline, slot, bindings, groups) => dispatches.push({ pipeline, slot, bindings, groups });

      // Input projections. Q, K, V land as [rows, width] with head h at columns h·d.
      const Hdk = H * dk;
      const Hdv = H * dv;
      const x = upload(plan.query, 'query');
      const kIn = upload(plan.key, 'key');
      const vIn = upload(plan.value, 'value');
      const wOffK = Hdk * E;
      const wOffV = wOffK + Hdk * kdim;
      const project = (input, rows, width, inDim, wOff, bOff, out) => dispatch(linear,
        uniform([rows, width, inDim, 0, inDim, wOff, bOff, 0, width]),
        [input, params.win, params.bin, out], [cdiv(width, LINEAR_TILE), cdiv(rows, LINEAR_TILE), 1]);
      let q, k, v;  // { buf, off, stride }
      if (plan.query === plan.key && plan.key === plan.value && kdim === E && vdim === E) {
        // Self-attention: one product with the stacked [W_q; W_k; W_v].
        const width = 2 * Hdk + Hdv;
        const qkv = buffer(B * L * width, Usage.STORAGE, 'qkv');
        project(x, B * L, width, E, 0, 0, qkv);
        [q, k, v] = [{ buf: qkv, off: 0, stride: width }, { buf: qkv, off: Hdk, stride: width }, { buf: qkv, off: 2 * Hdk, stride: width }];
      } else {
        const qb = buffer(B * L * Hdk, Usage.STORAGE, 'q');
        project(x, B * L, Hdk, E, 0, 0, qb);
        q = { buf: qb, off: 0, stride: Hdk };
        if (plan.key === plan.value && kdim === vdim) {
          // One array for key and value: one product with the stacked [W_k; W_v].
          const width = Hdk + Hdv;
          const kv = buffer(B * S * width, Usage.STORAGE, 'kv');
          project(kIn, B * S, width, kdim, wOffK, Hdk, kv);
          [k, v] = [{ buf: kv, off: 0, stride: width }, { buf: kv, off: Hdk, stride: width }];
        } else {
          const kb = buffer(B * S * Hdk, Usage.STORAGE, 'k');
          const vb = buffer(B * S * Hdv, Usage.STORAGE, 'v');
          project(kIn, B * S, Hdk, kdim, wOffK, Hdk, kb);
          project(vIn, B * S, Hdv, vdim, wOffV, 2 * Hdk, vb);
          [k, v] = [{ buf: kb, off: 0, stride: Hdk }, { buf: vb, off: 0, stride: Hdv }];
        }
      }

      // Masks as f32 (a 1-float placeholder when absent: the bindings always exist).
      const kpm = plan.keyPaddingMask.data ? upload(maskToF32(plan.keyPaddingMask), 'keyPaddingMask') : null;
      const am = plan.attnMask.data ? upload(maskToF32(plan.attnMask), 'attnMask') : null;
      const placeholder = kpm && am ? null : buffer(1, Usage.STORAGE, 'no mask');
      const amKind = am ? (plan.attnMask.shape.length === 2 ? 1 : 2) : 0;
      const attention = (average) => uniform(
        [B, L, S, H, plan.isCausal ? 1 : 0, kpm ? 1 : 0, amKind,
          q.off, q.stride, k.off, k.stride, v.off, v.stride, Hdv, average ? 1 : 0],
        [Math.fround(1 / Math.sqrt(dk))]);
      const maskBindings = [kpm ?? placeholder, am ?? placeholder];

      const heads = buffer(B * L * Hdv, Usage.STORAGE, 'heads');
      const stats = buffer(B * H * L * 2, Usage.STORAGE, 'row stats');
      if (decode) {
        // Split-K: per (batch, head, row) one workgroup per DECODE_CHUNK keys, then one combining.
        const chunks = cdiv(S, DECODE_CHUNK);
        const partials = buffer(B * H * L * chunks * (dv + 2), Usage.STORAGE, 'decode partials');
        const slot = attention(false);
        dispatch(decodePartial, slot, [...maskBindings, q.buf, k.buf, v.buf, partials], [chunks, L, B * H]);
        dispatch(decodeReduce, slot, [partials, heads, stats], [L, B * H, 1]);
      } else {
        dispatch(flash, attention(false), [...maskBindings, q.buf, k.buf, v.buf, heads, stats],
          [cdiv(L, FLASH_BR), B * H, 1]);
      }

      const weightFloats = B * weightsPerBatch(plan, H);
      const weights = weightFloats ? buffer(weightFloats, STORAGE_OUT, 'weights') : null;
      if (weights) {
        dispatch(weightsPipeline, attention(plan.averageAttnWeights), [...maskBindings, q.buf, k.buf, stats, weights],
          [cdiv(S, WEIGHTS_WORKGROUP), L, B]);
      }

      const outFloats = B * L * E;
      const out = buffer(outFloats, STORAGE_OUT, 'output');
      dispatch(linear, uniform([B * L, E, Hdv, 0, Hdv, 0, 0, 0, E]),
        [heads, params.wout, params.bout, out], [cdiv(E, LINEAR_TILE), cdiv(B * L, LINEAR_TILE), 1]);

      const uniforms = buffer(slots.length * UNIFORM_SLOT / F32, Usage.UNIFORM | Usage.COPY_DST, 'uniforms');
      const packed = new Uint8Array(slots.length * UNIFORM_SLOT);
      slots.forEach((block, i) => packed.set(new Uint8Array(block), i * UNIFORM_SLOT));
      device.queue.writeBuffer(uniforms, 0, packed);

      const encoder = device.createCommandEncoder({ label: 'webattention forward' });
      const pass = encoder.beginComputePass();
      for (const { pipeline, slot, bindings, groups } of dispatches) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, device.createBindGroup({
          layout: bindGroupLayout(pipeline),
          entries: [
            { binding: 0, resource: { buffer: uniforms, offset: slot, size: 64 } },
            ...bindings.map((b, i) => ({
              binding: i + 1, resource: sizes.has(b) ? { buffer: b, size: sizes.get(b) } : { buffer: b },
            })),
          ],
        }));
        pass.dispatchWorkgroups(...groups);
      }
      pass.end();
      const readback = buffer(outFloats + weightFloats, Usage.MAP_READ | Usage.COPY_DST, 'readback');
      encoder.copyBufferToBuffer(out, 0, readback, 0, outFloats * F32);
      if (weights) encoder.copyBufferToBuffer(weights, 0, readback, outFloats * F32, weightFloats * F32);
      device.queue.submit([encoder.finish()]);

      scopes = [device.popErrorScope(), device.popErrorScope()];
      scopes.forEach((s) => s.catch(() => {}));
      const readBytes = (outFloats + weightFloats) * F32;
      await untilLost(readback.mapAsync(MAP_READ, 0, readBytes));
      const gpuError = (await untilLost(Promise.all(scopes))).find(Boolean);
      if (gpuError) throw new Error(`${gpuError.constructor?.name ?? 'GPUError'}: ${gpuError.message}`);
      const range = readback.getMappedRange(0, readBytes);
      if (range.byteLength !== readBytes) throw new DeviceLost('the readback buffer was unmapped');
      const all = new Float32Array(range);
      const result = {
        output: all.slice(0, outFloats),
        weights: weightFloats ? all.slice(outFloats) : null,
      };
      readback.unmap();
      failed = false;
      return result;
    } finally {
      // Scopes are popped right after the submit, with no await between push and pop (calls of
      // other modules may overlap); here only when something threw before that.
      if (!scopes) [device.popErrorScope(), device.popErrorScope()].forEach((s) => s.catch(() => {}));
      // A failed call may leave the readback mapped or a buffer half-written: start afresh.
      if (failed || this.#lost || this.#disposed) this.#releasePool();
    }
  }
}
