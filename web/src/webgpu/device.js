// Finding a WebGPU device. The package never imports a WebGPU implementation: it uses what the
// app provides, in this order: the `gpu` option of create() (a GPU, i.e. navigator.gpu or the
// object of the npm `webgpu` package's create(), or a GPUDevice the app already has), then
// navigator.gpu, then globalThis.gpu. So Node gets WebGPU only when the app brings it.
import { BackendError, OptionError, describe } from '../base/errors.js';
import { variantFeatures } from './selection/kernel_config.js';

const backendError = (message, fields) => new BackendError(message, fields);

// Buffer usage and map mode flags as numbers: Node has no GPUBufferUsage global unless the app
// copied the `webgpu` package's globals onto globalThis.
export const Usage = Object.freeze({
  MAP_READ: 0x1, MAP_WRITE: 0x2, COPY_SRC: 0x4, COPY_DST: 0x8, UNIFORM: 0x40, STORAGE: 0x80, QUERY_RESOLVE: 0x200,
});
export const MAP_READ = 0x1;
export const MAP_WRITE = 0x2;

/**
 * The size of a buffer kept for reuse that must hold `bytes`: the next power of two, at least 256
 * bytes and at most `cap` (never below `bytes`), so a module whose calls grow makes O(log size)
 * buffers per role and repeated calls make none.
 */
export const reusableSize = (bytes, cap = Infinity) => Math.max(bytes, Math.min(Math.max(256, 2 ** Math.ceil(Math.log2(bytes))), cap));

// The looks of a GPUDevice and of a GPU object: what the package calls on them (a throw while
// looking, from a revoked Proxy say: neither).
const looks = (test) => (x) => {
  try {
    return Boolean(x) && test(x);
  } catch {
    return false;
  }
};
const isDevice = looks((x) => typeof x.createBuffer === 'function' && typeof x.createCommandEncoder === 'function'
  && typeof x.queue?.writeBuffer === 'function' && typeof x.queue?.submit === 'function' && typeof x.lost?.then === 'function'
  && typeof x.features?.has === 'function' && typeof x.limits === 'object');
const isGpu = looks((x) => typeof x.requestAdapter === 'function');

// A GPUDevice passed as `gpu`, tried: a small buffer made and destroyed, which an object that only
// looks like one (a wrapper, a Proxy of one: WebGPU refuses it as `this`) fails, as an OptionError
// naming gpu rather than an untyped error in a later call.
// Each device is tried once (findGpu() runs at create() and at acquisition, for every module).
const workingDevices = new WeakSet();
function requireWorkingDevice(device) {
  if (workingDevices.has(device)) return;
  try {
    device.createBuffer({ size: 4, usage: Usage.COPY_DST, label: 'webattention gpu check' }).destroy();
    workingDevices.add(device);
  } catch (e) {
    throw new OptionError(`gpu: not a GPUDevice that WebGPU made (${e?.message ?? e}): pass the device itself, not a wrapper of one`, {
      argument: 'gpu', expected: 'GPUDevice', actual: describe(device),
    });
  }
}

/** The GPU object to use: the option, navigator.gpu, globalThis.gpu, or null. */
export function findGpu(option) {
  if (option !== undefined && option !== null) {
    if (isGpu(option)) return option;
    if (isDevice(option)) {
      requireWorkingDevice(option);
      return option;
    }
    throw new OptionError(`gpu: expected a GPU (navigator.gpu, or the npm 'webgpu' package's create()) or a GPUDevice, got ${describe(option)}`, {
      argument: 'gpu', expected: 'GPU | GPUDevice', actual: describe(option),
    });
  }
  const candidates = [globalThis.navigator?.gpu, globalThis.gpu];
  return candidates.find(isGpu) ?? null;
}

// GPUDevice → whether its WGSL has the packed_4x8_integer_dot_product language feature
// (dot4I8Packed): WebGPU says so on the GPU object (wgslLanguageFeatures), not on the device, so
// it is recorded where a device is acquired.
const packedDots = new WeakMap();
const PACKED_DOT = 'packed_4x8_integer_dot_product';
const hasPackedDot = (gpu) => Boolean(gpu?.wgslLanguageFeatures?.has?.(PACKED_DOT));

/**
 * Whether WGSL on `device` has dot4I8Packed: as the GPU object it was acquired from says (for a
 * GPUDevice passed as `gpu`, navigator.gpu's or globalThis.gpu's; false where there is none).
 */
export const packedDotProduct = (device) => packedDots.get(device) ?? false;

/** Whether an adapter is a software one (SwiftShader, WARP, llvmpipe): WebGPU on the CPU. */
export function isSoftwareAdapter(adapter) {
  const info = adapter.info ?? {};
  if (info.isFallbackAdapter || adapter.isFallbackAdapter) return true;
  const text = [info.vendor, info.architecture, info.device, info.description].join(' ');
  return /swiftshader|llvmpipe|lavapipe|softpipe|\bwarp\b|microsoft basic render/i.test(text);
}

/**
 * Asks `gpu` for an adapter. Resolves to { adapter, software } or throws BackendError when
 * there is none.
 */
