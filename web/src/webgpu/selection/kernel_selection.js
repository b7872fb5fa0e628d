// Selection of kernel variants by measurement on the device that runs them. Users' GPUs differ
// (Apple, Intel, AMD, Qualcomm, NVIDIA), so no variant is fastest everywhere: the first calls of a
// shape class each run a different candidate on the real work and are timed (gpu_timer.js); once
// every candidate has run SELECTION_RUNS times, the one with the lowest median is kept for the
// device's lifetime, for every module on it (boards are per GPUDevice, and modules made on one
// GPU object share one device). Afterwards nothing is measured again. A candidate far slower
// than the best on its first run is not run again (SELECTION_PRUNE_RATIO).
//
// A shape class is (family, bucketed sizes, head widths: call_kernels.js builds its key). One call
// measures one family at most (the first in the call's order whose class is undecided): the other
// families run their kept choice or default, so the call's time differs between candidates only
// by the candidate. A pinned family (configure({ gpuKernels })) skips all of this.
//
// Verified on the device: a candidate's first run is followed, on the same call, by its reference
// (the family's default, which runs before measurement and which CI runs everywhere) on the same
// work, untimed; forward_pass.js compares the outputs and the call returns the reference's. A
// candidate further from it than its tolerance (kernel_config.js's DEFAULT_TOLERANCE) is dropped
// for every shape class on that device, listed by gpuProfile() (`rejected`) and warned of once.
// Kernels that CI cannot run in full (features or subgroup sizes that SwiftShader lacks) can so
// enter the selection: one the device computes wrongly is caught on its first run. One sample a
// shape class: a kernel wrong only for some inputs of a class would pass it (none is meant to be).
import { SELECTION_PRUNE_RATIO, SELECTION_RUNS } from './kernel_config.js';
import { pinnedVariant, pinsGeneration } from './gpu_kernel_pins.js';
import { isSoftwareAdapter } from '../device.js';
import { warnOnce } from '../../base/warn_once.js';

const boards = new WeakMap();  // GPUDevice → Map(`family|shapeClass` → board)
const rejections = new WeakMap();  // GPUDevice → Map(`family|name` → gpuProfile()'s rejected entry)
let changes = 0;  // what chooseKernels() reads changed: a time recorded, a candidate dropped

/**
 * A string that changes whenever chooseKernels() may answer a call otherwise than before (a time
 * recorded, a candidate dropped, the pins replaced), or null while a test offers candidates of its
 * own (selectionHooks.candidates): call_kernels.js keeps a call's kernels for the calls like it
 * while it stays.
 */
export const selectionGeneration = () => (selectionHooks.candidates ? null : `${changes}.${pinsGeneration()}`);

/**
 * Whether the kernel selection measures on `device`: not on a software adapter (SwiftShader runs
 * the shaders on the CPU; its timings say nothing about a GPU, and the candidates' compiles would
 * only cost time).
 */
export const selectsKernels = (device) => !isSoftwareAdapter({ info: device.adapterInfo ?? {} });

/**
 * Tests: clock(variants) returns the milliseconds a measured call "took" ({ family: name } of the
 * call) instead of timing the GPU, and makes the selection run on a software adapter too;
 * onCall(variants) sees the variants of every GPU call; candidates(family, descriptors) returns
 * the candidates a decision takes (a deliberately wrong one added, to see it dropped); onChoose()
 * is called each time a call's variants are chosen (not given again: call_kernels.js keeps them).
 */
export const selectionHooks = { clock: null, onCall: null, candidates: null, onChoose: null };

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

function boardOf(device, family, shapeClass, candidates) {
  let map = boards.get(device);
  if (!map) boards.set(device, (map = new Map()));
  const key = `${family}|${shapeClass}`;
  let board = map.get(key);
  if (!board) {
    board = { family, shapeClass, times: Object.fromEntries(candidates.map((v) => [v.name, []])), chosen: null, verified: new Set() };
    map.set(key, board);
  }
  return board;
}

