// What every layer may know of a checked call, its "plan" (checks/plans.js makes it): the mask
// kinds, the size of its attention weights, and the plan owning its arrays. Dispatch and the
// executors (pool/, wasm/, webgpu/) read plans through this module only, never through checks/.
// The fields of a forward() plan: dispatch/dispatch.js's ForwardPlan.
import { isDeviceData } from './gpu_tensors.js';

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

/** The plan itself if it owns its arrays, else planWithCopies()'s: for a call that runs later. */
export const ownedPlan = (plan) => (plan.borrowed ? { ...planWithCopies(plan).plan, borrowed: false } : plan);

/**
 * The plan with fresh copies of every input array (query, key, value, mask data, position ids; an
 * array passed twice is copied once, so aliasing survives), and those copies' buffers (`buffers`,
 * for a transfer list): a worker's share owns its arrays (pool/pool.js).
 */
export function planWithCopies(plan) {
  const copies = new Map();
  const copy = (data) => {
    if (!data || isDeviceData(data)) return data;  // a GPU input is read on the device, when the call runs
    if (!copies.has(data)) copies.set(data, data.slice());
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
