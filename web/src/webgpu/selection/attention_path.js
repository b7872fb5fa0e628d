// Flash or decode: the one place that decides which attention kernels a call (or a cached call's
// pass) takes. The executor asks it for an uncached call and for each pass of a cached one
// (cached_passes.js); call_kernels.js turns its answer into the family whose variant runs.
import { DECODE_MAX_L } from './kernel_config.js';
import { DECODE_CHUNK } from '../kernels/decode_partial.wgsl.js';

const F32 = 4;  // bytes per float of the decode partials

/**
 * The attention kernels of `plan` (a call, or one pass of a cached call): 'decode'
 * (decode_partial + decode_reduce) for L <= DECODE_MAX_L when its scratch buffer and grid fit
 * the device's limits, else 'flash'. needWeights does not change it: the weights kernel reads the
 * same row stats.
 */
export function attentionPath(plan, config, limits) {
  const { B, L, T } = plan;
  if (L > DECODE_MAX_L) return 'flash';
  const chunks = Math.ceil(T / DECODE_CHUNK);
  const scratch = B * config.numHeads * L * chunks * (config.valueHeadDim + 2);
  const maxBytes = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const maxGroups = limits.maxComputeWorkgroupsPerDimension;
  const fits = scratch * F32 <= maxBytes && chunks <= maxGroups && B * config.numHeads <= maxGroups;
  return fits ? 'decode' : 'flash';
}

/** The variant family of a path: 'decode', or 'attention' (the flash variants). */
export const attentionFamily = (path) => (path === 'decode' ? 'decode' : 'attention');
