// Acquiring a module's GPU executor as create()'s backend options (module_config.js) ask: at
// create() for backend 'webgpu', at the first large call for 'auto' (gpuSide(), for dispatch.js).
import { DEFAULT_WEBGPU_MIN_FLOPS } from '../base/cost_model.js';
import { acquireGpu, findGpu } from './device.js';

/**
 * The GPU side of a module, for dispatch.js: null (WASM only: backend 'wasm', or 'auto' where
 * there is no WebGPU object at all), { executor } (backend 'webgpu', which throws BackendError
 * when there is no adapter or device), or for 'auto' { acquire } (a function that finds the GPU
 * at the first large call and resolves to an executor, or to null for WASM); and gpuMinFlops,
 * the calls under which stay on WASM (measureThreshold: 'auto' without webgpuMinFlops, whose
 * threshold is its device's, measured: dispatch/auto_threshold.js). With backend 'auto' or 'webgpu', a `gpu` option of the
 * wrong kind throws OptionError here. makeExecutor(found) resolves to the WebGpuExecutor on
 * acquireGpu()'s { device } (api/create_executors.js makes it).
 */
export async function gpuSide({ backend, gpu, minFlops }, makeExecutor) {
  const gpuMinFlops = minFlops ?? (backend === 'auto' ? DEFAULT_WEBGPU_MIN_FLOPS : 0);
  const measureThreshold = backend === 'auto' && minFlops === undefined;
  if (backend === 'wasm') return { gpu: null, gpuMinFlops };
  const useSoftware = minFlops !== undefined || acquisitionHooks.software;
  if (backend === 'webgpu') {
    const found = await acquireGpu({ gpu, backend, useSoftware });
    return { gpu: { executor: await makeExecutor(found) }, gpuMinFlops };
  }
  if (!findGpu(gpu)) return { gpu: null, gpuMinFlops };
  const acquire = async () => {
    const found = await acquireGpu({ gpu, backend, useSoftware });
    return found ? makeExecutor(found) : null;
  };
  return { gpu: { acquire }, gpuMinFlops, measureThreshold };
}

/**
 * Tests: software lets 'auto' take a software adapter without a webgpuMinFlops, so that its
 * measured threshold (dispatch/auto_threshold.js) can be tested on SwiftShader.
 */
export const acquisitionHooks = { software: false };
