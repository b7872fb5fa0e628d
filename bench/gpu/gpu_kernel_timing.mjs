// bench/gpu/gpu.mjs's kernel timing: one kernel variant dispatched alone on random inputs, timed by
// the GPU's timestamps (a compute pass of `batch` identical dispatches, begin and end stamped)
// where the device has 'timestamp-query', else by wall time from submit to onSubmittedWorkDone.
// Loops are bounded by time (budgetMs) as well as by count.
import { packParams } from '../../web/src/webgpu/kernel_params.js';
import { programPipeline } from '../../web/src/webgpu/pipelines.js';
import { filled } from '../../tests/contract/random.mjs';

export const Usage = { MAP_READ: 1, COPY_SRC: 4, COPY_DST: 8, UNIFORM: 0x40, STORAGE: 0x80, QUERY_RESOLVE: 0x200 };

// A storage buffer holding `data` (a typed array of 4-byte values).
function storageBuffer(device, data) {
  const buffer = device.createBuffer({ size: Math.max(4, data.byteLength), usage: Usage.STORAGE | Usage.COPY_DST | Usage.COPY_SRC });
  device.queue.writeBuffer(buffer, 0, data);
  return buffer;
}

/** A storage buffer of `floats` random values in [-scale, scale) (deterministic). */
export const randomBuffer = (device, floats, seed, scale = 1) => storageBuffer(device, filled(floats, seed, scale));

/**
 * A storage buffer of `words` random u32 words ANDed with `mask` (deterministic): packed narrow
 * values, e.g. 16-bit floats kept finite by a mask that clears the top exponent bit of each half.
 * (The random floats' bits, multiplied by an odd constant mod 2³², so every bit varies.)
 */
export const randomWordsBuffer = (device, words, seed, mask = 0xffffffff) => storageBuffer(device,
  new Uint32Array(filled(words, seed, 1).buffer).map((w) => Math.imul(w, 2654435761) & mask));

export const zeroBuffer = (device, floats) => device.createBuffer({
  size: Math.max(4, floats * 4), usage: Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST,
});

/** The first `floats` floats of `buffer`, read back. */
export async function readBack(device, buffer, floats) {
  const read = device.createBuffer({ size: floats * 4, usage: Usage.MAP_READ | Usage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, read, 0, floats * 4);
  device.queue.submit([encoder.finish()]);
  await read.mapAsync(Usage.MAP_READ);
  const out = new Float32Array(read.getMappedRange()).slice();
  read.destroy();
  return out;
}

/** max |a − b| (NaN anywhere counts as Infinity). */
export function maxAbsDiff(a, b) {
  let d = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Math.abs(a[i] - b[i]);
    if (!(x <= d)) d = Number.isNaN(x) ? Infinity : x;
  }
  return d;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * A prepared kernel: dispatches of `pipeline` with one uniform block and bindings, timed.
 * steps: [{ pipeline, params (fields), values, bindings: GPUBuffer[], groups }] run in order
 * (the decode path is two kernels).
 */
export function preparedKernel(device, steps) {
  const prepared = steps.map(({ pipeline, params, values, bindings, groups }) => {
    const block = packParams(params, values);
    const uniform = device.createBuffer({ size: Math.max(16, block.byteLength), usage: Usage.UNIFORM | Usage.COPY_DST });
    device.queue.writeBuffer(uniform, 0, block);
    const bindGroup = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: uniform } }, ...bindings.map((buffer, i) => ({ binding: i + 1, resource: { buffer } }))],
    });
    return { pipeline, bindGroup, groups, uniform };
  });
  return {
    encode(pass, batch) {
      for (let r = 0; r < batch; r++) {
        for (const { pipeline, bindGroup, groups } of prepared) {
          pass.setPipeline(pipeline);
          pass.setBindGroup(0, bindGroup);
          pass.dispatchWorkgroups(...groups);
        }
      }
    },
    destroy() { prepared.forEach((p) => p.uniform.destroy()); },
  };
}

/**
 * Times kernel.encode(): resolves to { ms (median per dispatch group), runs, clock }. Each sample
 * is one pass of `batch` repetitions; at least minRuns samples, then until budgetMs has passed or
 * maxRuns samples.
 */
export async function timeKernel(device, kernel, { batch = 5, minRuns = 3, maxRuns = 30, budgetMs = 400 } = {}) {
  const stamps = device.features.has('timestamp-query');
  const querySet = stamps ? device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
  const resolved = stamps ? device.createBuffer({ size: 16, usage: Usage.QUERY_RESOLVE | Usage.COPY_SRC }) : null;
  const read = stamps ? device.createBuffer({ size: 16, usage: Usage.MAP_READ | Usage.COPY_DST }) : null;
  const sample = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass(stamps ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : undefined);
    kernel.encode(pass, batch);
    pass.end();
    if (stamps) {
      encoder.resolveQuerySet(querySet, 0, 2, resolved, 0);
      encoder.copyBufferToBuffer(resolved, 0, read, 0, 16);
    }
    const t0 = performance.now();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
    const wall = performance.now() - t0;
    if (!stamps) return wall / batch;
    await read.mapAsync(Usage.MAP_READ);
    const [a, b] = new BigUint64Array(read.getMappedRange());
    read.unmap();
    return Number(b - a) / 1e6 / batch;
  };
  await sample();  // warm-up: first dispatches, caches
  const times = [];
  const end = performance.now() + budgetMs;
  while (times.length < minRuns || (performance.now() < end && times.length < maxRuns)) times.push(await sample());
  querySet?.destroy();
  resolved?.destroy();
  read?.destroy();
  return { ms: median(times), runs: times.length, clock: stamps ? 'timestamp' : 'wall' };
}

/** The pipeline of a variant descriptor, compiled now (timed: the first-compile cost). */
export async function compiledPipeline(device, variant, problem) {
  const t0 = performance.now();
  const pipeline = await programPipeline(device, variant, problem);
  return { pipeline, compileMs: performance.now() - t0 };
}

/**
 * The transfer floor of a forward: `inFloats` written with writeBuffer() into a storage buffer,
 * `outFloats` copied into a MAP_READ buffer, mapped and copied out (slice), with no kernel.
 * Resolves to medians { write, map, copyOut, total } in ms over `runs` rounds.
 */
export async function timeTransfers(device, inFloats, outFloats, runs = 7) {
  const data = new Float32Array(inFloats).fill(1);
  const input = zeroBuffer(device, inFloats);
  const output = zeroBuffer(device, outFloats);
  const read = device.createBuffer({ size: outFloats * 4, usage: Usage.MAP_READ | Usage.COPY_DST });
  const rounds = [];
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    device.queue.writeBuffer(input, 0, data);
    const t1 = performance.now();
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(output, 0, read, 0, outFloats * 4);
    device.queue.submit([encoder.finish()]);
    await read.mapAsync(Usage.MAP_READ);
    const t2 = performance.now();
    new Float32Array(read.getMappedRange()).slice();
    read.unmap();
    const t3 = performance.now();
    if (i > 0) rounds.push({ write: t1 - t0, map: t2 - t1, copyOut: t3 - t2, total: t3 - t0 });
  }
  [input, output, read].forEach((b) => b.destroy());
  return Object.fromEntries(Object.keys(rounds[0]).map((k) => [k, median(rounds.map((r) => r[k]))]));
}
