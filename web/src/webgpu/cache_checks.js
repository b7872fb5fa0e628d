// What a WebGPU cache refuses, checked before a call or a cache operation is queued (the
// executor's checkKeep() and checkCachedFits()): each a typed error that leaves the cache as it was.
import { BackendError, CacheError, MemoryError } from '../base/errors.js';
import { deviceInputs, inWords, isDeviceCall } from '../base/gpu_tensors.js';
import { Usage } from './device.js';
import { cachedPasses } from './cached_passes.js';
import { callRows, firstPositions, windowIds } from './call_rows.js';
import { KEEP_INPUT_ROWS } from './gpu_kv_cache.js';

/** Storage buffers the NaN rule's kernel binds in a call whose kernels read a row table (its ninth). */
export const ROW_TABLE_STORAGE_BUFFERS = 9;

/**
 * A call on some `rows`, or on rows of unequal lengths, runs here with each batch's cache row and
 * length as kernel inputs, and one whose positionIds move its cache's window with them too
 * (kernels/row_table.wgsl.js): on a device whose shader stage binds at least
 * ROW_TABLE_STORAGE_BUFFERS storage buffers, else a CacheError naming `rows` (or `positionIds`),
 * before anything runs.
 */
function checkRowTable(plan, limits) {
  const have = limits.maxStorageBuffersPerShaderStage;
  if (have >= ROW_TABLE_STORAGE_BUFFERS) return;
  const rows = Boolean(callRows(plan));
  if (!rows && !windowIds(plan)) return;
  const [argument, what] = rows ? ['rows', "a WebGPU cache's rows at lengths of their own (a call on some rows, or after truncate(lengths))"]
    : ['positionIds', "positionIds that move a WebGPU cache's window (a tree of drafts under a window)"];
  throw new CacheError(`${argument}: ${what} need ${ROW_TABLE_STORAGE_BUFFERS} storage buffers per shader stage; this device has ${have}: `
    + "a WASM cache (createCache() on a module whose backend is 'wasm') takes them", {
    argument, expected: `>= ${ROW_TABLE_STORAGE_BUFFERS} storage buffers per shader stage`, actual: have,
  });
}

/**
 * cache.keep()'s limit here, before it is queued: after a call whose inputs the cache does not
 * hold (more than KEEP_INPUT_ROWS rows, or GPU tensors: inputsHeld false), a prefix of it only.
 */
export function checkKeepRows(rows, indices, inputsHeld = true) {
  if ((rows <= KEEP_INPUT_ROWS && inputsHeld) || indices.every((i, t) => i === t)) return;
  const after = inputsHeld ? `a call of ${rows} rows (more than the ${KEEP_INPUT_ROWS} whose inputs it holds`
    : 'a call on GPU tensors (whose inputs it does not hold';
  throw new CacheError(`cache.keep: on WebGPU, after ${after} to write moved rows again) only a prefix of it can be kept (indices 0, 1, …)`, {
    argument: 'indices', expected: 'a prefix', actual: Array.from(indices).join(', '),
  });
}

/**
 * Throws a MemoryError, before anything runs, unless every pass of a cached call fits the
 * device (`fits(pass)`, the executor's fits()): a cache on the GPU cannot move a call to WASM.
 */
export function checkCachedCall(plan, config, fits, limits) {
  checkWindowIds(plan);
  checkRowTable(plan, limits);
  const cut = cachedPasses(plan, plan.cache.storage.maxRowsPerPass, config);
  const { passes } = cut;
  if (passes.length > 1 && isDeviceCall(plan)) checkDevicePasses(plan, cut, limits);
  const misfit = passes.find((pass) => !fits(pass));
  if (misfit) {
    throw new MemoryError(`forward: a step of ${misfit.L} rows over ${misfit.T} cached positions does not fit this WebGPU `
      + 'device\'s buffer or dispatch limits (the cache\'s storage is on that device); use shorter steps or needWeights: false', {
      argument: 'cache', expected: 'a step that fits the device', actual: `${misfit.L} rows over ${misfit.T} positions`,
    });
  }
}

// A call with GPU-resident tensors cut into passes: each pass copies its rows of a GPU input on the
// device (deviceRows()), and 'gpu-buffer' results are put together there (pass_merge.js). What
// cannot be done so is a MemoryError naming `cache`, before anything runs: an input without
// COPY_SRC (its rows cannot be copied), or float16 rows that are not whole 4-byte words, results
// the device cannot put together (pass_merge.js). A batched call may be cut into passes
// (webgpu_executor.js #forwardCached()).
function checkDevicePasses(plan, { passes, deviceMergeRefusal }, limits) {
  const refuse = (why) => {
    throw new MemoryError(`forward: a step of ${plan.L} rows is cut into passes of at most ${plan.cache.storage.maxRowsPerPass} `
      + `(its cache's window); with GPU-resident tensors ${why}: use steps of at most ${plan.cache.storage.maxRowsPerPass} rows`, {
      argument: 'cache', expected: `<= ${plan.cache.storage.maxRowsPerPass} rows`, actual: plan.L,
    });
  };
  if (deviceInputs(plan).some((d) => !(d.gpuBuffer.usage & Usage.COPY_SRC))) refuse('each input needs COPY_SRC usage, to be copied a pass at a time');
  if (passes.some((pass) => !deviceInputs(pass).every(inWords))) refuse('float16 inputs need an even width, to be copied a pass at a time');
  const merging = plan.output === 'gpu-buffer' && deviceMergeRefusal(limits);
  if (merging) refuse(`${merging}, to be put together on the device`);
}

/**
 * A cache's window counts in positionIds (docs/attention-math/decoding.md §9: a draft sees the keys its
 * depth's window holds), which the kernels read where windowIds() gives them. The ring holds the
 * keys such a call reaches only when it is one pass and no id is before its row's length: else a
 * CacheError naming positionIds, the core's check_window_ids() (cpp/src/mha_cached_forward.cpp)
 * in its words, so that a WASM and a WebGPU cache refuse the same calls alike.
 */
function checkWindowIds(plan) {
  const ids = windowIds(plan);
  if (!ids) return;
  const { L, cache: { storage } } = plan;
  const window = `with the cache's window (${storage.window}) `;
  if (L > storage.maxRowsPerPass) {
    throw new CacheError(`positionIds: ${window}positions other than the rows' own need a call of at most ${storage.maxRowsPerPass} `
      + `rows (one pass of the ring), got ${L}`, { argument: 'positionIds', expected: `<= ${storage.maxRowsPerPass} rows`, actual: L });
  }
  const firsts = firstPositions(plan);
  const at = ids.findIndex((id, n) => id < firsts[Math.floor(n / L)]);
  if (at < 0) return;
  const [b, i] = [Math.floor(at / L), at % L];
  throw new CacheError(`positionIds: ${window}expected positions >= the row's length before the call (${firsts[b]}), got ${ids[at]} `
    + `at [${b}, ${i}]`, { argument: 'positionIds', expected: `>= ${firsts[b]}`, actual: `${ids[at]} at [${b}, ${i}]` });
}

/** `what` (a cache's method) on a device that is gone (`why`): its storage was there, and cannot move to WASM. */
export const storageLost = (what, why) => new BackendError(`${what}: the WebGPU device of this cache was lost; its storage was there`, {
  argument: 'cache', expected: 'a working WebGPU device', actual: why || 'lost',
});
