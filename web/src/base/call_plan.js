// What every layer may know of a checked call, its "plan" (checks/plans.js makes it): the mask
// kinds, the size of its attention weights, and the plan owning its arrays. Dispatch and the
// executors (pool/, wasm/, webgpu/) read plans through this module only, never through checks/.
// The fields of a forward() plan: ForwardPlan below, with the Executor interface that
// dispatch/dispatch.js routes plans to.
import { isDeviceData } from './gpu_tensors.js';

/**
 * @typedef {object} ForwardPlan  resolveMhaForward()'s checked call (checks/plans.js): { B, L, S, T,
 *   query, key, value, keyPaddingMask, attnMask, isCausal, needWeights, averageAttnWeights,
 *   cache (null, or { kvCache, lengthBefore, lengthAfter, storage }: storage, the cache's on the
 *   executor that runs the call, set by dispatch.js's forward()), positionIds (null, or Int32Array
 *   [B·L]: each row's rotary position), outputShape, weightsShape, out (null, or
 *   base/output_target.js's OutTarget: the calling thread's WASM executor writes the output
 *   there, api.js's results() any other; pool/pool.js posts a worker named fields only) }
 * @typedef {{ output: Float32Array, weights: Float32Array | null, path?: string }} ForwardResult
 *   path: the GPU attention kernels used ('flash' | 'decode'), for tests
 * @typedef {{ name: string, data: Float32Array }} StateDictEntry  checked against parameterSpecs()
 * @typedef {object} Executor
 * @property {(entries: StateDictEntry[]) => void} loadStateDict  copies what it keeps
 * @property {(plan: ForwardPlan) => ForwardResult | Promise<ForwardResult>} forward
 * @property {() => void} dispose  frees what the executor holds (never shared resources)
 */

/** Mask kinds as the core numbers them. */
export const MaskKind = Object.freeze({ none: 0, boolean: 1, additive: 2 });

/**
 * Floats of the attention weights a forward() of `heads` heads returns for one batch entry:
 * 0 without needWeights, L·T averaged, heads·L·T per head (T = S, or the cache's length after
 * the append). Every backend sizes its buffers by it.
 */
export function weightsPerBatch(plan, heads) {
  if (!plan.needWeights) return 0;
  return (plan.averageAttnWeights ? 1 : heads) * plan.L * (plan.T ?? plan.S);
}

/**
 * The plan itself if it owns its arrays, else planWithCopies()'s: for a call that runs later.
 * copyOf: as planWithCopies()'s (a HostCopies lease's copy, host_copies.js, for a call that gives them back).
 */
export const ownedPlan = (plan, copyOf) => (plan.borrowed ? { ...planWithCopies(plan, copyOf).plan, borrowed: false } : plan);

const fresh = (data) => data.slice();

/**
 * The plan with copies of every input array (query, key, value, mask data, position ids; an
 * array passed twice is copied once, so aliasing survives), made by copyOf(array) (fresh ones by
 * default), and those copies' buffers (`buffers`, for a transfer list: fresh copies only): a
 * worker's share owns its arrays (pool/pool.js).
 */
export function planWithCopies(plan, copyOf = fresh) {
  const copies = new Map();
  const copy = (data) => {
    if (!data || isDeviceData(data)) return data;  // a GPU input is read on the device, when the call runs
    if (!copies.has(data)) copies.set(data, copyOf(data));
    return copies.get(data);
  };
  const mask = (m) => (m ? { ...m, data: copy(m.data) } : m);  // encode()'s plan has none
  const copied = {
    ...plan,
    query: copy(plan.query), key: copy(plan.key), value: copy(plan.value),
    keyPaddingMask: mask(plan.keyPaddingMask), attnMask: mask(plan.attnMask), positionIds: copy(plan.positionIds),
  };
  return { plan: copied, buffers: [...copies.values()].map((c) => c.buffer) };
}
