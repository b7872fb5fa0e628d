// What the GpuBatch tests share (node_gpu_batch, node_gpu_batch_encode, node_gpu_step,
// node_gpu_out): counting a device's submits, maps and buffers made, and one decode step through a
// stack of layers, per layer or into a batch.
import { device } from './node_setup.mjs';
import { COPY_DST } from './gpu_tensor_inputs.mjs';

// Counts queue.submit(), mapAsync(), createBuffer(), copyBufferToBuffer(), queue.writeBuffer(),
// beginComputePass() and pushErrorScope() calls on `device` during fn(): { submits, maps, buffers,
// copies, writes, passes, scopes, result (fn's) }.
export async function counted(fn, on = device) {
  const probe = on.createBuffer({ size: 4, usage: COPY_DST });
  const encoder = Object.getPrototypeOf(on.createCommandEncoder());
  const wrapped = [[Object.getPrototypeOf(on.queue), 'submit', 'submits'], [Object.getPrototypeOf(probe), 'mapAsync', 'maps'],
    [Object.getPrototypeOf(on), 'createBuffer', 'buffers'], [encoder, 'copyBufferToBuffer', 'copies'],
    [Object.getPrototypeOf(on.queue), 'writeBuffer', 'writes'], [encoder, 'beginComputePass', 'passes'],
    [Object.getPrototypeOf(on), 'pushErrorScope', 'scopes'], [Object.getPrototypeOf(probe), 'destroy', 'destroys'],
  ].map(([proto, name, count]) => [proto, name, count, proto[name]]);
  probe.destroy();
  const counts = { submits: 0, maps: 0, buffers: 0, copies: 0, writes: 0, passes: 0, scopes: 0, destroys: 0 };
  for (const [proto, name, count, original] of wrapped) {
    proto[name] = function counting(...args) { counts[count]++; return original.apply(this, args); };
  }
  try {
    counts.result = await fn();
  } finally {
    for (const [proto, name, , original] of wrapped) proto[name] = original;
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
