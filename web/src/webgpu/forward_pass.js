// One MHA forward on the GPU: chooses the call's kernel variants and awaits their pipelines
// (call_kernels.js), then, with no pause in between (error scopes are a device-wide stack that
// other modules' calls also push), uploads the inputs, encodes every dispatch (forward_encode.js)
// into one compute pass of one command buffer, submits it and reads the output (and weights)
// back. A call that measures a candidate for the kernel selection is timed (gpu_timer.js).
//
// The executor (webgpu_executor.js) owns the device, the parameter buffers and the
// per-call buffer cache; this file only runs one call on them.
import { MAP_READ, Usage } from './device.js';
import { BATCH, CACHE } from '../base/batch_protocol.js';
import { inScopes } from '../base/error_scopes.js';
import { callKernels } from './call_kernels.js';
import { encodeForward } from './forward_encode.js';
import { callTimer } from './gpu_timer.js';
import { transferOn } from './staging_uploads.js';
import { GpuTensor, flushPendingInputs, refusedInput } from './gpu_tensor.js';
import { lengthsBeforeOf, recordBatched } from './batch_records.js';
import { deviceBytes, gpuResultDtype } from '../base/gpu_tensors.js';
import { MemoryError, WebAttentionError } from '../base/errors.js';
import { recordCheck, recordRunFailure, recordTime, resultDistance, selectionHooks, toleranceFor } from './selection/kernel_selection.js';
import { attentionPath } from './selection/attention_path.js';
import { linearProblems } from './linear_problems.js';
import { captureTape, playTape } from './step_tape.js';
import { OpenPass } from './open_pass.js';
import { paramsBytes, withBlockFields } from './kernel_params.js';
import { APPEND_PARAMS, PREPARED_APPEND_PARAMS } from './kernels/cache_append.wgsl.js';
import { ATTENTION_PARAMS } from './kernels/attention_common.wgsl.js';
import { LINEAR_PARAMS } from './kernels/linear_common.wgsl.js';
import { ROTARY_PARAMS } from './kernels/rotary.wgsl.js';
import { SINKS_PARAMS } from './kernels/attention_sinks.wgsl.js';
import { QK_NORM_PARAMS } from './kernels/qk_norm.wgsl.js';
import { NONFINITE_PARAMS } from './kernels/nonfinite_rows.wgsl.js';
import { WIDEN_HALF_PARAMS, narrowHalfGrid } from './kernels/widen_half.wgsl.js';
import { packParams } from './kernel_params.js';

import { F32, UNIFORM_SLOT, encodingContext } from './encoding_context.js';

export { cdiv } from './forward_encode.js';
// The largest uniform block of the kernels a call binds (a slot holds any of them).
const UNIFORM_BYTES = Math.max(...[APPEND_PARAMS, PREPARED_APPEND_PARAMS, ATTENTION_PARAMS, LINEAR_PARAMS, ROTARY_PARAMS, SINKS_PARAMS, QK_NORM_PARAMS, NONFINITE_PARAMS, WIDEN_HALF_PARAMS].map(paramsBytes));

/**
 * Profiling (bench/gpu/gpu.mjs): onPhases(phases) gets each call's phase times in ms — pipelines
 * (choosing the variants, awaiting their pipelines), encode (uploads, encoding, submit; of which
 * upload: the inputs' writeBuffer() calls or staging copies), prefault (the result arrays made
 * ahead, transferModes.prefault), map (until
 * the readback is mapped: the GPU's work and the copy back), scopes (the error scopes settled),
 * copyOut (the result copied out of the mapped range), gpu (the compute pass by the GPU's
 * timestamps, where the device has them; the call is timed for it). Tests: onDispatches([{ kernel,
 * groups }]) gets each pass's dispatches (kernel: the pipeline's label), e.g. a windowed step's grid.
 */
export const passHooks = { onPhases: null, onDispatches: null };

/** Thrown inside the GPU path when the device is gone. */
export class DeviceLost extends Error {}

// A call's dispatches (encodeForward()), then with `half` (a float16 call's 'gpu-buffer' results)
// the results rounded to float16 into buffers made for the caller (ctx.made: the results' buffers
// from then on; narrowHalfShader()). Returns encodeForward()'s.
function encodeCall(ctx, call, half) {
  const encoded = encodeForward(ctx, call);
  const narrow = (role, source, floats) => {
    const halves = ctx.result(role, Math.max(deviceBytes('float16', floats), 4), Usage.STORAGE, `${role} float16`);
    ctx.dispatch(call.kernels.pipelines.narrowHalf, ctx.uniform(packParams(WIDEN_HALF_PARAMS, { count: floats })), [source, halves], narrowHalfGrid(floats));
  };
  if (half) narrow('output', encoded.out, encoded.outFloats);
  if (half && encoded.weights) narrow('weights', encoded.weights, encoded.weightFloats);
  return encoded;
}

