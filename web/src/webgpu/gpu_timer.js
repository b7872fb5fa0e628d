// Times one submission for the kernel selection (selection/kernel_selection.js): the GPU's own timestamps
// at the start and end of the call's compute pass where the device has 'timestamp-query', else
// the wall time from submit until the readback is mapped (onSubmittedWorkDone's moment, plus the
// copy). The selection compares a class's candidates with each other, always on the same clock.
import { MAP_READ, Usage } from './device.js';

const free = new WeakMap();  // GPUDevice → timestamp timers not in use (kept: a call creates no buffer)

/**
 * A timer for one call on `device`: { timestampWrites (for beginComputePass(), or undefined),
 * afterPass(encoder), start() (just before submit), elapsed() (after the readback: resolves to
 * ms), dispose() (hands it back for the next call) }.
 */
export function callTimer(device) {
  if (!device.features?.has('timestamp-query')) {
    let t0 = 0;
    return {
      timestampWrites: undefined, afterPass() {}, start() { t0 = performance.now(); },
      elapsed: async () => performance.now() - t0, dispose() {},
    };
  }
  let list = free.get(device);
  if (!list) free.set(device, (list = []));
  return list.pop() ?? timestampTimer(device, list);
}

function timestampTimer(device, list) {
  const querySet = device.createQuerySet({ type: 'timestamp', count: 2, label: 'webattention timer' });
  const resolved = device.createBuffer({ size: 16, usage: Usage.QUERY_RESOLVE | Usage.COPY_SRC, label: 'webattention timer' });
  const read = device.createBuffer({ size: 16, usage: Usage.MAP_READ | Usage.COPY_DST, label: 'webattention timer' });
  const timer = {
    timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
    afterPass(encoder) {
      encoder.resolveQuerySet(querySet, 0, 2, resolved, 0);
      encoder.copyBufferToBuffer(resolved, 0, read, 0, 16);
    },
    start() {},
    async elapsed() {
      await read.mapAsync(MAP_READ);
      const [t0, t1] = new BigUint64Array(read.getMappedRange());
      read.unmap();
      return Number(t1 - t0) / 1e6;
    },
    dispose() {
      if (read.mapState === 'unmapped') list.push(timer);  // else a failed call left it mapped: drop it
    },
  };
  return timer;
}
