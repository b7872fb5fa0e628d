// The passes of a cached call on the GPU. A pass appends its rows to the cache before attending,
// so with a window (a ring) one pass may take at most GpuKvCache.maxRowsPerPass rows
// (ringGeometry()'s rowsPerPass, kv_ring.js): a longer step (a long prefill) is cut into passes
// of consecutive rows, each attending over the positions up to its own last row, exactly the rows
// of the one call (docs/attention-math/decoding.md §9); merge() puts their outputs and weights back
// together as the call's. A GPU input's rows are a DeviceData of pieces (deviceRows(): copied on
// the device by each pass); 'gpu-buffer' results are put together on the device (pass_merge.js).
import { deviceRows, isDeviceData } from '../base/gpu_tensors.js';
import { mergeOnDevice, mergeRefusal } from './pass_merge.js';

/**
 * plan: a cached call (resolveMhaForward()); maxRows: the cache's rows per pass; config: the
 * module's. Returns { passes, merge }: passes are plans of at most maxRows rows (the plan itself when it fits), merge(results, device) turns
 * their { output, weights } into the call's ([B, L, E]; [B, (h,) L, T], 0 past a pass's keys): at
 * once for host results, a promise of GpuTensors on `device` for 'gpu-buffer' ones.
 */
export function cachedPasses(plan, maxRows, { embedDim: E, kdim, vdim, numHeads: H }) {
  const { B, L, T } = plan;
  // A step on an encoded cache appends nothing (S = 0): no ring to wrap, one pass.
  if (L <= maxRows || plan.S === 0) return { passes: [plan], merge: ([result]) => result };
  const n = plan.cache.lengthBefore;
  // Each cache row's length before the pass from row i0 on: the call's rows advanced by i0.
  const { rows: listed, lengthsBefore } = plan.cache;
  const rowsBefore = (i0) => lengthsBefore?.map((m, r) => (!listed || listed.includes(r) ? m + i0 : m));
  // Rows [i0, i1) of every batch of a [B, rowsPerBatch, width] array (or of `blocks` blocks).
  const rows = (data, rowsPerBatch, width, i0, i1, blocks = B) => {
    const out = new data.constructor(blocks * (i1 - i0) * width);
    for (let b = 0; b < blocks; b++) {
      out.set(data.subarray((b * rowsPerBatch + i0) * width, (b * rowsPerBatch + i1) * width), b * (i1 - i0) * width);
    }
    return out;
  };
  // Rows [i0, i1) of each [L, L] block of a verification mask.
  const maskRows = ({ data }, i0, i1) => rows(data, L, L, i0, i1, data.length / (L * L));
  const passes = [];
  for (let i0 = 0; i0 < L; i0 += maxRows) {
    const i1 = Math.min(L, i0 + maxRows);
    const slices = new Map();  // one slice per input array: aliasing (fused projections) survives
    const slice = (data, width) => {
      if (!slices.has(data)) slices.set(data, isDeviceData(data) ? deviceRows(data, B, L, width, i0, i1) : rows(data, L, width, i0, i1));
      return slices.get(data);
    };
    const keys = n + i1;
    const kpm = plan.keyPaddingMask;
    const am = plan.attnMask;
    passes.push({
      ...plan, L: i1 - i0, S: i1 - i0, T: keys, firstRow: i0, deviceOut: null,  // merge() writes the call's out
      query: slice(plan.query, E), key: slice(plan.key, kdim), value: slice(plan.value, vdim),
      positionIds: plan.positionIds && slice(plan.positionIds, 1),
      keyPaddingMask: kpm.data ? { ...kpm, data: rows(kpm.data, T, 1, 0, keys), shape: [B, keys] } : kpm,
      // A verification mask's rows of the pass, every column (the call's new positions, from n on).
      attnMask: am.data ? { ...am, data: maskRows(am, i0, i1), shape: [...am.shape.slice(0, -2), i1 - i0, L] } : am,
      cache: { ...plan.cache, lengthBefore: n + i0, lengthAfter: keys, maskKey0: n, lengthsBefore: rowsBefore(i0) },
    });
  }
  const perBatch = plan.needWeights ? (plan.averageAttnWeights ? 1 : H) : 0;
  const merge = (results, device) => {
    if (plan.output === 'gpu-buffer') return mergeOnDevice(device, { plan, passes, results, E, perBatch });
    const output = new Float32Array(B * L * E);
    const weights = perBatch ? new Float32Array(B * perBatch * L * T) : null;
    results.forEach((r, p) => {
      const { firstRow, L: Lp, T: Tp } = passes[p];
      for (let b = 0; b < B; b++) output.set(r.output.subarray(b * Lp * E, (b + 1) * Lp * E), (b * L + firstRow) * E);
      for (let bh = 0; bh < B * perBatch; bh++) {
        for (let i = 0; i < Lp; i++) {
          weights.set(r.weights.subarray((bh * Lp + i) * Tp, (bh * Lp + i + 1) * Tp), (bh * L + firstRow + i) * T);
        }
      }
    });
    return { output, weights };
  };
  // Why 'gpu-buffer' results cannot be put together on a device of `limits`, or null (pass_merge.js).
  const deviceMergeRefusal = (limits) => mergeRefusal(plan, passes, { E, perBatch }, limits);
  return { passes, merge, deviceMergeRefusal };
}
