#!/usr/bin/env node
// A decode step through a stack of layers on the GPU, tensors on the device between layers
// (docs/webgpu/steps.md#one-submit-per-step): per layer (each forward() submits its own command buffer)
// and batched (a GpuBatch: one queue.submit() per token), batched into out (each layer's output
// copied into one of two buffers the bench keeps: forward()'s `out`, no buffer made per call), and
// replayed (those calls recorded once in a GpuStep, then replay() per token), float32 and int4
// weights.
//
//   node bench/gpu/gpu_decode_stack.mjs [--quick] [--json] [--markdown] [--layers N] [--steps-ms MS] [--idle-ms MS] [--grow] [--host-weights]
//   VK_ICD_FILENAMES=<a GPU's Vulkan ICD .json> node bench/gpu/gpu_decode_stack.mjs   (a GPU)
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/gpu/gpu_decode_stack.mjs --quick
//
// Default: 24 layers, E 2048, 32 query heads over 8 KV heads (d 64), each layer on its own float32
// KV cache holding 511 positions (a prefill through the stack), then one-token steps at position
// 511 (the cache is cut back to 511 after each, so every step attends 512 keys; --grow: it is not,
// each step attends one key more, as a generation's steps do, at most 2000 steps). A step is the
// stack's forward() calls on GPU tensors plus the read() of the last output (what a token's
// sampling needs). --quick: 4 layers, E 128, 2/1 heads, 63 cached positions (for SwiftShader).
// The layers keep their weights on the GPU only (create()'s hostWeights: false; --host-weights:
// in WASM memory too, as by default). The kernel selection decides first (letSelectionDecide()).
// Prints per weights dtype and mode: median and best ms per token, the batched step's host time
// before its submit (its layers' forward() calls: what bounds a step however fast the GPU; median
// and best), tokens timed, queue.submit() calls per token, max |Δ| of a mode's second step's last
// output against the per-layer one (0: bit for bit), and the WASM memory the stack holds
// (wasmMemoryInUse() after it was made, less before); and two last rows, the host's floor under the
// record columns: Dawn's calls alone for as many layers and dispatches (dawn_floor.mjs), as a
// batched step makes them and as a replay does.
// --idle-ms: a pause before each step, in which the garbage is collected where node runs with
// --expose-gc (host times free of its pauses).
import { benchAdapter } from './gpu_adapter.mjs';
import { GpuBatch, GpuStep, MultiHeadAttention, wasmMemoryInUse } from '../../web/src/node.js';
import { filled } from '../../tests/contract/random.mjs';
import { HEAD_DIM, makeDecodeWeights, stateDict } from '../decode/decode_suite.mjs';
import { markdownTable, plainTable } from '../lib/table.mjs';
import { dawnFloor } from './dawn_floor.mjs';

const args = process.argv.slice(2);
const flag = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const quick = args.includes('--quick');
const shape = quick ? { layers: 4, E: 128, h: 2, hkv: 1, cached: 63 } : { layers: 24, E: 2048, h: 32, hkv: 8, cached: 511 };
shape.layers = flag('--layers', shape.layers);
const stepsMs = flag('--steps-ms', quick ? 3000 : 5000);
// A pause before each step: on SwiftShader, npm webgpu's polling during a step's map leaves
// garbage whose collection would land in the next step's recording (docs/webgpu/steps.md).
const idleMs = flag('--idle-ms', 0);
const WEIGHTS = ['float32', 'int4'];
const hostWeights = args.includes('--host-weights');
const grow = args.includes('--grow');
const MAX_STEPS = 2000;

const { adapter, info } = await benchAdapter();
console.log(`adapter: ${JSON.stringify({ vendor: info.vendor, architecture: info.architecture, description: info.description })}`);
const limitNames = ['maxStorageBufferBindingSize', 'maxBufferSize'];
const device = await adapter.requestDevice({ requiredLimits: Object.fromEntries(limitNames.map((n) => [n, adapter.limits[n]])) });
device.lost.then((lost) => {
  console.log(`DEVICE LOST (${lost.reason}: ${lost.message})`);
  process.exit(3);
});

