// mha.encode() on a WebGPU module (the executor's encode()): an encoder's key and value projected
// once into a read-only cache on the device, which each decoder step then attends to with null
// key and value (checks/encode_plans.js resolveEncodedForward(): S = 0 new rows, T = the cache's
// S positions). The filling is one cached pass with no query (L = 0): linear_problems.js gives it
// the key and value projections alone, forward_encode.js appends their rows and flags the slots
// for the NaN rule, and nothing is attended or read back. A step on it is a cached pass that
// appends nothing: its query rows sit after the S positions (lengthBefore = S), so the causal rule
// of a cached call lets every row see all of them, as the encoded cache's contract says.
import { noMask } from '../base/tensor_checks.js';

/** The GpuKvCache options of an encoded cache for plan (resolveEncode()'s { B, S, dtype }). */
export const encodedCacheOptions = ({ B, S, dtype }) => ({ batchSize: B, maxLength: S, window: 0, dtype });


/** The filling pass of `storage` (a new GpuKvCache of encodedCacheOptions()) from an owned encode plan. */
export function fillingPlan({ B, S, key, value }, storage, { embedDim: E }) {
  return {
    B, L: 0, S, T: S, batched: true,
    query: null, key, value, keyPaddingMask: noMask(), attnMask: noMask(),
    isCausal: false, needWeights: false, averageAttnWeights: true, positionIds: null,
    cache: { kvCache: null, storage, rows: null, lengthsBefore: null, L: S, lengthBefore: 0, lengthAfter: S },
    outputShape: [B, 0, E], weightsShape: null, out: null,
  };
}
