// Calls that cannot leave the GPU, and the typed error of each that route() (dispatch.js) sent to
// the CPU: a call with a GPU input (device_calls.js), and any call of a module whose weights live
// on the GPU only (create()'s hostWeights: false). Not lazily loaded, as device_calls.js is:
// dispatch.js asks requireGpu() on every call of such a module.
import { BackendError, MemoryError, StateDictError } from '../base/errors.js';

/** refuseOffGpu()'s `why` for a call with a GPU input. */
export const GPU_INPUTS_STAY = 'and its GPU inputs cannot move to the CPU';
// Why a module whose weights live on the GPU only (dispatch.js) has no other place for a call.
const GPU_ONLY = "this module keeps its weights on the GPU only (create()'s hostWeights: false)";
/** refuseOffGpu()'s `why` for such a module. */
export const WEIGHTS_ON_GPU_ONLY = `and ${GPU_ONLY}`;

/**
 * The error of a GPU call (`what`: 'forward' | 'encode') before the module's state dict is
 * complete: route() sends other calls to the core then, which names what is missing, but a call
 * with GPU tensors or on a cache made on the GPU has nowhere else to go.
 */
export const incompleteWeights = (what) => new StateDictError(`${what}: the module has no complete state dict yet (loadStateDict()); a GPU call needs its weights`, {
  argument: 'stateDict', expected: 'loaded weights', actual: 'incomplete',
});

/**
 * A module whose weights live on the GPU only (side.hostWeights() false) cannot run a call on
 * `where` other than the GPU: the typed error of why route() sent it there (it does not fit, a
 * NaN, the device lost), or of the GPU call that failed (gpuError). A call before a complete load
 * goes on to the core, which names what is missing.
 */
export function requireGpu(side, plan, where, gpuError = null) {
  if (side.hostWeights() || where === 'webgpu' || !side.complete()) return;
  const executor = side.executor();
  if (gpuError || !executor) {
    const failure = gpuError ? `the WebGPU call failed (${gpuError?.message ?? gpuError})` : "the module's WebGPU device was lost";
    throw new BackendError(`forward: ${failure}; ${GPU_ONLY}`, {
      argument: 'hostWeights', expected: 'a working WebGPU device', actual: gpuError ? String(gpuError?.message ?? gpuError) : 'device lost',
    });
  }
  refuseOffGpu(executor, plan, 'query', side.finiteWeights(), WEIGHTS_ON_GPU_ONLY);
}

/**
 * Why a call that route() sent to the CPU cannot go there (`why`: GPU_INPUTS_STAY or
 * WEIGHTS_ON_GPU_ONLY): a typed error naming `argument`.
 */
export function refuseOffGpu(executor, plan, argument, finiteWeights, why) {
  if (!executor.fits(plan)) {
    throw new MemoryError(`${argument}: this call does not fit the WebGPU device's buffer or dispatch limits, ${why}; split it`, {
      argument, expected: 'a call that fits the device', actual: `B ${plan.B}, L ${plan.L}, S ${plan.S}`,
    });
  }
  if (!finiteWeights) {
    throw new BackendError(`${argument}: the loaded weights hold a NaN or an infinity, which the GPU kernels promise nothing for, ${why}`, {
      argument, expected: 'finite weights', actual: 'non-finite weights',
    });
  }
  // What is left of route()'s rules: a host input of the same call holds a NaN or an infinity a row sees.
  throw new BackendError(`${argument}: a host input of this call holds a NaN or an infinity where a row sees it, which the GPU `
    + `kernels promise nothing for, ${why}`, { argument, expected: 'finite host inputs', actual: 'non-finite' });
}