// A 'gpu-buffer' result of ctx: in the buffer made for it, or in its place in the caller's `out`.
const resultTensor = (ctx, role, shape, pending, dtype) =>
  new GpuTensor(ctx.device, ctx.made.get(role) ?? null, [...shape], pending, dtype, ctx.placed.get(role) ?? null);

// The buffer of ctx's uniform slots.
const uniformsBuffer = (ctx) => ctx.buffer(ctx.slots.length * UNIFORM_SLOT / F32, Usage.UNIFORM | Usage.COPY_DST, 'uniforms');
// The buffer the results are read back through.
const readbackBuffer = (ctx, floats) => ctx.buffer(floats, Usage.MAP_READ | Usage.COPY_DST, 'readback');

// Encodes ctx's dispatches into the compute pass of `recorder` (an OpenPass: a batch's is left
// open for the calls after it; timed when `timer` is given), then ctx's copies out. The uniform
// slots go in `region` (a GpuStep's: step_uniforms.js, written at its submit) where given, else in
// the call's uniforms buffer, written now. Returns what a step's tape plays again (step_tape.js):
// { region, packed (the slots' bytes), commands ([{ pipeline, group, groups }], where ctx keeps a
// tape, else null) }.
function encodePass(device, ctx, recorder, timer, region = null) {
  const { slots, dispatches, sizes } = ctx;
  const uniforms = region?.buffer ?? uniformsBuffer(ctx);
  const packed = region?.packed ?? new Uint8Array(slots.length * UNIFORM_SLOT);
  slots.forEach((block, i) => packed.set(new Uint8Array(block), i * UNIFORM_SLOT));
  if (region) {
    region.touch();
    ctx.callersOwn(uniforms);  // the step's: its groups are the tape's, not kept under the cache
  } else {
    device.queue.writeBuffer(uniforms, 0, packed);
  }
  const pass = recorder.pass(timer?.timestampWrites ? { timestampWrites: timer.timestampWrites } : undefined);
  const commands = ctx.tape ? [] : null;
  for (const { pipeline, slot, bindings, groups } of dispatches) {
    const group = ctx.bindGroup(pipeline, [
      { binding: 0, resource: { buffer: uniforms, offset: (region?.offset ?? 0) + slot, size: UNIFORM_BYTES } },
      ...bindings.map((b, i) => ({
        binding: i + 1, resource: sizes.has(b) ? { buffer: b, size: sizes.get(b) } : { buffer: b },
      })),
    ]);
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(...groups);
    commands?.push({ pipeline, group, groups });
  }
  if (ctx.copiesOut.length > 0 || timer) {
    const encoder = recorder.encoder();
    for (const [from, to, bytes, at] of ctx.copiesOut) encoder.copyBufferToBuffer(from, 0, to, at, bytes);
    timer?.afterPass(encoder);
  }
  return { region, packed, commands };
}

// The call's result: { output, weights, kernels, fill(mapped range) }. With transferModes.prefault
// on for its size the arrays are made (and their pages touched) now, while the GPU works, and
// filled from the mapped range later; else they are copied out of it then.
function resultArrays(outFloats, weightFloats, kernels) {
  const result = { output: null, weights: null, kernels };
  const prefault = transferOn('prefault', (outFloats + weightFloats) * F32);
  if (prefault) {
    result.output = new Float32Array(outFloats).fill(0);
    if (weightFloats) result.weights = new Float32Array(weightFloats).fill(0);
  }
  Object.defineProperty(result, 'fill', {
    value(range) {
      const all = new Float32Array(range);
      if (!prefault) {
        result.output = all.slice(0, outFloats);
        result.weights = weightFloats ? all.slice(outFloats) : null;
        return;
      }
      result.output.set(all.subarray(0, outFloats));
      result.weights?.set(all.subarray(outFloats));
    },
  });
  return result;
}

function reportPhases(marks, uploadMs, gpuMs) {
  const names = ['pipelines', 'encode', 'prefault', 'map', 'scopes', 'copyOut'];
  passHooks.onPhases(Object.fromEntries([...names.map((n, i) => [n, marks[i + 1] - marks[i]]), ['upload', uploadMs], ['gpu', gpuMs]]));
}

