// create()'s backend options: { backend: 'auto' | 'wasm' | 'webgpu', gpu?, webgpuMinFlops? }, and
// what they turn into. api.js calls acquire() before it makes the WASM backend and wrap() after.
import { OptionError, describe } from '../errors.js';
import { acquireGpu, findGpu } from './device.js';

const BACKENDS = ['auto', 'wasm', 'webgpu'];

/**
 * backend 'auto': the FLOPs (forwardFlops in shapes.js) from which a call goes to a hardware
 * GPU. 2^26 ≈ 67 MFLOP is about 2 ms of single-threaded WASM at the 27–32 GFLOP/s measured in
 * docs/benchmarks.md (≈ 1.3 ms on the worker pool); below that, an assumed 0.5–1 ms fixed cost
 * of a GPU round trip (upload, dispatches, mapAsync readback) leaves a GPU little to win. This
 * is an estimate, not a measurement on GPU hardware (none was available; docs/webgpu.md says how
 * it was chosen and how to measure it): apps that know their GPU should time
 * `bench/run.mjs --webgpu` and set webgpuMinFlops. A software adapter (SwiftShader) is never
 * used by 'auto' unless webgpuMinFlops is given.
 */
export const DEFAULT_WEBGPU_MIN_FLOPS = 2 ** 26;

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
 * What the module will compute on: null (WASM only: backend 'wasm', or 'auto' where there is no
 * WebGPU object at all), the GPU ({ device }; backend 'webgpu', which
 * throws BackendError when there is no adapter or device), or for 'auto' a function that finds
 * it later, at the first large call (null then means WASM). A `gpu` option of the wrong kind
 * throws OptionError here, whatever the backend.
 */
export async function acquire({ backend, gpu, minFlops }) {
  if (backend === 'wasm') return null;
  const useSoftware = minFlops !== undefined;
  if (backend === 'webgpu') return acquireGpu({ gpu, backend, useSoftware });
  if (!findGpu(gpu)) return null;
  return () => acquireGpu({ gpu, backend, useSoftware });
}

/**
 * The module's backend: the WASM one as is, or the WebGPU one wrapping it. The WebGPU backend
 * (with its WGSL) is imported only here, when there is a GPU: importing it costs ~9 ms of a
 * Node cold start that most processes, having no GPU, would pay for nothing.
 */
export async function wrap(wasmBackend, config, gpu, { backend, minFlops }) {
  if (!gpu) return wasmBackend;
  const threshold = minFlops ?? (backend === 'auto' ? DEFAULT_WEBGPU_MIN_FLOPS : 0);
  const { WebGpuMha } = await import('./backend.js');
  return new WebGpuMha(wasmBackend, config, gpu, { minFlops: threshold });
}
