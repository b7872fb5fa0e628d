// The context one MHA forward encodes through (forward_encode.js's ctx): the call's buffers by
// role (the module's pooled ones, or a 'gpu-buffer' result's own), its inputs put on the device,
// its uniform slots and dispatches, and the bind group of each dispatch (kept: bind_groups.js).
// forward_pass.js makes one per call and encodes its dispatches into a compute pass.
import { Usage } from './device.js';
import { transferOn } from './staging_uploads.js';
import { RESULT_USAGE } from './gpu_tensor.js';
import { deviceBytes, devicePieces, isDeviceData } from '../base/gpu_tensors.js';
import { bindGroupLayout } from './pipelines.js';
import { bindGroupFor } from './bind_groups.js';
import { packParams } from './kernel_params.js';
import { WIDEN_HALF_PARAMS, widenHalfGrid } from './kernels/widen_half.wgsl.js';

export const F32 = 4;
/** Bytes of a dispatch's uniform slot: minUniformBufferOffsetAlignment's largest allowed value. */
export const UNIFORM_SLOT = 256;
/** Usage of the buffers the kernels read that the CPU writes. */
export const STORAGE_IN = Usage.STORAGE | Usage.COPY_DST;

// What encodeForward() writes through: pooled buffers by role, uploads (through the module's
// staging buffers, copied on the encoder, where transferModes.staging says so), uniform slots,
// dispatches. `recorder`: the OpenPass (open_pass.js) the call is encoded into; its encoder is
// taken (ending the pass the calls before left open) only for a copy before the call's pass, so
// that a batch's call that copies nothing in joins that pass.
// `results` (output: 'gpu-buffer'): the roles ('output', 'weights') whose buffers are made for the
// caller (ctx.made keeps them), written by the kernels, or for a small result written in the
// role's pooled buffer and copied into the caller's after the pass (ctx.copiesOut); a GPU input
// (DeviceData) is bound as it is where bindsAsIs(), else copied on the device into the role's buffer.
// A batched call (plan.batch) writes its host inputs with writeBuffer() alone: the staging buffers
// are mapped again after their submit, which is the batch's. A float16 GPU input is widened on the
// device (kernels/widen_half.wgsl.js, `widenHalf`: the call's pipeline) into the role's buffer.
// Without a recorder (reserveBuffers()) an upload only makes the buffers it would write through.
// `cache`: the call's GpuKvCache, which its bind groups are kept under (else the module's `gpu`).
// `out` (the call's deviceOut: checkGpuOut()'s DeviceData): the output is written in the role's
// pooled buffer and copied into that place of the caller's buffer after the pass (ctx.placed), or
// in a step's call written there by the kernels where bindsAsIs().
// With `tape` (a GpuStep's call), what its replays play again (step_tape.js) is kept in ctx.tape:
// the pooled buffers taken ([role, floats, usage, buffer]), the copies on the encoder before the
// pass (copiesIn: [from, fromOffset, to, toOffset, bytes]) and the buffers written by
// writeBuffer() (written: role → buffer); null for other calls.
export function encodingContext(gpu, recorder, { results = null, batched = false, widenHalf = null, cache = null, out = null, tape = false } = {}) {
  const { device } = gpu;
  const staging = (data) => (!batched && transferOn('staging', data.byteLength) ? gpu.staging : null);
  const sizes = new Map();  // buffer → the bytes this call uses of it (the binding size)
  const buffers = new Map();  // role → buffer
  const asIs = new Set();  // the caller's buffers bound as they are (GPU inputs, a step's out)
  const kept = tape ? { taken: [], copiesIn: [], written: new Map() } : null;
  const pooled = (role, floats, usage) => {
    const b = gpu.pooled(role, floats, usage);
    kept?.taken.push([role, floats, usage, b]);
    return b;
  };
  // A caller's buffer bound as it is, `bytes` of it (the most any of the call's bindings read or write).
  const boundAsIs = (b, bytes) => {
    sizes.set(b, Math.max(sizes.get(b) ?? 0, bytes));
    asIs.add(b);
    return b;
  };
  // A step's call binds its GPU inputs and its `out` as they are at any size: its bind groups are
  // made once, for its tape, not at each token (see SMALL_TENSOR_BYTES).
  const { made, placed, copiesOut, result } = resultBuffers(gpu, out, pooled, tape && out && bindsAsIs(out, true) ? boundAsIs : null);
  const buffer = (floats, usage, role) => {
    const b = results?.includes(role) ? result(role, Math.max(floats, 1) * F32, usage) : pooled(role, floats, usage);
    if (!asIs.has(b)) sizes.set(b, Math.max(floats, 1) * F32);
    buffers.set(role, b);
    return b;
  };
  const uploads = new Map();  // the same typed array goes up once
  let uploadMs = 0;  // time in writeBuffer() (passHooks' phases)
  const upload = (data, role) => {
    if (!uploads.has(data) && isDeviceData(data) && data.dtype === 'float16') uploads.set(data, widened(data, role));
    // A GPU input with STORAGE usage is bound as it is (its kernels only read it): no copy.
    if (!uploads.has(data) && isDeviceData(data) && bindsAsIs(data, tape)) uploads.set(data, boundAsIs(data.gpuBuffer, data.length * F32));
    if (!uploads.has(data) && !recorder) {
      uploads.set(data, buffer(data.length, STORAGE_IN, role));
      if (staging(data)) gpu.staging.reserve(role, data.byteLength);
    }
    if (!uploads.has(data)) {
      const b = buffer(data.length, STORAGE_IN, role);
      const t0 = performance.now();
      if (isDeviceData(data)) copyPieces(recorder.encoder(), data, b, kept);
      else if (!staging(data)?.write(recorder.encoder(), role, data, b)) {
        device.queue.writeBuffer(b, 0, data);
        kept?.written.set(role, b);
      }
      uploadMs += performance.now() - t0;
      uploads.set(data, b);
    }
    return uploads.get(data);
  };
  const slots = [];  // one 256-byte uniform slot per dispatch
  const uniform = (block) => (slots.push(block), (slots.length - 1) * UNIFORM_SLOT);
  const dispatches = [];
  const dispatch = (pipeline, slot, bindings, groups) => dispatches.push({ pipeline, slot, bindings, groups });
  // A float16 GPU input's words bound as they are (STORAGE usage) or copied on the device into the
  // role's half buffer, then widened into the role's float32 buffer before the kernels read it.
  const widened = (data, role) => {
    const bytes = deviceBytes('float16', data.length);
    let halves;
    if (bindsAsIs(data, tape)) {
      halves = boundAsIs(data.gpuBuffer, bytes);
    } else {
      halves = buffer(bytes / F32, STORAGE_IN, `${role} float16`);
      copyPieces(recorder.encoder(), data, halves, kept);
    }
    const b = buffer(data.length, STORAGE_IN, role);
    dispatch(widenHalf, uniform(packParams(WIDEN_HALF_PARAMS, { count: data.length })), [halves, b], widenHalfGrid(data.length));
    return b;
  };
  // The call's bind group (bind_groups.js): kept under its cache, else its module, unless it binds
  // a buffer of the caller's (callersOwn(): one more, a GpuStep's uniforms). Those buffers are
  // known once the dispatches are (encodePass()), and gathered once a call, not once a dispatch.
  const owned = new Set();
  let callers = null;
  const bindGroup = (pipeline, entries) => {
    callers ??= new Set([...asIs, ...made.values(), ...owned]);
    return bindGroupFor(device, cache ?? gpu, callers, pipeline, bindGroupLayout(pipeline), entries);
  };
  return { device, params: gpu.params, buffers, buffer, result, upload, uniform, dispatch, bindGroup, callersOwn: (b) => owned.add(b), sizes, slots, dispatches, made, placed, copiesOut, tape: kept, uploadMs: () => uploadMs };
}

