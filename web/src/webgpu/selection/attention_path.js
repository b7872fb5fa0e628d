// Flash or decode: the one place that decides which attention kernels a call (or a cached call's
// pass) takes. The executor asks it for an uncached call and for each pass of a cached one
// (cached_passes.js); call_kernels.js turns its answer into the family whose variant runs.
import { DECODE_MAX_L, DECODE_VARIANTS } from './kernel_config.js';
import { DECODE_CHUNK } from '../kernels/decode_partial.wgsl.js';

const F32 = 4;  // bytes per float of the decode partials
const LARGEST_CHUNK = Math.max(...Object.values(DECODE_VARIANTS).map((v) => v.chunk));  // keys

/**
 * The attention kernels of `plan` (a call, or one pass of a cached call): 'decode'
 * (decode_partial + decode_reduce) for L <= DECODE_MAX_L when its scratch buffer and grid fit
 * the device's limits, else 'flash'. needWeights does not change it: the weights kernel reads the
 * same row stats.
 */
export function attentionPath(plan, config, limits) {
  if (plan.L > DECODE_MAX_L) return 'flash';
  return splitFits(limits, DECODE_CHUNK, splitShape(plan, config)) ? 'decode' : 'flash';
}

/**
 * What a decode variant's fits() reads of a call: { batchHeads: B·H, rows: L, keys, dv }, keys T
 * rounded up to a whole number of the largest chunk. A variant that fits there fits at T (its
 * scratch and grid grow with the keys), and a growing cache's steps ask the same question for
 * that many tokens (call_kernels.js keeps a call's kernels for the calls like it).
 */
export const splitShape = ({ B, L, T }, { numHeads, valueHeadDim }) => ({
  batchHeads: B * numHeads, rows: L, keys: Math.ceil(T / LARGEST_CHUNK) * LARGEST_CHUNK, dv: valueHeadDim,
});

/**
 * Whether the decode kernels with chunks of `chunk` keys fit the device for a call of
 * splitShape(): their scratch buffer (m_c, l_c and DV sums per chunk of each row) and their grid
 * (chunks × L × B·H workgroups).
 */
export function splitFits(limits, chunk, { batchHeads, rows, keys, dv }) {
  const chunks = Math.ceil(keys / chunk);
  const maxBytes = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const maxGroups = limits.maxComputeWorkgroupsPerDimension;
  return batchHeads * rows * chunks * (dv + 2) * F32 <= maxBytes && chunks <= maxGroups && batchHeads <= maxGroups;
}

/** The variant family of a path: 'decode', or 'attention' (the flash variants). */
export const attentionFamily = (path) => (path === 'decode' ? 'decode' : 'attention');

/**
 * Whether a call's NaN rule runs in its decode reduce (decode_reduce_nan.wgsl.js, the variant's
 * `reduceNan`) rather than in a dispatch of its own (nonfinite_rows.wgsl.js): a cached call on
 * the decode path that asks for no weights and has no sinks, whose kernels run between the two.
 * call: { plan, config, path, cache }.
 */
export const nanRuleInReduce = ({ plan, config, path, cache }) => path === 'decode' && Boolean(cache) && !plan.needWeights && !config.sinks;
