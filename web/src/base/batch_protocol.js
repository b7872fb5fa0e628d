// What the package's layers call on a GpuBatch or GpuStep (dispatch/gpu_batch.js, gpu_step.js)
// beside its public encode(), submit() and replay(): keyed by these symbols, so that they are no
// methods a user of those public classes sees or calls by name. Each is documented where the
// class defines it.
export const BATCH = Object.freeze({
  admit: Symbol('GpuBatch admit'),
  recorderFor: Symbol('GpuBatch recorderFor'),
  uniformRegion: Symbol('GpuBatch uniformRegion'),
  beforeSubmit: Symbol('GpuBatch beforeSubmit'),
  record: Symbol('GpuBatch record'),
  submitHeld: Symbol('GpuBatch submitHeld'),
  whenSubmitted: Symbol('GpuBatch whenSubmitted'),
  afterSubmit: Symbol('GpuBatch afterSubmit'),
  afterPending: Symbol('GpuBatch afterPending'),
  discard: Symbol('GpuBatch discard'),
  replayable: Symbol('GpuBatch replayable'),
  hold: Symbol('GpuBatch hold'),
});

// What a GpuBatch and a batched call ask of a KvCache they append to (dispatch/kv_cache.js): a
// call on it recorded; the batch's submit (its verdict to come) or its calls dropped; whether a
// call may be recorded now.
export const CACHE = Object.freeze({
  recorded: Symbol('KvCache recorded'),
  submitted: Symbol('KvCache submitted'),
  recordable: Symbol('KvCache recordable'),
});
