// WebGPU's error scopes around one piece of work: what tells a GpuBatch (dispatch/gpu_batch.js)
// and a batched call (webgpu/forward_pass.js) whether WebGPU refused what they recorded or
// submitted, read when the batch is submitted.

/**
 * fn() run in the device's out-of-memory and validation error scopes, popped right after it, also
 * when it throws (no await between: scopes are a device-wide stack). Returns their promises, each
 * of its error or null (a lost device's rejection an Error); a throw from fn goes on, the scopes
 * popped.
 */
export function inScopes(device, fn) {
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  const pop = () => [device.popErrorScope(), device.popErrorScope()].map((s) => s.then((e) => e, (e) => e ?? new Error('device lost')));
  try {
    fn();
  } catch (e) {
    pop();
    throw e;
  }
  return pop();
}
