// One MHA forward on the GPU: uploads the call's inputs, encodes every dispatch of the kernels in
// ./kernels/ into one command buffer, submits it and reads the output (and weights) back.
//
//   input projections   linear      Q = query·W_qᵀ + b_q (K, V alike, numKvHeads heads; fused
//                                   into one dispatch when query, key and value are one array,
//                                   or key and value)
//   rotary (optional)   rotary      Q and K rotated in place at positions 0…L−1 / 0…S−1
//                                   (with a KV cache: n…n+L−1, n = its length before)
//   cache (optional)    cacheAppend the new K and V rows written into the cache's ring, which
//                                   the attention kernels then read (bottom-right causal, window)
//   attention           flash       softmax(Q Kᵀ/√d_k + masks) V per (batch, head), online
//                                   softmax, no L×S buffer; writes each row's max and sum
//     or, for L <= DECODE_MAX_L     split-K: decode_partial (one workgroup per 256-key chunk of
//                       decode      each row: chunk max, sum, Σ p·v) then decode_reduce
//                                   (rescales and combines the chunks; same outputs and stats)
//   weights (optional)  weights     exp(s − max) / sum from those, averaged or per head
//   output projection   linear      heads·W_oᵀ + b_o
//
// The executor (executors/webgpu_executor.js) owns the device, the parameter buffers and the
// per-call buffer cache; this file only encodes and runs one call on them.
import { weightsPerBatch } from '../plans.js';
import { MaskKind } from '../tensor_checks.js';
import { MAP_READ, Usage } from './device.js';
import { bindGroupLayout, getPipeline } from './pipelines.js';
import { rotaryTable } from './rotary_table.js';
import { MASK_SENTINEL } from './kernels/attention_common.wgsl.js';
import { FLASH_BR } from './kernels/flash_attention.wgsl.js';
import { LINEAR_TILE } from './kernels/linear.wgsl.js';
import { DECODE_CHUNK } from './kernels/decode_partial.wgsl.js';
import { WEIGHTS_WORKGROUP } from './kernels/attention_weights.wgsl.js';
import { ROTARY_WORKGROUP } from './kernels/rotary.wgsl.js';
import { APPEND_WORKGROUP } from './kernels/cache_append.wgsl.js';

export const F32 = 4;
const UNIFORM_SLOT = 256;  // minUniformBufferOffsetAlignment's largest allowed value
const UNIFORM_BYTES = 80;  // the largest uniform block (attention_common's Params: 20 words)
/** Usage of the buffers the kernels read that the CPU writes. */
export const STORAGE_IN = Usage.STORAGE | Usage.COPY_DST;
const STORAGE_OUT = Usage.STORAGE | Usage.COPY_SRC;

export const cdiv = (a, b) => Math.ceil(a / b);

/** Thrown inside the GPU path when the device is gone. */
export class DeviceLost extends Error {}

/** A mask as f32 for the shaders: additive values as they are, masked entries as the sentinel. */
function maskToF32(mask) {
  const out = new Float32Array(mask.data.length);
  if (mask.kind === MaskKind.boolean) {
    for (let i = 0; i < out.length; i++) out[i] = mask.data[i] ? MASK_SENTINEL : 0;
  } else {
    for (let i = 0; i < out.length; i++) {
      const x = mask.data[i];
      out[i] = x <= -1e38 ? MASK_SENTINEL : x;
    }
  }
  return out;
}

/**
 * Runs one forward. gpu: { device, params: { win, bin, wout, bout }, pooled(role, floats, usage)
 * (the cached buffer of a role), releasePool(), untilLost(promise) (rejects with DeviceLost when
 * the device goes), gone() (lost or disposed) }. path: 'flash' | 'decode' (attentionPath()).
 * cache: a GpuKvCache for a plan with a cache (one pass: at most its maxRowsPerPass rows), else
 * null. Resolves to { output, weights }.
 */
