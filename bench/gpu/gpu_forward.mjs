// bench/gpu/gpu.mjs's whole-forward profiles: MultiHeadAttention.forward host to host (upload,
// kernels, readback) on backend 'webgpu', with the default variants pinned, the fastest of this
// run's kernel profiles pinned, and nothing pinned (the selection by measurement picks); and
// decode steps over a KV cache per storage dtype (profileDecodeSteps()).
import { MultiHeadAttention, configure } from '../../web/src/node.js';
import { defaultVariant } from '../../web/src/webgpu/selection/kernel_config.js';
import { selectionHooks } from '../../web/src/webgpu/selection/kernel_selection.js';
import { passHooks } from '../../web/src/webgpu/forward_pass.js';
import { transferModes } from '../../web/src/webgpu/staging_uploads.js';
import { filled } from '../../tests/contract/random.mjs';
import { makeWeights, maxAbsDiff } from '../lib/suite.mjs';
import { DTYPES, REFERENCE_DTYPE, stepBytes } from '../decode/decode_dtypes.mjs';
import { makeDecodeWeights, stateDict } from '../decode/decode_suite.mjs';

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// One configuration: create, first call, (unpinned) the selection's calls, then timed calls;
// resolves to the row.
async function timeForward(gpu, { L, E, h }, label, pins, budget, print) {
  configure({ gpuKernels: pins });
  let kernels = null;
  selectionHooks.onCall = (names) => { kernels = names; };
  const x = { data: filled(L * E, 7), shape: [1, L, E] };
  let t0 = performance.now();
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, backend: 'webgpu', gpu });
  const createMs = performance.now() - t0;
  mha.loadStateDict(makeWeights(E));
  let first = null;
  passHooks.onPhases = label === 'default' ? (p) => { first = p; } : null;
  t0 = performance.now();
  await mha.forward(x, x, x);
  const firstMs = performance.now() - t0;
  passHooks.onPhases = null;
  if (first) print(phasesRow('first call', { L, E, h }, firstMs, first));
  // Unpinned: the calls that measure candidates first (bounded), then the timed calls.
  const undecided = () => mha.gpuProfile()?.measuring && mha.gpuProfile().classes.some((c) => c.chosen === null);
  let selectionCalls = 0;
  for (const end = performance.now() + budget.selectionMs; undecided() && performance.now() < end; selectionCalls++) await mha.forward(x, x, x);
  const times = [];
  const end = performance.now() + budget.forwardMs;
  while (times.length < 3 || (performance.now() < end && times.length < 40)) {
    t0 = performance.now();
    await mha.forward(x, x, x);
    times.push(performance.now() - t0);
  }
  const rows = 2 ** Math.ceil(Math.log2(L));  // call_kernels.js's buckets: this shape's classes
  const profile = mha.gpuProfile()?.classes.filter((c) => c.shapeClass.startsWith(`M${rows}:`) || c.shapeClass.includes(`:L${rows}:`))
    .map(({ family, chosen, medianMs }) => ({ family, chosen, medianMs }));
  const phases = [];
  if (label === 'fastest') for (const [name, modes] of TRANSFER_MODES) phases.push(await phaseRow(mha, x, { L, E, h }, name, modes));
  mha.dispose();
  selectionHooks.onCall = null;
  const medianMs = median(times);
  const flops = 8 * L * E * E + 4 * L * L * E;
  phases.forEach(print);
  return {
    kind: 'forward', variant: label, shape: `L${L} E${E} h${h}`, createMs, firstMs, medianMs, runs: times.length, selectionCalls,
    gflops: flops / medianMs / 1e6, kernels: kernels ? `${kernels.linear}+${kernels.attention ?? kernels.decode}` : undefined, profile,
  };
}

/**
 * Where one forward's time goes: medians over a few calls of forward_pass.js's phases, the whole
 * call as the API sees it (total), and what lies outside the GPU pass (outside: the API's checks,
 * the copy of the inputs, the result's tensors), with each transfer option (staging_uploads.js).
 * The 'default' configuration also reports its first call's phases (the pipelines are compiled
 * by create(); the call's buffers are not).
 */
async function phaseRow(mha, x, { L, E, h }, label, modes) {
  Object.assign(transferModes, modes);
  const rows = [];
  passHooks.onPhases = (p) => rows.push(p);
  const totals = [];
  for (let i = 0; i < 8; i++) {
    const t0 = performance.now();
    await mha.forward(x, x, x);
    totals.push(performance.now() - t0);
  }
  passHooks.onPhases = null;
  Object.assign(transferModes, { staging: 'auto', prefault: 'auto' });
  rows.shift();  // a call that switched modes (staging buffers made, mapped again)
  totals.shift();
  const names = Object.keys(rows[0]);
  const phases = Object.fromEntries(names.map((n) => [n, rows[0][n] === null ? null : median(rows.map((r) => r[n]))]));
  return phasesRow(label, { L, E, h }, median(totals), phases);
}

// The transfer options (staging_uploads.js) compared on the fastest kernels: each its phases
// ('fastest' is the default, 'auto'; '-both' the path before them).
const TRANSFER_MODES = [
  ['fastest', { staging: 'auto', prefault: 'auto' }],  // the default: both from 1 MiB
  ['-both', { staging: false, prefault: false }],
  ['+staging', { staging: true, prefault: false }],
  ['+prefault', { staging: false, prefault: true }],
];

// A 'phases' row: the pass's phases, the call's total, and the rest (outside the pass).
function phasesRow(variant, { L, E, h }, total, phases) {
  const inPass = ['pipelines', 'encode', 'prefault', 'map', 'scopes', 'copyOut'].reduce((a, n) => a + phases[n], 0);
  return { kind: 'phases', variant, shape: `L${L} E${E} h${h}`, total, outside: total - inPass, ...phases };
}

