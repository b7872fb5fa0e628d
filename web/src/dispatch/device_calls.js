// Where a forward() with GPU-resident tensors runs (dispatch.js hands it here): a GPU input
// ({ gpuBuffer, shape }) or output: 'gpu-buffer'. The rules, in one place:
//   - it needs the module's GPU (backend 'webgpu', or 'auto' with a usable device: the GPU is
//     looked for at such a call whatever its size); without one, a typed error names the argument
//     (the GPU input, or `output`): a WASM module has no device to read or write buffers on;
//   - a GPU input is read on the device only: the call runs there or is refused (MemoryError when
//     it does not fit, BackendError when the loaded weights hold a NaN or an infinity, which the
//     GPU kernels promise nothing for; a failed GPU call rejects, it cannot move to the CPU);
//     nothing checks a GPU input for NaN (that would be a readback): the NaN rule's CPU fallback
//     does not apply to it, the cached kernels' rule (nonfinite_rows.wgsl.js) does; a host input
//     of the same call that a row sees a NaN or an infinity in is a BackendError;
//   - host inputs with output 'gpu-buffer' follow the plain rules (threshold, NaN rule, fits,
//     failure policy); a call they send to the CPU puts its result into a new GPU buffer, unless the
//     module keeps its weights on the GPU only (hostWeights: false): then it is refused as a GPU
//     input's call would be;
//   - with a cache, the cache must be stored on the GPU (made while the module's device was in
//     use) and the call must be one pass (a windowed cache's rows per pass).
import { BackendError, CacheError, DTypeError, OptionError, WebAttentionError } from '../base/errors.js';
import { deviceInputs, deviceTensors } from '../base/gpu_tensors.js';
import { Usage } from '../webgpu/device.js';
import { ownedPlan } from '../base/call_plan.js';
import { GPU_INPUTS_STAY, WEIGHTS_ON_GPU_ONLY, incompleteWeights, refuseOffGpu, requireGpu } from './off_gpu.js';

/** The argument a GPU call's refusal names: its first GPU input, else `output`. */
const deviceArgument = (plan) => deviceInputs(plan)[0]?.argument ?? 'output';

/**
 * plan: a forward() plan with plan.onDevice or plan.output 'gpu-buffer'. side (the Dispatcher's):
 * { executor() (the GPU executor in use, or null), complete() (weights loaded), finiteWeights(),
 * hostWeights() (false: the weights are on the GPU only, create()'s hostWeights),
 * route(plan) (dispatch.js route()), cpu(where) (the executor named), enqueueCached(plan, where),
 * gpuFailed(error) (the failure policy), onRun(where, plan, path) }. Resolves to a ForwardResult
 * whose output (and weights) are GpuTensors when plan.output is 'gpu-buffer'.
 */
export async function forwardOnDevice(side, plan) {
  const argument = deviceArgument(plan);
  const executor = deviceExecutor(side, 'forward', argument, plan);
  if (plan.cache) {
    if (!plan.cache.kvCache.isOf(executor)) {
      throw new CacheError(`cache: stored on WASM (made before the module had its GPU); ${argument} needs a cache on the GPU`, {
        argument: 'cache', expected: 'a cache on the GPU', actual: 'a cache on WASM',
      });
    }
    return side.enqueueCached(plan, 'webgpu');
  }
  const { where, fallback } = side.route(plan);
  if (where !== 'webgpu' && (plan.onDevice || !side.hostWeights())) {
    refuseOffGpu(executor, plan, argument, side.finiteWeights(), plan.onDevice ? GPU_INPUTS_STAY : WEIGHTS_ON_GPU_ONLY);
  }
  if (where !== 'webgpu') return onCpu(side, executor, where, ownedPlan(plan));
  const owned = ownedPlan(plan);
  try {
    const result = await executor.forward(owned);
    side.onRun('webgpu', owned, result.path);
    return result;
  } catch (e) {
    if (e instanceof WebAttentionError) throw e;
    await side.gpuFailed(e, !plan.onDevice);
    requireGpu(side, plan, 'cpu', e);  // weights on the GPU only: its typed error, as a plain call's
    if (plan.onDevice || !side.executor()) {
      throw new BackendError(`${argument}: the WebGPU call failed (${e?.message ?? e}); a GPU-resident call cannot move to the CPU`, {
        argument, expected: 'a working WebGPU device', actual: e?.message ?? String(e),
      });
    }
    return onCpu(side, executor, fallback, owned);
  }
}

/**
 * The GPU executor a call with GPU-resident tensors (`what`: 'forward' | 'encode') runs on, or the
 * typed error of why it cannot: no weights yet (StateDictError), no device (OptionError naming
 * `argument`: a WASM module has no device to read or write buffers on), an input of plan's that is
 * no GPUBuffer of that device's WebGPU (DTypeError: requireGenuineBuffers()).
 */
export function deviceExecutor(side, what, argument, plan) {
  if (!side.complete()) throw incompleteWeights(what);
  const executor = side.executor();
  if (!executor) {
    throw new OptionError(`${argument}: GPU-resident tensors need the module's WebGPU device (backend 'webgpu', or 'auto' `
      + 'with a usable GPU); this module computes on WASM', { argument, expected: 'a module on WebGPU', actual: 'wasm' });
  }
  requireGenuineBuffers(executor.device, plan);  // before any WebGPU call sees its inputs
  return executor;
}

// A call with host inputs computed on the CPU (`where`), its result put into GPU buffers (its
// `out`'s buffer: deviceOut stays here, the CPU executors never see a GPUBuffer).
async function onCpu(side, executor, where, plan) {
  const result = await side.cpu(where).forward({ ...plan, deviceOut: null });
  side.onRun('wasm', plan);
  return executor.deviceResult(result, plan);
}

// Each WebGPU's own `size` getter of GPUBuffers, by device: found once on a buffer the device makes.
const sizeGetters = new WeakMap();
function sizeGetterOf(device) {
  if (!sizeGetters.has(device)) {
    const probe = device.createBuffer({ size: 4, usage: Usage.COPY_DST, label: 'webattention buffer probe' });
    let getter = null;
    for (let proto = Object.getPrototypeOf(probe); proto && !getter; proto = Object.getPrototypeOf(proto)) {
      getter = Object.getOwnPropertyDescriptor(proto, 'size')?.get ?? null;
    }
    probe.destroy();
    sizeGetters.set(device, getter);
  }
  return sizeGetters.get(device);
}

/**
 * Throws a DTypeError for the first GPU input (or `out`) of `plan` that is not a GPUBuffer of `device`'s WebGPU: a
 * Proxy of one, or an object made on GPUBuffer's prototype, passes checkGpuTensor()'s look, and
 * npm `webgpu` (Dawn in Node) crashes the process on the first call that takes one (a browser
 * throws a TypeError). The WebGPU's own `size` getter answers only its own buffers: it runs here
 * on each input, before any WebGPU call sees it.
 */
export function requireGenuineBuffers(device, plan) {
  const getter = sizeGetterOf(device);
  if (!getter) return;
  for (const { argument, gpuBuffer } of deviceTensors(plan)) {
    try {
      getter.call(gpuBuffer);
    } catch (e) {
      throw new DTypeError(`${argument}.gpuBuffer: not a GPUBuffer of the module's WebGPU (a Proxy or a look-alike: ${e?.message ?? e}); pass the GPUBuffer itself`, {
        argument, expected: 'GPUBuffer', actual: 'an object that is not one',
      });
    }
  }
}