// A call with plan.batch (dispatch/gpu_batch.js): its dispatches recorded into the batch's encoder,
// under error scopes of its own (popped at once, awaited by batch.submit()), and nothing submitted.
// Resolves to { output, weights, kernels } with GpuTensors that read() submits the batch for.
// `kept`: the call as recorded in a GpuStep (recordAgain()), whose tape a replay plays.
function recordForward(gpu, call, kept = call) {
  const { device } = gpu;
  const { plan, cache } = call;
  const recorder = plan.batch[BATCH.recorderFor](gpu, device);  // before the scopes: it may submit
  let ctx = null;
  let scopes;
  try {
    // A played tape brings the scopes it needs (step_tape.js); an encoding is in scopes of its own.
    scopes = kept.tape ? playTape(gpu, kept.tape, call, recorder) : null;
    if (scopes) ctx = kept.tape.results;
    else scopes = inScopes(device, () => { ctx = encodeRecorded(gpu, call, recorder, kept); });
  } catch (e) {
    gpu.releasePool();
    for (const b of ctx?.made.values() ?? []) b.destroy();
    throw e;
  }
  const lengthsBefore = lengthsBeforeOf(plan);
  const pending = recordBatched(gpu, plan, {
    scopes,
    refused: () => refusedInput(device, plan),
    undo: () => cache?.truncate(lengthsBefore),
    destroy: () => { for (const b of ctx.made.values()) b.destroy(); },
    // A GpuStep's (dispatch/gpu_step.js): the call recorded again at `again`'s plan.
    plan,
    live: () => !gpu.gone(),
    again: (replanned) => gpu.inTurn(replanned.batch, () => {
      const wait = untilRecordable(replanned);
      return wait ? wait.then(() => recordAgain(gpu, call, replanned)) : recordAgain(gpu, call, replanned);
    }),
  }, [...ctx.made.values(), ...[...ctx.placed.values()].map((d) => d.gpuBuffer)]);
  // Its cache advanced as it is recorded, with nothing in between: a batch that drops it
  // (GpuStep.dispose()) undoes what it appended, never before the append.
  cache?.advance(plan.S, plan.cache.rows ?? null);
  return {
    kernels: call.kernels.names,
    output: resultTensor(ctx, 'output', plan.outputShape, pending, gpuResultDtype(plan)),
    weights: ctx.made.has('weights') ? resultTensor(ctx, 'weights', plan.weightsShape, pending, gpuResultDtype(plan)) : null,
  };
}

// recordForward()'s encoding of `call` into `recorder` (the batch's OpenPass): its ctx
// (encodingContext()), and in a GpuStep its tape taken (kept.tape: step_tape.js) for the replays.
function encodeRecorded(gpu, call, recorder, kept) {
  const { plan } = call;
  const half = gpuResultDtype(plan) === 'float16';
  const tape = Boolean(plan.batch[BATCH.replayable]);
  const ctx = encodingContext(gpu, recorder, {
    results: half ? null : ['output', 'weights'], batched: true, widenHalf: call.kernels.pipelines.widenHalf, cache: call.cache, out: plan.deviceOut, tape,
  });
  kept.tape = null;
  // A step's blocks carry their fields, which its tape finds the cache's length in by name.
  if (tape) withBlockFields(() => encodeCall(ctx, call, half));
  else encodeCall(ctx, call, half);
  const pass = encodePass(gpu.device, ctx, recorder, null, uniformRegionOf(plan.batch, kept, ctx.slots.length * UNIFORM_SLOT));
  if (tape) kept.tape = captureTape(gpu, call, ctx, pass);
  passHooks.onDispatches?.(ctx.dispatches.map(({ pipeline, groups }) => ({ kernel: pipeline.label, groups })));
  return ctx;
}

// Where the uniform slots (`bytes`) of a call recorded into `batch` go (its uniformRegion()): for a
// call a GpuStep keeps (`kept`), its region, taken once and reused while it fits.
function uniformRegionOf(batch, kept, bytes) {
  if (!(kept.uniforms?.packed.byteLength >= bytes)) kept.uniforms = batch[BATCH.uniformRegion](bytes);
  return kept.uniforms;
}

// A recorded call (recordForward()'s `call`) recorded again into replanned.batch at `replanned`, its
// plan at the cache's length now (GpuStep.replay()): the kernels its recording chose, as long as
// the attention path is still theirs; the cache advanced as a call's.
function recordAgain(gpu, call, replanned) {
  if (gpu.gone()) throw new DeviceLost('the WebGPU device was lost');
  const { config, cache } = call;
  if (attentionPath(replanned, config, gpu.device.limits) !== call.path) {
    throw new MemoryError(`batch: a recorded call no longer fits its attention kernels at ${replanned.T} keys; make the calls anew`, {
      argument: 'batch', expected: `the ${call.path} path`, actual: `${replanned.T} keys`,
    });
  }
  flushPendingInputs(replanned);
  recordForward(gpu, { ...call, plan: replanned }, call);
  cache?.recordCall(replanned);
}