/**
 * The forward at shape (L, E, h): defaults pinned, the first kernels (tile64 + row) pinned, best
 * ({ linear, attention }) pinned, unpinned.
 */
export async function profileForward(gpu, shape, best, budget, print) {
  const configs = [
    ['default', { linear: defaultVariant('linear', shape.L), attention: defaultVariant('attention', shape.L) }],
    ['base', { linear: 'tile64', attention: 'row' }],
    ['fastest', { linear: best.linear, attention: best.attention }],
    ['selected', {}],
  ];
  for (const [label, pins] of configs) {
    try {
      print(await timeForward(gpu, shape, label, pins, budget, print));
    } catch (e) {
      print({ kind: 'forward', variant: label, shape: `L${shape.L} E${shape.E} h${shape.h}`, error: String(e?.message ?? e) });
    }
  }
  configure({ gpuKernels: {} });
}

/**
 * Decode steps per storage dtype on backend 'webgpu' (bench/gpu/gpu.mjs --decode): for each (E, h,
 * hkv) of `configs` and dtype of `dtypes` (decode_dtypes.mjs: weightsDtype + cache dtype, and
 * activations for i8a8 / i4a8), a
 * module and a cache; one prefill of lengths[0] tokens into the empty cache (the weightsDtype's
 * prefill, timed once), then per n of `lengths` the cache filled to n (an untimed prefill of the
 * rest), the kernel selection's calls (untimed, bounded) and one-token steps timed: median and
 * best ms, and GB/s of the bytes a step must read (stepBytes()). max|Δ| is the first timed step's
 * output against the float32 module's at the same position (the dtypes round differently: a
 * sanity figure, not a test). Prints one row per prefill and per (config, dtype, n).
 */
export async function profileDecodeSteps(gpu, { configs, lengths, dtypes, headDim, budget }, print) {
  const STEPS = 24;  // timed steps per cell, at most
  const SELECTION_CALLS = 64;  // untimed steps the kernel selection may take per cell, at most
  const maxLength = Math.max(...lengths) + lengths.length * (STEPS + SELECTION_CALLS) + 1;
  for (const config of configs) {
    const { E, h, hkv } = config;
    const x = filled(maxLength * E, 11);
    const tokens = (from, to) => ({ data: x.subarray(from * E, to * E), shape: [1, to - from, E] });
    const reference = new Map();  // n → the float32 module's first timed step's output
    for (const dtype of dtypes) {
      const { weights, cache: cacheDtype, activations } = DTYPES[dtype];
      const shape = (n) => `E${E} h${h} hkv${hkv} n${n}`;
      // i8a8, i4a8: int8 activations (q8_projection.js's kernels in place of the linear variants).
      const mha = await MultiHeadAttention.create({
        embedDim: E, numHeads: h, numKvHeads: hkv, weightsDtype: weights, ...(activations ? { activations } : {}), backend: 'webgpu', gpu,
      });
      try {
        mha.loadStateDict(stateDict(mha.stateDictShapes, makeDecodeWeights(config, 1000 + E)));
        const cache = mha.createCache({ maxLength, dtype: cacheDtype });
        const step = async () => {
          const t = tokens(cache.length, cache.length + 1);
          return (await mha.forward(t, t, t, { cache })).output.data;
        };
        const undecided = () => mha.gpuProfile()?.measuring && mha.gpuProfile().classes.some((c) => c.chosen === null);
        const prefill = (into, n) => mha.forward(tokens(into.length, n), tokens(into.length, n), tokens(into.length, n), { cache: into });
        for (const [i, n] of lengths.entries()) {
          if (i === 0) {
            // The prefill timed on its second run at least (pipelines compiled, the kernel
            // selection's calls of its shape class made), in a cache of its own.
            const scratch = mha.createCache({ maxLength: n, dtype: cacheDtype });
            for (let calls = 0; calls === 0 || (undecided() && calls < 8); calls++) {
              await prefill(scratch, n);
              scratch.reset();
            }
            scratch.dispose();
          }
          const t0 = performance.now();
          await prefill(cache, n);
          if (i === 0) {
            const ms = performance.now() - t0;
            print({ kind: 'prefill', variant: `w:${weights}`, shape: shape(n), ms, gflops: (8 * n * E * E + 4 * n * n * E) / ms / 1e6 });
          }
          for (let calls = 0, end = performance.now() + budget.selectionMs; undecided() && calls < SELECTION_CALLS && performance.now() < end; calls++) await step();
          const at = cache.length;
          const first = await step();
          if (dtype === REFERENCE_DTYPE) reference.set(n, { at, output: first });
          const ref = reference.get(n);
          const times = [];
          for (const end = performance.now() + budget.forwardMs; times.length < 3 || (times.length < STEPS && performance.now() < end);) {
            const s0 = performance.now();
            await step();
            times.push(performance.now() - s0);
          }
          const medianMs = median(times);
          const bytes = stepBytes(config, headDim, at, dtype);
          print({
            kind: 'step', variant: `${dtype}:${cacheDtype}`, shape: shape(at), medianMs, bestMs: Math.min(...times), steps: times.length,
            gbps: (bytes.weights + bytes.cache) / medianMs / 1e6,
            maxAbsDiff: ref && ref.at === at ? maxAbsDiff(first, ref.output) : undefined,
          });
        }
      } catch (e) {
        print({ kind: 'step', variant: dtype, shape: `E${E} h${h} hkv${hkv}`, error: String(e?.message ?? e) });
      } finally {
        mha.dispose();
      }
    }
  }
}
