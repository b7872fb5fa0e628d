// A GpuBatch's records of a module's calls (dispatch/gpu_batch.js): what a failed submit undoes
// and destroys of each, and the `pending` of its GpuTensors (read() waits for the batch's submit).
import { GpuTensor, markPending } from './gpu_tensor.js';
import { BATCH } from '../base/batch_protocol.js';

// Each cache row's length before a cached call (a call on some rows, or rows of unequal lengths, too).
export const lengthsBeforeOf = (plan) => (plan.cache ? plan.cache.lengthsBefore ?? plan.cache.lengthBefore : 0);

// `call` (GpuBatch.record()'s) of `plan` recorded into plan.batch, its result `buffers` marked as
// the batch's (a call outside it that reads them submits it first), with the KvCache it appends to
// (which the batch tells of it: dispatch/batch_hold.js). Returns the `pending` of its GpuTensors.
export function recordBatched(gpu, plan, call, buffers) {
  const { batch } = plan;
  call.kvCache = plan.cache?.kvCache ?? null;  // each caller's own literal: no copy per call
  const ticket = batch[BATCH.record](call);
  const pending = { submitted: () => batch[BATCH.whenSubmitted](ticket), after: (fn) => batch[BATCH.afterSubmit](ticket, fn) };
  const flush = () => pending.submitted().catch(() => {});  // its errors are the batch's to report
  gpu.recorded(batch, flush);
  markPending(buffers, batch, flush);
  return pending;
}

/**
 * A batched cached call of several passes (webgpu_executor.js), its passes submitted and their
 * results put together (`results`: { output, weights } GpuTensors): recorded as the batch's call,
 * so that its GpuTensors (returned) read once the batch was submitted, and a submit that fails
 * destroys them and puts `cache` back: its storage from `snapshot` (GpuKvCache.snapshot(), kept
 * until then), its lengths to those before the call.
 */
export function recordSubmitted(gpu, plan, cache, results, snapshot) {
  const lengthsBefore = lengthsBeforeOf(plan);
  const tensors = [results.output, results.weights].filter(Boolean);
  const buffers = tensors.map((t) => t.gpuBuffer);
  const owned = tensors.filter((t) => t.owned).map((t) => t.gpuBuffer);  // not the caller's out
  const pending = recordBatched(gpu, plan, {
    scopes: [],
    refused: async () => null,  // its passes' submits were accepted before its forward() resolved
    undo: () => {
      snapshot.restore();
      cache.truncate(lengthsBefore);
    },
    destroy: () => owned.forEach((b) => b.destroy()),
    kept: () => snapshot.discard(),
  }, buffers);
  const batched = (t) => t && new GpuTensor(gpu.device, t.gpuBuffer, t.shape, pending, t.dtype, t.owned ? null : plan.deviceOut);
  return { output: batched(results.output), weights: batched(results.weights) };
}