export async function requestAdapter(gpu) {
  let adapter = null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    throw backendError(`backend 'webgpu': requestAdapter() failed: ${e?.message ?? e}`, {
      argument: 'backend', expected: 'a WebGPU adapter', actual: 'requestAdapter() threw',
    });
  }
  if (!adapter) {
    throw backendError("backend 'webgpu': no WebGPU adapter (requestAdapter() resolved to null)", {
      argument: 'backend', expected: 'a WebGPU adapter', actual: 'none',
    });
  }
  return { adapter, software: isSoftwareAdapter(adapter) };
}

/**
 * A device on `adapter` with the largest storage-buffer limits the adapter offers (the defaults,
 * 128 MiB per binding, would cap L·S for the weights) and its workgroup memory (the larger kernel
 * variants need it), its storage buffers per shader stage (a cached call on rows at lengths of
 * their own binds a ninth in the NaN rule's kernel: cache_checks.js), plus 'timestamp-query'
 * where offered (the kernel selection times on the GPU's clock then) and the features kernel
 * variants need ('subgroups': kernel_config.js's variantFeatures(); such a variant is a candidate
 * only on a device that has them). Throws BackendError on failure.
 */
export async function requestDevice(adapter) {
  const want = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxStorageBuffersPerShaderStage'];
  const requiredLimits = {};
  for (const name of want) if (adapter.limits?.[name] !== undefined) requiredLimits[name] = adapter.limits[name];
  const requiredFeatures = ['timestamp-query', ...variantFeatures()].filter((f) => adapter.features?.has(f));
  try {
    return await adapter.requestDevice({ requiredLimits, requiredFeatures, label: 'webattention' });
  } catch (e) {
    throw backendError(`backend 'webgpu': requestDevice() failed: ${e?.message ?? e}`, {
      argument: 'backend', expected: 'a WebGPU device', actual: 'requestDevice() failed',
    });
  }
}

// One device per GPU object, shared by every module made on it (browsers limit how many devices a
// page may hold), and forgotten once lost so that the next module gets a new adapter and device.
// The adapter is probed first: 'auto' may decline a software adapter without making a device.
// A probe that found no adapter is remembered for 'auto' (browsers log a warning for every
// requestAdapter() that finds none); backend 'webgpu' asks again.
const shared = new WeakMap();  // GPU → { probe: Promise<{ adapter, software }>, failed, device: Promise | null }

function forget(gpu, entry) {
  if (shared.get(gpu) === entry) shared.delete(gpu);
}

async function sharedDevice(gpu, backend, useSoftware) {
  let entry = shared.get(gpu);
  if (entry?.failed && backend === 'webgpu') {
    forget(gpu, entry);
    entry = null;
  }
  if (!entry) {
    entry = { probe: requestAdapter(gpu), failed: false, device: null };
    entry.probe.catch(() => { entry.failed = true; });
    shared.set(gpu, entry);
  }
  const probe = await entry.probe;
  // 'auto' leaves a software adapter alone unless a webgpuMinFlops was given: it is slower than
  // WASM at every size measured (docs/webgpu.md), so a device would only cost memory.
  if (backend === 'auto' && probe.software && !useSoftware) return null;
  if (!entry.device) {
    entry.device = requestDevice(probe.adapter).then((device) => {
      packedDots.set(device, hasPackedDot(gpu));
      device.lost.then(() => forget(gpu, entry));
      return { device };
    });
    entry.device.catch(() => forget(gpu, entry));
  }
  return entry.device;
}

/**
 * What create() gets for backend 'webgpu' | 'auto': { device }, or null
 * where 'auto' finds nothing it should use ('webgpu' throws BackendError instead). A device the
 * package made is shared and never destroyed by it; a GPUDevice passed as `gpu` is used as is.
 */
export async function acquireGpu({ gpu: option, backend, useSoftware }) {
  const gpu = findGpu(option);
  if (!gpu) {
    if (backend === 'auto') return null;
    throw backendError("backend 'webgpu': WebGPU is not available (no navigator.gpu or globalThis.gpu, and no `gpu` option; "
      + "in Node, pass the npm 'webgpu' package's create([]) as `gpu`)", {
      argument: 'backend', expected: 'navigator.gpu, globalThis.gpu or the gpu option', actual: 'none',
    });
  }
  if (isDevice(gpu)) {
    if (await lostAlready(gpu, backend)) return null;
    const software = isSoftwareAdapter({ info: gpu.adapterInfo ?? {} });
    if (backend === 'auto' && software && !useSoftware) return null;
    if (!packedDots.has(gpu)) packedDots.set(gpu, hasPackedDot(findGpu(undefined)));
    return { device: gpu };
  }
  try {
    return await sharedDevice(gpu, backend, useSoftware);
  } catch (e) {
    if (backend === 'auto') return null;
    throw e;
  }
}

// Whether a GPUDevice passed as `gpu` was lost before the module took it: backend 'auto' then runs
// on WASM; 'webgpu' is a BackendError naming gpu, rather than a module whose every call fails. Its
// `lost` looked at against a settled promise: an already settled one wins the race.
async function lostAlready(device, backend) {
  const info = await Promise.race([device.lost, Promise.resolve(null)]);
  if (!info) return false;
  if (backend === 'auto') return true;
  const why = `${info.reason ?? 'unknown'}${info.message ? `: ${info.message}` : ''}`;
  throw backendError(`gpu: the GPUDevice passed was lost already (${why}); pass a live one`, {
    argument: 'gpu', expected: 'a live GPUDevice', actual: `lost (${why})`,
  });
}