// The default first, then the catalogue's order: the first call of a class runs the default.
const defaultFirst = (preferred, candidates) => [
  ...candidates.filter((v) => v.name === preferred),
  ...candidates.filter((v) => v.name !== preferred),
];

// The candidates still in the running: all until each has run once, then those whose fastest run
// is within SELECTION_PRUNE_RATIO of the fastest run of any.
function live(board) {
  const entries = Object.entries(board.times);
  if (entries.some(([, t]) => t.length === 0)) return entries.map(([name]) => name);
  const best = Math.min(...entries.map(([, t]) => Math.min(...t)));
  return entries.filter(([, t]) => Math.min(...t) <= SELECTION_PRUNE_RATIO * best).map(([name]) => name);
}

/**
 * The variants of one call. decisions: [{ family, shapeClass, candidates, preferred }]
 * (candidates: the descriptors that fit, programs.js's VARIANTS; preferred: the default's name), in
 * the order their families are measured. measuring: whether this device selects at all (a
 * hardware adapter, or a test's clock); timed: whether this call can be timed and its result
 * checked (a 'gpu-buffer' call's, a GpuBatch's among them, cannot: it runs the chosen variant,
 * else the default). Returns { variants: { family: descriptor }, measured: { family, shapeClass,
 * name, reference } | null } (reference: the descriptor to check this run against, or null:
 * recordCheck()).
 */
export function chooseKernels(device, decisions, measuring, timed = true) {
  selectionHooks.onChoose?.();
  const variants = {};
  let measured = null;
  const rejected = rejections.get(device);
  for (const { family, shapeClass, candidates: fitting, preferred } of decisions) {
    const offered = selectionHooks.candidates?.(family, fitting) ?? fitting;
    const candidates = defaultFirst(preferred, offered.filter((v) => !rejected?.has(`${family}|${v.name}`)));
    const named = (name) => candidates.find((v) => v.name === name);
    const pinned = pinnedVariant(family);
    if (pinned !== undefined) {
      variants[family] = named(pinned) ?? candidates[0];
      continue;
    }
    if (!measuring || candidates.length < 2) {
      variants[family] = candidates[0];
      continue;
    }
    const board = boardOf(device, family, shapeClass, candidates);
    // A call that cannot be timed (a GpuBatch's) runs what was chosen, else the default.
    if (board.chosen || measured || !timed) {
      variants[family] = named(board.chosen) ?? candidates[0];
      continue;
    }
    const running = live(board);
    const runs = (v) => (running.includes(v.name) ? board.times[v.name].length : Infinity);
    const next = candidates.reduce((best, v) => (runs(v) < runs(best) ? v : best));
    variants[family] = next;
    // reference: where this run must be checked against the default's output (its first run).
    const reference = next === candidates[0] || board.verified.has(next.name) ? null : candidates[0];
    measured = { family, shapeClass, name: next.name, reference };
  }
  return { variants, measured };
}

/**
 * max |a − b| over a call's results ({ output, weights } Float32Arrays): NaN against NaN (or an
 * infinity against the same one) counts as equal, against anything else as Infinity.
 */
export function resultDistance(a, b) {
  let max = 0;
  for (const key of ['output', 'weights']) {
    const x = a[key];
    const y = b[key];
    for (let i = 0; x && y && i < x.length; i++) {
      if (Object.is(x[i], y[i])) continue;
      const d = Math.abs(x[i] - y[i]);
      max = Number.isNaN(d) ? Infinity : Math.max(max, d);
    }
  }
  return max;
}

/** The absolute bound `variant` (a descriptor) is held to against `reference`'s results. */
export function toleranceFor(variant, reference) {
  let scale = 1;
  for (const values of [reference.output, reference.weights ?? []]) {
    for (const v of values) if (Math.abs(v) > scale && Number.isFinite(v)) scale = Math.abs(v);
  }
  return variant.tolerance * scale;
}

