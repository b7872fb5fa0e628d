// create()'s backend options: { backend: 'auto' | 'wasm' | 'webgpu', gpu?, webgpuMinFlops? }, and
// the GPU side of a module they give (gpuSide(), for dispatch.js).
import { DEFAULT_WEBGPU_MIN_FLOPS } from '../dispatch.js';
import { BackendError, OptionError, describe } from '../errors.js';
import { acquireGpu, findGpu } from './device.js';

const BACKENDS = ['auto', 'wasm', 'webgpu'];

/** Checks the backend options; returns { backend, gpu, minFlops (undefined: not given) }. */
export function resolveBackendOptions(options) {
  const backend = options.backend ?? 'auto';
  if (!BACKENDS.includes(backend)) {
    throw new OptionError(`backend: expected one of ${BACKENDS.map((b) => `'${b}'`).join(', ')}, got ${describe(backend)}`, {
      argument: 'backend', expected: BACKENDS, actual: describe(backend),
    });
  }
  const minFlops = options.webgpuMinFlops;
  if (minFlops !== undefined && !(typeof minFlops === 'number' && minFlops >= 0)) {
    throw new OptionError(`webgpuMinFlops: expected a number >= 0, got ${describe(minFlops)}`, {
      argument: 'webgpuMinFlops', expected: 'number >= 0', actual: describe(minFlops),
    });
  }
  return { backend, gpu: options.gpu, minFlops };
}

/**
 * The GPU side of a module, for dispatch.js: null (WASM only: backend 'wasm', or 'auto' where
 * there is no WebGPU object at all), { executor } (backend 'webgpu', which throws BackendError
 * when there is no adapter or device), or for 'auto' { acquire } (a function that finds the GPU
 * at the first large call and resolves to an executor, or to null for WASM); and gpuMinFlops,
 * the calls under which stay on WASM. A `gpu` option of the wrong kind throws OptionError here,
 * whatever the backend. loadExecutor: see makeExecutor.
 */
export async function gpuSide(config, { backend, gpu, minFlops }, loadExecutor) {
  const gpuMinFlops = minFlops ?? (backend === 'auto' ? DEFAULT_WEBGPU_MIN_FLOPS : 0);
  if (backend === 'wasm') return { gpu: null, gpuMinFlops };
  const missing = gpuMissing(config);
  if (missing && backend === 'webgpu') {
    throw new BackendError(`backend 'webgpu': ${missing} has no WebGPU kernels yet; use backend 'auto' or 'wasm'`, {
      argument: 'backend', expected: "'auto' or 'wasm'", actual: 'webgpu',
    });
  }
  if (missing) return { gpu: null, gpuMinFlops };
  const useSoftware = minFlops !== undefined;
  if (backend === 'webgpu') {
    const found = await acquireGpu({ gpu, backend, useSoftware });
    return { gpu: { executor: await makeExecutor(config, found, loadExecutor) }, gpuMinFlops };
  }
  if (!findGpu(gpu)) return { gpu: null, gpuMinFlops };
  const acquire = async () => {
    const found = await acquireGpu({ gpu, backend, useSoftware });
    return found ? makeExecutor(config, found, loadExecutor) : null;
  };
  return { gpu: { acquire }, gpuMinFlops };
}

/**
 * What a module (its create() options or resolved config) needs that the GPU path lacks, or null.
 * Grouped-query attention and rotary embeddings have WebGPU kernels now, so no module option is
 * missing; what the GPU still lacks is per call (a KV cache: dispatch.js route() keeps those on
 * WASM), not per module. Kept as the one place to name a future module option the GPU lacks.
 */
export function gpuMissing() {
  return null;
}

/**
 * loadExecutor() resolves to the WebGpuExecutor class (with its WGSL), from the entry file: Node
 * imports it only here, when there is a GPU (importing it costs ~9 ms of a Node cold start that
 * most processes, having no GPU, would pay for nothing); browsers import it statically, since a
 * lazy import would split the package into two chunks for a bundler.
 */
async function makeExecutor(config, found, loadExecutor) {
  const WebGpuExecutor = await loadExecutor();
  const executor = new WebGpuExecutor(config, found);
  await executor.ready;  // the module's pipelines, compiled before its first call
  return executor;
}
