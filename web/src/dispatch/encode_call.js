// Where mha.encode() stores its cache (dispatch.js encode() hands it here), in one place:
//   - on the GPU while the module's executor is in use (where createCache() would put a cache now),
//     else in the calling thread's WASM instance; the cache's steps then run where it is (route());
//   - host key and value whose GPU encode fails, or does not fit the device, go to WASM (the
//     failure policy of dispatch.js);
//   - GPU tensors (an encoder's output left on the device) need the GPU: an 'auto' module looks for
//     it at such a call; without it, or when the encode does not fit or fails, a typed error
//     (device_calls.js's rules: they cannot move to the CPU).
import { BackendError, MemoryError, WebAttentionError } from '../base/errors.js';
import { ownedPlan } from '../base/call_plan.js';
import { isDeviceData } from '../base/gpu_tensors.js';
import { deviceExecutor } from './device_calls.js';

/**
 * plan: resolveEncode()'s. side: the Dispatcher's, as device_calls.js reads it ({ executor(),
 * complete(), cpu(where), gpuFailed(error, ranOnCpu), acquire() (an 'auto' module's first look for
 * its GPU) }). Resolves to { owner, storage }: the executor that holds the new cache and its storage.
 */
export async function encodeStorage(side, plan) {
  const argument = [plan.key, plan.value].find(isDeviceData)?.argument ?? null;
  if (argument) await side.acquire();
  const executor = argument ? deviceExecutor(side, 'encode', argument, plan) : side.complete() && side.executor();
  let owned = plan;
  if (executor) {
    owned = ownedPlan(plan);
    try {
      const storage = await executor.encode(owned);
      if (storage) return { owner: executor, storage };
      if (argument) {
        throw new MemoryError(`${argument}: this encode does not fit the WebGPU device's buffer or dispatch limits, and its GPU `
          + 'tensors cannot move to the CPU; encode fewer positions', { argument, expected: 'an encode that fits the device', actual: `B ${plan.B}, S ${plan.S}` });
      }
    } catch (e) {
      if (e instanceof WebAttentionError) throw e;
      await side.gpuFailed(e, !argument);
      if (argument) {
        throw new BackendError(`${argument}: the WebGPU encode failed (${e?.message ?? e}); GPU tensors cannot move to the CPU`, {
          argument, expected: 'a working WebGPU device', actual: e?.message ?? String(e),
        });
      }
    }
  }
  const wasm = side.cpu('wasm');
  return { owner: wasm, storage: wasm.encode(owned) };
}