/**
 * A batched call's wait right before it is recorded (nothing awaited between its end and the
 * record): while a submit of its batch made since the call's turn on its cache awaits WebGPU's
 * verdict, that verdict; a CacheError where it took back rows the call was planned on
 * (dispatch/batch_hold.js). The webgpu executor's calls of several passes wait so too.
 */
export function untilRecordable(plan) {
  const wait = plan.cache?.kvCache?.[CACHE.recordable](plan.cache, plan.batch);
  return wait ? wait.then(() => untilRecordable(plan)) : null;  // null: no promise hop for the usual call
}

// callKernels() on a device that is still there once they are ready.
async function kernelsOf(gpu, args) {
  const kernels = await gpu.untilLost(callKernels(gpu.device, args, gpu));
  if (gpu.gone()) throw new DeviceLost('the WebGPU device was lost');
  return kernels;
}

/**
 * Runs one forward. gpu: { device, params: { win, bin, wout, bout }, pooled(role, floats, usage)
 * (the cached buffer of a role), releasePool(), untilLost(promise) (rejects with DeviceLost when
 * the device goes), gone() (lost or disposed), selecting (whether this device's kernel selection
 * measures) }. path: 'flash' | 'decode' (selection/attention_path.js's attentionPath()). cache:
 * a GpuKvCache for a plan with a cache (one pass: at most its maxRowsPerPass rows), else null.
 * Resolves to { output, weights, kernels: { family: variant name } }: Float32Arrays, or with
 * plan.output 'gpu-buffer' GpuTensors in buffers made for the call (no readback).
 */
export async function runForwardPass(gpu, plan, config, path, cache = null) {
  const { device } = gpu;
  const marks = passHooks.onPhases ? [performance.now()] : null;
  const call = { plan, config, path, cache, problems: linearProblems(plan, config) };
  // A call is timed only where its result is read back, so that a candidate's can be checked:
  // a 'gpu-buffer' call (a batched one among them: its submit is the batch's) runs the variants
  // the module's other calls chose, never a candidate being measured.
  const measuring = gpu.selecting || Boolean(selectionHooks.clock);
  const kernels = await kernelsOf(gpu, { ...call, measuring, timed: plan.output !== 'gpu-buffer' && plan.L > 0 });
  const { names } = kernels;
  selectionHooks.onCall?.(names);
  // A pass of a batched call of several passes (webgpu_executor.js) submits itself, in its turn.
  const recorded = plan.batch && !plan.ownSubmit;
  const recordable = recorded ? untilRecordable(plan) : null;
  if (recordable) await recordable;  // mostly none: no promise hop
  flushPendingInputs(plan);
  if (recorded) return recordForward(gpu, { ...call, kernels });
  const { measured } = kernels;
  const timer = (measured && !selectionHooks.clock) || marks ? callTimer(device) : null;
  marks?.push(performance.now());
  const { result, ms } = await submitCall(gpu, call, kernels, timer, marks).catch((e) => {
    // A candidate's first run that WebGPU refused (not the caller's input, nor a lost device):
    // dropped, and the call made with its reference instead.
    if (!measured?.reference || gpu.gone() || e instanceof WebAttentionError) throw e;
    recordRunFailure(device, measured, e);
    return { result: null };
  });
  if (!result) return runReference(gpu, call, kernels);
  if (!measured) return result;
  const took = selectionHooks.clock ? selectionHooks.clock(names) : ms;
  if (!measured.reference) {
    recordTime(device, measured, took);
    return result;
  }
  // The candidate's first run: the reference runs the same work, untimed, and its result is the
  // call's (kernel_selection.js's recordCheck() keeps the candidate or drops it).
  const reference = await runReference(gpu, call, kernels);
  const tolerance = toleranceFor(kernels.variants[measured.family], reference);
  if (recordCheck(device, measured, resultDistance(result, reference), tolerance)) recordTime(device, measured, took);
  return reference;
}

// The call made with the reference of the candidate `kernels` measure (its first run), untimed: its result.
async function runReference(gpu, call, kernels) {
  const variants = { ...kernels.variants, [kernels.measured.family]: kernels.measured.reference };
  return (await submitCall(gpu, call, await kernelsOf(gpu, { ...call, variants }), null, null)).result;
}

