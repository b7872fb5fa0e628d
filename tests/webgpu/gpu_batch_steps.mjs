// What the GpuBatch tests share (node_gpu_batch, node_gpu_batch_encode): counting a device's
// submits and maps, and one decode step through a stack of layers, per layer or into a batch.
import { device } from './node_setup.mjs';
import { COPY_DST } from './gpu_tensor_inputs.mjs';

// Counts queue.submit() and mapAsync() calls on `device` during fn().
export async function counted(fn, on = device) {
  const queueProto = Object.getPrototypeOf(on.queue);
  const probe = on.createBuffer({ size: 4, usage: COPY_DST });
  const bufferProto = Object.getPrototypeOf(probe);
  probe.destroy();
  const { submit } = queueProto;
  const { mapAsync } = bufferProto;
  const counts = { submits: 0, maps: 0 };
  queueProto.submit = function counting(...args) { counts.submits++; return submit.apply(this, args); };
  bufferProto.mapAsync = function counting(...args) { counts.maps++; return mapAsync.apply(this, args); };
  try {
    counts.result = await fn();
  } finally {
    queueProto.submit = submit;
    bufferProto.mapAsync = mapAsync;
  }
  return counts;
}

// One step through `layers` (each on caches[i]) from GPU tensor `x`: per layer, or into `batch`.
export async function step(layers, caches, x, batch) {
  let t = x;
  for (const [i, m] of layers.entries()) {
    const r = await m.forward(t, t, t, { cache: caches[i], output: 'gpu-buffer', ...(batch ? { batch } : {}) });
    if (t !== x) t.dispose();
    t = r.output;
  }
  return t;
}