export async function runForwardPass(gpu, plan, config, path, cache = null) {
  const { device, params } = gpu;
  const { B, L, S, T } = plan;  // T: keys attended (S, or the cache's length after the append)
  const first = cache ? plan.cache.lengthBefore : 0;  // position of query (and new key) row 0
  const { embedDim: E, kdim, vdim, numHeads: H, numKvHeads: G, headDim: dk, valueHeadDim: dv, rotary } = config;
  const { untilLost } = gpu;

  const decode = path === 'decode';
  const [linear, rotaryPipeline, append, flash, decodePartial, decodeReduce, weightsPipeline] = await untilLost(Promise.all([
    getPipeline(device, 'linear'),
    rotary ? getPipeline(device, 'rotary') : null,
    cache ? getPipeline(device, 'cacheAppend') : null,
    decode ? null : getPipeline(device, 'flash', { dk, dv }),
    decode ? getPipeline(device, 'decodePartial', { dk, dv }) : null,
    decode ? getPipeline(device, 'decodeReduce', { dv }) : null,
    plan.needWeights ? getPipeline(device, 'weights', { dk }) : null,
  ]));
  if (gpu.gone()) throw new DeviceLost('the WebGPU device was lost');

  const sizes = new Map();  // buffer → the bytes this call uses of it (the binding size)
  let scopes = null;
  let failed = true;
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  try {
    const buffer = (floats, usage, role) => {
      const b = gpu.pooled(role, floats, usage);
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
      const block = new ArrayBuffer(UNIFORM_BYTES);
      new Uint32Array(block).set(u32s);
      new Float32Array(block).set(f32s, u32s.length);
      slots.push(block);
      return (slots.length - 1) * UNIFORM_SLOT;
    };
    const dispatches = [];
    const dispatch = (pipeline, slot, bindings, groups) => dispatches.push({ pipeline, slot, bindings, groups });

    // Input projections. Q, K, V land as [rows, width] with head h at columns h·d; K and V have
    // G = numKvHeads heads (grouped-query attention: the attention kernels index them).
    const Hdk = H * dk;
    const Hdv = H * dv;
    const Gdk = G * dk;
    const Gdv = G * dv;
    const x = upload(plan.query, 'query');
    const kIn = upload(plan.key, 'key');
    const vIn = upload(plan.value, 'value');
    const wOffK = Hdk * E;
    const wOffV = wOffK + Gdk * kdim;
    const project = (input, rows, width, inDim, wOff, bOff, out) => dispatch(linear,
      uniform([rows, width, inDim, 0, inDim, wOff, bOff, 0, width]),
      [input, params.win, params.bin, out], [cdiv(width, LINEAR_TILE), cdiv(rows, LINEAR_TILE), 1]);
    let q, k, v;  // { buf, off, stride }
    if (plan.query === plan.key && plan.key === plan.value && kdim === E && vdim === E) {
      // Self-attention: one product with the stacked [W_q; W_k; W_v].
      const width = Hdk + Gdk + Gdv;
      const qkv = buffer(B * L * width, Usage.STORAGE, 'qkv');
      project(x, B * L, width, E, 0, 0, qkv);
      [q, k, v] = [{ buf: qkv, off: 0, stride: width }, { buf: qkv, off: Hdk, stride: width }, { buf: qkv, off: Hdk + Gdk, stride: width }];
    } else {
      const qb = buffer(B * L * Hdk, Usage.STORAGE, 'q');
      project(x, B * L, Hdk, E, 0, 0, qb);
      q = { buf: qb, off: 0, stride: Hdk };
      if (plan.key === plan.value && kdim === vdim) {
        // One array for key and value: one product with the stacked [W_k; W_v].
        const width = Gdk + Gdv;
        const kv = buffer(B * S * width, Usage.STORAGE, 'kv');
        project(kIn, B * S, width, kdim, wOffK, Hdk, kv);
        [k, v] = [{ buf: kv, off: 0, stride: width }, { buf: kv, off: Gdk, stride: width }];
      } else {
        const kb = buffer(B * S * Gdk, Usage.STORAGE, 'k');
        const vb = buffer(B * S * Gdv, Usage.STORAGE, 'v');
        project(kIn, B * S, Gdk, kdim, wOffK, Hdk, kb);
        project(vIn, B * S, Gdv, vdim, wOffV, Hdk + Gdk, vb);
        [k, v] = [{ buf: kb, off: 0, stride: Gdk }, { buf: vb, off: 0, stride: Gdv }];
      }
    }

    if (rotary) {
      // One table for queries (positions first…first+L−1) and keys (first…first+S−1).
      const half = rotary.dim / 2;
      const table = upload(rotaryTable(rotary, first, Math.max(L, S)), 'rotary table');
      const rotate = ({ buf, off, stride }, count, heads) => dispatch(rotaryPipeline,
        uniform([count, heads, dk, off, stride, half, rotary.interleaved ? 1 : 0, 0]),
        [table, buf], [cdiv(heads * half, ROTARY_WORKGROUP), count, B]);
      rotate(q, L, H);
      rotate(k, S, G);
    }
    if (cache) {
      // Append in place; attention then reads every cached position from the ring.
      const appendRows = ({ buf, off, stride }, width, to) => dispatch(append,
        uniform([L, width, off, stride, cache.capacity, first]), [buf, to], [cdiv(width, APPEND_WORKGROUP), L, B]);
      appendRows(k, Gdk, cache.keys);
      appendRows(v, Gdv, cache.values);
      [k, v] = [{ buf: cache.keys, off: 0, stride: Gdk }, { buf: cache.values, off: 0, stride: Gdv }];
    }

    // Masks as f32 (a 1-float placeholder when absent: the bindings always exist).
    const kpm = plan.keyPaddingMask.data ? upload(maskToF32(plan.keyPaddingMask), 'keyPaddingMask') : null;
    const am = plan.attnMask.data ? upload(maskToF32(plan.attnMask), 'attnMask') : null;
    const placeholder = kpm && am ? null : buffer(1, Usage.STORAGE, 'no mask');
    const amKind = am ? (plan.attnMask.shape.length === 2 ? 1 : 2) : 0;
    const attention = (average) => uniform(
      [B, L, T, H, plan.isCausal || cache ? 1 : 0, kpm ? 1 : 0, amKind,
        q.off, q.stride, k.off, k.stride, v.off, v.stride, Hdv, average ? 1 : 0, H / G,
        cache ? cache.capacity : S, first, cache ? cache.window : 0],
      [Math.fround(1 / Math.sqrt(dk))]);
    const maskBindings = [kpm ?? placeholder, am ?? placeholder];

    const heads = buffer(B * L * Hdv, Usage.STORAGE, 'heads');
    const stats = buffer(B * H * L * 2, Usage.STORAGE, 'row stats');
    if (decode) {
      // Split-K: per (batch, head, row) one workgroup per DECODE_CHUNK keys, then one combining.
      const chunks = cdiv(T, DECODE_CHUNK);
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
        [cdiv(T, WEIGHTS_WORKGROUP), L, B]);
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
          { binding: 0, resource: { buffer: uniforms, offset: slot, size: UNIFORM_BYTES } },
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
    if (failed || gpu.gone()) gpu.releasePool();
  }
}