// One submission of the call with `kernels` (callKernels()'s), timed by `timer` (or null): resolves
// to { result, ms } (ms: the timer's, else null).
async function submitCall(gpu, { plan, config, path, cache, problems }, kernels, timer, marks) {
  const { device, untilLost } = gpu;
  const { names } = kernels;
  let scopes = null;
  let failed = true;
  let ctx = null;
  const onDevice = plan.output === 'gpu-buffer';
  const filling = plan.L === 0;  // an encoded cache's filling (gpu_encode.js): no output to read
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  try {
    const recorder = new OpenPass(device.createCommandEncoder({ label: 'webattention forward' }));
    const half = onDevice && gpuResultDtype(plan) === 'float16';
    ctx = encodingContext(gpu, recorder, { results: onDevice && !half ? ['output', 'weights'] : null, widenHalf: kernels.pipelines.widenHalf, cache, out: plan.deviceOut });
    const { out, outFloats, weights, weightFloats } = encodeCall(ctx, { plan, config, path, cache, problems, kernels }, half);
    encodePass(device, ctx, recorder, timer);
    const encoder = recorder.encoder();
    passHooks.onDispatches?.(ctx.dispatches.map(({ pipeline, groups }) => ({ kernel: pipeline.label, groups })));
    const readback = onDevice || filling ? null : readbackBuffer(ctx, outFloats + weightFloats);
    if (readback) encoder.copyBufferToBuffer(out, 0, readback, 0, outFloats * F32);
    if (readback && weights) encoder.copyBufferToBuffer(weights, 0, readback, outFloats * F32, weightFloats * F32);
    timer?.start();
    device.queue.submit([encoder.finish()]);

    scopes = [device.popErrorScope(), device.popErrorScope()];
    scopes.forEach((s) => s.catch(() => {}));
    gpu.staging?.rearm();
    marks?.push(performance.now());
    const result = onDevice || filling ? { kernels: names } : resultArrays(outFloats, weightFloats, names);
    marks?.push(performance.now());
    const readBytes = (outFloats + weightFloats) * F32;
    if (readback) await untilLost(readback.mapAsync(MAP_READ, 0, readBytes));
    marks?.push(performance.now());
    const gpuError = (await untilLost(Promise.all(scopes))).find(Boolean);
    marks?.push(performance.now());
    // A GPU input WebGPU refused (destroyed, another device's) is the caller's error: named.
    if (gpuError) throw ((plan.onDevice || plan.deviceOut) && await refusedInput(device, plan)) || new Error(`${gpuError.constructor?.name ?? 'GPUError'}: ${gpuError.message}`);
    if (filling) {
      result.output = null;
    } else if (onDevice) {
      result.output = resultTensor(ctx, 'output', plan.outputShape, null, gpuResultDtype(plan));
      result.weights = weights ? resultTensor(ctx, 'weights', plan.weightsShape, null, gpuResultDtype(plan)) : null;
    } else {
      const range = readback.getMappedRange(0, readBytes);
      if (range.byteLength !== readBytes) throw new DeviceLost('the readback buffer was unmapped');
      result.fill(range);
      readback.unmap();
    }
    marks?.push(performance.now());
    const ms = timer ? await untilLost(timer.elapsed()) : null;
    if (marks) reportPhases(marks, ctx.uploadMs(), timer?.timestampWrites ? ms : null);
    failed = false;
    return { result, ms };
  } finally {
    // Scopes are popped right after the submit, with no await between push and pop (calls of
    // other modules may overlap); here only when something threw before that.
    if (!scopes) [device.popErrorScope(), device.popErrorScope()].forEach((s) => s.catch(() => {}));
    // A failed call may leave the readback mapped or a buffer half-written: start afresh.
    if (failed || gpu.gone()) gpu.releasePool();
    if (failed) for (const b of ctx?.made.values() ?? []) b.destroy();
    timer?.dispose();
  }
}

/**
 * create({ expect }): makes the pipelines, pooled buffers and staging buffers a call of `plan`
 * would use, running nothing (plan: a call's sizes and options; its query, key and value need only
 * length and byteLength), so that the first such call creates no buffer.
 */
export async function reserveBuffers(gpu, plan, config, path) {
  const call = { plan, config, path, cache: null, problems: linearProblems(plan, config) };
  const kernels = await kernelsOf(gpu, { ...call, measuring: false });
  const ctx = encodingContext(gpu, null, { widenHalf: kernels.pipelines.widenHalf });
  const { outFloats, weightFloats } = encodeForward(ctx, { ...call, kernels });
  uniformsBuffer(ctx);
  readbackBuffer(ctx, outFloats + weightFloats);
}