// Calls of proto[name], counted by a wrapper on the prototype: { calls, at (the last one's time) }.
function counted(proto, name) {
  const counter = { calls: 0, at: 0 };
  const original = proto[name];
  proto[name] = function counting(...a) { counter.calls++; counter.at = performance.now(); return original.apply(this, a); };
  return counter;
}
// queue.submit() calls, and dispatches (a batched step's: the Dawn floor's per layer, dawn_floor.mjs).
const submits = counted(Object.getPrototypeOf(device.queue), 'submit');
const dispatches = counted(globalThis.GPUComputePassEncoder.prototype, 'dispatchWorkgroups');

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** A GPU tensor of `data` ([1, rows, E]) on the device. */
function onDevice(data, rows) {
  const gpuBuffer = device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, mappedAtCreation: true });
  new Float32Array(gpuBuffer.getMappedRange()).set(data);
  gpuBuffer.unmap();
  return { gpuBuffer, shape: [1, rows, shape.E], dtype: 'float32' };
}

// One pass through the stack from GPU tensor x (kept), into `batch` when given, each layer's output
// into places[i % 2] when given (forward()'s `out`); the last output. recorded: when the last
// layer's forward() resolved (a batch's: before its submit).
async function throughStack(layers, caches, x, batch, places = null) {
  let t = x;
  for (const [i, layer] of layers.entries()) {
    const into = places ? { out: places[i % 2] } : {};
    const { output } = await layer.forward(t, t, t, { cache: caches[i], output: 'gpu-buffer', ...(batch ? { batch } : {}), ...into });
    if (t !== x) t.dispose();  // a place of `places`: left alone
    t = output;
  }
  const recorded = performance.now();
  if (batch) await batch.submit();
  return Object.assign(t, { recorded });
}

// The layers of one weights dtype, each with its cache filled by a prefill through the stack.
async function makeStack(weightsDtype) {
  const { layers: n, E, h, hkv, cached } = shape;
  const probe = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, backend: 'wasm' });
  const sd = stateDict(probe.stateDictShapes, makeDecodeWeights({ E, h, hkv }));
  probe.dispose();
  const layers = [];
  const before = await wasmMemoryInUse();
  for (let i = 0; i < n; i++) {
    const m = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, backend: 'webgpu', gpu: device, weightsDtype, hostWeights });
    m.loadStateDict(sd);
    layers.push(m);
  }
  const caches = layers.map((m) => m.createCache({ maxLength: cached + 1 + (grow ? MAX_STEPS + 8 : 0) }));
  const prompt = onDevice(filled(cached * E, 5), cached);
  (await throughStack(layers, caches, prompt, null)).dispose();
  prompt.gpuBuffer.destroy();
  return { layers, caches, wasmMB: ((await wasmMemoryInUse()) - before) / 2 ** 20 };
}

// On a hardware adapter the kernel selection measures unbatched calls (a batched one runs what
// it chose): per-layer steps first until a one-row step's classes are decided (at most 60 s).
async function letSelectionDecide(stack, x) {
  const undecided = () => {
    const profile = stack.layers[0].gpuProfile();
    return profile?.measuring && profile.classes.some((c) => (c.shapeClass.startsWith('M1:') || c.shapeClass.includes(':L1:')) && c.chosen === null);
  };
  let steps = 0;
  for (const end = performance.now() + 60000; (steps === 0 || undecided()) && performance.now() < end; steps++) {
    (await throughStack(stack.layers, stack.caches, x, null)).dispose();
    for (const c of stack.caches) c.truncate(shape.cached);
  }
  return steps;
}

// Timed one-token steps in `mode` ('per layer' | 'batched' | 'batched into out' | 'replayed'); the
// row, and the second step's output values. A replayed step's host time: until its queue.submit().
async function timeSteps(stack, mode, x) {
  const replayed = mode === 'replayed';
  const batch = mode === 'per layer' ? null : replayed ? new GpuStep() : new GpuBatch();
  const places = mode === 'batched into out' || replayed ? [0, 1].map(() => onDevice(new Float32Array(shape.E), 1)) : null;
  let last = null;  // a replayed step's output: the recording's last place
  const times = [];
  const records = [];  // a batched step's host time before its submit: its layers' forward() calls
  let values = null;
  let stepSubmits = 0;
  let stepDispatches = 0;
  const end = performance.now() + stepsMs;
  for (let step = 0; step < 3 || (performance.now() < end && step < MAX_STEPS); step++) {
    if (idleMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, idleMs));
      globalThis.gc?.();
    }
    const before = submits.calls;
    const dispatchesBefore = dispatches.calls;
    const t0 = performance.now();
    if (replayed && last) await batch.replay();
    else last = await throughStack(stack.layers, stack.caches, x, batch, places);
    const out = replayed ? Object.assign(last, { recorded: submits.at }) : last;
    const read = await out.read();
    if (step === 1) values = read;  // the second step's (a replayed mode's first replay): at one length in every mode, --grow too
    if (step >= 2) times.push(performance.now() - t0);  // the first two: warm-up (pipelines)
    if (step >= 2 && batch) records.push(out.recorded - t0);
    stepSubmits = submits.calls - before - 1;  // read()'s copy is one
    stepDispatches = dispatches.calls - dispatchesBefore;
    if (!replayed) out.dispose();  // a replayed step's is the recording's, read again
    if (!grow) for (const c of stack.caches) c.truncate(shape.cached);
  }
  for (const c of stack.caches) c.truncate(shape.cached);
  for (const p of places ?? []) p.gpuBuffer.destroy();
  const [recordMs, bestRecordMs] = batch ? [median(records), Math.min(...records)] : [null, null];
  return { row: { mode, medianMs: median(times), bestMs: Math.min(...times), recordMs, bestRecordMs, tokens: times.length, submits: stepSubmits, dispatches: stepDispatches }, values };
}