/**
 * The verdict on a candidate's first run (measured.reference set): maxAbsDiff from the reference's
 * output on the same call, tolerance the bound it was held to. A candidate over it (or NaN) is
 * dropped on `device` and warned of once; returns whether it stays.
 */
export function recordCheck(device, measured, maxAbsDiff, tolerance) {
  const board = boards.get(device)?.get(`${measured.family}|${measured.shapeClass}`);
  if (!board) return false;
  if (maxAbsDiff <= tolerance) {
    board.verified.add(measured.name);
    changes++;
    return true;
  }
  reject(device, measured, { maxAbsDiff, tolerance }, `gave results ${maxAbsDiff} from its reference's (tolerance ${tolerance})`);
  return false;
}

/**
 * A candidate (measured: chooseKernels()'s) whose pipeline failed to compile on `device` (error:
 * the compiler's): dropped as recordCheck() drops one, its entry's `error` the message. Such a
 * variant needs a feature or takes a path that CI's compiler never saw (its WGSL is checked by
 * naga there, but each browser's compiler has its own rules), so a call never fails for it: the
 * call chooses again (call_kernels.js).
 */
export function recordCompileFailure(device, measured, error) {
  const message = String(error?.message ?? error);
  reject(device, measured, { maxAbsDiff: null, tolerance: null, error: message }, `did not compile (${message})`);
}

/**
 * A candidate whose first run WebGPU refused though its pipelines compiled (error: WebGPU's, a
 * validation error of its dispatches, say): dropped as one that does not compile; the call runs
 * its reference instead (forward_pass.js), so no call fails for it either.
 */
export function recordRunFailure(device, measured, error) {
  const message = String(error?.message ?? error);
  reject(device, measured, { maxAbsDiff: null, tolerance: null, error: message }, `failed when it ran (${message})`);
}

// Drops the candidate on `device` for every shape class of its family and warns once.
function reject(device, { family, shapeClass, name }, entry, what) {
  let rejected = rejections.get(device);
  if (!rejected) rejections.set(device, (rejected = new Map()));
  rejected.set(`${family}|${name}`, { kernel: family, variant: name, shapeClass, ...entry });
  changes++;
  for (const b of boards.get(device)?.values() ?? []) if (b.family === family) delete b.times[name];
  warnOnce(`webgpu-rejected|${family}|${name}`, `webattention: the WebGPU ${family} kernel '${name}' ${what} on this GPU; `
    + 'it is not used on this device (mha.gpuProfile().rejected)');
}

/** Records the time of a call that measured `measured` (chooseKernels()'s); decides when complete. */
export function recordTime(device, measured, ms) {
  const board = boards.get(device)?.get(`${measured.family}|${measured.shapeClass}`);
  if (!board || board.chosen || !board.times[measured.name]) return;
  board.times[measured.name].push(ms);
  changes++;
  const running = live(board).map((name) => [name, board.times[name]]);
  if (running.every(([, times]) => times.length >= SELECTION_RUNS)) {
    board.chosen = running.reduce((best, e) => (median(e[1]) < median(best[1]) ? e : best))[0];
  }
}

/**
 * What was measured and chosen on `device`: [{ family, shapeClass, chosen (null while
 * measuring), medianMs: { name: ms | null }, runs: { name: count } }].
 */
export function selectionProfile(device) {
  return [...(boards.get(device)?.values() ?? [])].map(({ family, shapeClass, times, chosen }) => ({
    family, shapeClass, chosen,
    medianMs: Object.fromEntries(Object.entries(times).map(([n, t]) => [n, t.length ? median(t) : null])),
    runs: Object.fromEntries(Object.entries(times).map(([n, t]) => [n, t.length])),
  }));
}

/**
 * The candidates dropped on `device`, for their results or a failed compile: [{ kernel, variant,
 * shapeClass, maxAbsDiff, tolerance, error? }] (maxAbsDiff and tolerance null, error the
 * compiler's message, for one that did not compile).
 */
export const rejectedVariants = (device) => [...(rejections.get(device)?.values() ?? [])];