// A caller's tensor of at most this many bytes (a decode step's rows) is copied on the device into
// the module's pooled buffer (and a result out of one) rather than bound as it is: a bind group
// that binds a caller's buffer is made again at every call (bind_groups.js), 20–33 µs of the
// host's time each on SwiftShader's Dawn, where a small copy is one command, and the groups of
// pooled buffers are kept. Larger tensors are bound as they are (a copy would cost the GPU time
// and memory).
export const SMALL_TENSOR_BYTES = 1 << 18;

// Whether a GPU tensor (an input, or a step's `out`) is bound as it is, not copied: one run from
// byte 0 of a buffer with STORAGE, in a step's call (`always`), larger than SMALL_TENSOR_BYTES or
// without COPY_SRC.
const bindsAsIs = (data, always = false) => data.byteOffset === 0 && !data.pieces && Boolean(data.gpuBuffer.usage & Usage.STORAGE)
  && (always || deviceBytes(data.dtype, data.length) > SMALL_TENSOR_BYTES || !(data.gpuBuffer.usage & Usage.COPY_SRC));

// Where a call's 'gpu-buffer' results go: result(role, bytes, usage, pooledRole) gives the buffer
// the kernels write result `role` into: a new buffer for the caller (made); for a small result (or
// the output with `out`: placed) the pooled buffer of `pooledRole`, copied into the caller's after
// the pass (copiesOut: [pooled, to, bytes, at]); or, given `bindOut(buffer, bytes)` (a step's
// out bound as it is), the output's `out` itself. pooled(role, floats, usage): the pool's.
function resultBuffers(gpu, out, pooled, bindOut) {
  const made = new Map();  // role → a result buffer made for the caller
  const placed = new Map();  // role → the caller's `out` it is written or copied into
  const copiesOut = [];
  const result = (role, bytes, usage, pooledRole = role) => {
    const into = role === 'output' ? out : null;
    if (into) placed.set(role, into);
    if (into && bindOut) return bindOut(into.gpuBuffer, bytes);
    const b = into ? null : gpu.device.createBuffer({ size: bytes, usage: RESULT_USAGE, label: `webattention ${pooledRole}` });
    if (!into) made.set(role, b);
    if (!into && bytes > SMALL_TENSOR_BYTES) return b;
    const kernelsWrite = pooled(pooledRole, bytes / F32, usage | Usage.COPY_SRC);
    copiesOut.push([kernelsWrite, into?.gpuBuffer ?? b, bytes, into?.byteOffset ?? 0]);
    return kernelsWrite;
  };
  return { made, placed, copiesOut, result };
}

// A GPU input's bytes (its pieces: rows of a caller's tensor, one after the other) copied into
// `to`, each copy listed in the tape's copiesIn where the call keeps one.
function copyPieces(encoder, data, to, tape) {
  let at = 0;
  for (const [from, bytes] of devicePieces(data)) {
    encoder.copyBufferToBuffer(data.gpuBuffer, from, to, at, bytes);
    tape?.copiesIn.push([data.gpuBuffer, from, to, at, bytes]);
    at += bytes;
  }
}
