// The host's floor under a batched decode step (bench/gpu/gpu_decode_stack.mjs): Dawn's calls alone,
// as a step through `layers` layers makes them, and nothing else. Per layer: two error scopes, a
// result buffer, the input copied in, the uniforms' writeBuffer(), one compute pass of
// `dispatches` dispatches on bind groups made before (kept, as a decode step's are), the result
// copied out, all into one command encoder. No checks, no choice of kernels, no dispatch list: what
// a step's recording would cost if the package's JavaScript cost nothing. Its kernel is trivial:
// only the recording before the submit is timed. With `replay` the calls of a GpuStep's replay
// instead (step_tape.js): per layer its dispatches alone, in the one compute pass the step's
// layers share (open_pass.js), with neither a result buffer nor a copy (its kernels bind the
// step's buffers as they are); per step one writeBuffer() of every layer's uniforms
// (step_uniforms.js) and the submit's two error scopes.
// A dispatch's uniform slot, as the package's.
import { UNIFORM_SLOT as SLOT } from '../../web/src/webgpu/encoding_context.js';

const WGSL = `
@group(0) @binding(0) var<uniform> n: u32;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) { if (g.x < n) { a[g.x] += 1.0; } }`;
const ROW_BYTES = 4096;

/**
 * Resolves to { medianMs, bestMs, steps }: the recording of `steps` steps (after two untimed), each
 * after `idleMs` of idle and a garbage collection where node runs with --expose-gc.
 */
export async function dawnFloor(device, { layers, dispatches, steps = 40, idleMs = 0, replay = false }) {
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code: WGSL }), entryPoint: 'main' } });
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  // A replay writes every layer's slots at once; a batched step's layer its own.
  const slotBytes = (replay ? layers : 1) * dispatches * SLOT;
  const uniforms = device.createBuffer({ size: slotBytes, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const rows = device.createBuffer({ size: ROW_BYTES, usage });
  const input = device.createBuffer({ size: ROW_BYTES, usage });
  const groups = Array.from({ length: dispatches }, (_, i) => device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: uniforms, offset: i * SLOT, size: 4 } }, { binding: 1, resource: { buffer: rows } }],
  }));
  const blocks = new Uint8Array(slotBytes);
  const times = [];
  for (let step = 0; step < steps + 2; step++) {
    if (idleMs > 0) await new Promise((resolve) => setTimeout(resolve, idleMs));
    globalThis.gc?.();
    const t0 = performance.now();
    const encoder = device.createCommandEncoder();
    const results = [];
    const scopes = [];
    const dispatchAll = (pass) => {
      for (const group of groups) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(1);
      }
    };
    const shared = replay ? encoder.beginComputePass() : null;
    for (let layer = 0; layer < layers; layer++) {
      if (replay) {
        dispatchAll(shared);
        continue;
      }
      device.pushErrorScope('out-of-memory');
      device.pushErrorScope('validation');
      const result = device.createBuffer({ size: ROW_BYTES, usage });
      results.push(result);
      encoder.copyBufferToBuffer(input, 0, rows, 0, ROW_BYTES);
      device.queue.writeBuffer(uniforms, 0, blocks);
      const pass = encoder.beginComputePass();
      dispatchAll(pass);
      pass.end();
      encoder.copyBufferToBuffer(rows, 0, result, 0, ROW_BYTES);
      scopes.push(device.popErrorScope(), device.popErrorScope());
    }
    if (replay) {
      shared.end();
      device.pushErrorScope('out-of-memory');
      device.pushErrorScope('validation');
      device.queue.writeBuffer(uniforms, 0, blocks);
    }
    if (step >= 2) times.push(performance.now() - t0);
    device.queue.submit([encoder.finish()]);
    if (replay) scopes.push(device.popErrorScope(), device.popErrorScope());
    const errors = (await Promise.all(scopes)).filter(Boolean);
    if (errors.length > 0) throw new Error(`dawnFloor: ${errors[0].message}`);
    await device.queue.onSubmittedWorkDone();
    for (const result of results) result.destroy();
  }
  for (const buffer of [uniforms, rows, input]) buffer.destroy();
  const sorted = [...times].sort((a, b) => a - b);
  return { medianMs: sorted[sorted.length >> 1], bestMs: sorted[0], steps: times.length };
}