const rows = [];
const x = onDevice(filled(shape.E, 9), 1);
for (const weights of WEIGHTS) {
  const stack = await makeStack(weights);
  const selectionSteps = await letSelectionDecide(stack, x);
  console.log(`${weights}: ${selectionSteps} step(s) before the selection decided`);
  const perLayer = await timeSteps(stack, 'per layer', x);
  const batched = await timeSteps(stack, 'batched', x);
  const placed = await timeSteps(stack, 'batched into out', x);
  const replayed = await timeSteps(stack, 'replayed', x);
  const diff = (run) => run.values.reduce((m, v, i) => Math.max(m, Math.abs(v - perLayer.values[i])), 0);
  rows.push({ weights, ...perLayer.row, maxAbsDiff: null, wasmMB: stack.wasmMB });
  for (const run of [batched, placed, replayed]) rows.push({ weights, ...run.row, maxAbsDiff: diff(run), wasmMB: stack.wasmMB });
  for (const m of stack.layers) m.dispose();
}
x.gpuBuffer.destroy();
// The floor under the batched rows' record column: Dawn's calls alone for as many layers and
// dispatches (dawn_floor.mjs), what the recording would cost if the package's JavaScript cost nothing.
const layerDispatches = Math.ceil(Math.max(...rows.filter((r) => r.mode === 'batched').map((r) => r.dispatches)) / shape.layers);
// And under the replayed rows': a replay's Dawn calls (no result buffer, no copies).
for (const replay of [false, true]) {
  const floor = await dawnFloor(device, { layers: shape.layers, dispatches: layerDispatches, steps: quick ? 12 : 40, idleMs, replay });
  rows.push({ weights: '-', mode: `Dawn calls only${replay ? ', as replayed' : ''} (${layerDispatches} dispatches a layer)`, medianMs: null, bestMs: null,
    recordMs: floor.medianMs, bestRecordMs: floor.bestMs, tokens: floor.steps, submits: 1, maxAbsDiff: null, wasmMB: null });
}

const { layers, E, h, hkv, cached } = shape;
console.log(`${layers} layers, E ${E}, heads ${h}/${hkv} (d ${HEAD_DIM}), float32 caches at ${cached + 1} keys${grow ? ' and growing' : ''}, hostWeights ${hostWeights}; ms per token (a step + read())`);
const fmt = (v, d = 3) => (v === null ? '-' : Number(v).toFixed(d));
const columns = [['weights', (r) => r.weights], ['mode', (r) => r.mode], ['median ms', (r) => fmt(r.medianMs), 'r'],
  ['best ms', (r) => fmt(r.bestMs), 'r'], ['host record ms', (r) => fmt(r.recordMs), 'r'],
  ['best record ms', (r) => fmt(r.bestRecordMs), 'r'], ['tokens', (r) => String(r.tokens), 'r'], ['submits/token', (r) => String(r.submits), 'r'],
  ['max|Δ| vs per layer', (r) => (r.maxAbsDiff === null ? '-' : r.maxAbsDiff.toExponential(1)), 'r'], ['WASM MB held', (r) => fmt(r.wasmMB, 1), 'r']];
if (args.includes('--json')) for (const r of rows) console.log(JSON.stringify({ ...shape, hostWeights, grow, ...r }));
else console.log(plainTable(columns, rows));
if (args.includes('--markdown')) console.log(`\n${markdownTable(columns, rows)}`);
process.exit(0);
