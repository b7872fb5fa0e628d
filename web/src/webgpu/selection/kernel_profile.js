// mha.gpuProfile(): what the kernel selection (kernel_selection.js) measured and chose on a
// device, with the pins in force and whether the device measures at all.
import { DEFAULT_VARIANTS, LINEAR_LARGE_ROWS } from './kernel_config.js';
import { pinnedVariant } from './gpu_kernel_pins.js';
import { rejectedVariants, selectionProfile, selectsKernels } from './kernel_selection.js';
import { warnOnce } from '../../base/warn_once.js';

/**
 * { adapter: GPUAdapterInfo fields, measuring (false on a software adapter: the defaults run),
 * timer: 'timestamp-query' | 'wall', defaults ({ family: names }: linear's second from
 * linearLargeFromRows rows), pinned: { family: name }, classes:
 * selectionProfile()'s list, rejected: the candidates dropped on this device because their
 * results were further from their reference's than their tolerance: [{ kernel, variant,
 * shapeClass, maxAbsDiff, tolerance }] }.
 */
export function kernelProfile(device) {
  const info = device.adapterInfo ?? {};
  const pinned = Object.fromEntries(Object.keys(DEFAULT_VARIANTS).map((f) => [f, pinnedVariant(f)]).filter(([, n]) => n));
  return {
    adapter: { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description },
    measuring: selectsKernels(device),
    timer: device.features?.has('timestamp-query') ? 'timestamp-query' : 'wall',
    defaults: { ...DEFAULT_VARIANTS, linearLargeFromRows: LINEAR_LARGE_ROWS },
    pinned,
    classes: selectionProfile(device),
    rejected: rejectedVariants(device),
  };
}

/**
 * A module's create() gpuPrecision on `device`: { requested, float16 } (float16: its float16
 * variants are candidates, which needs the device feature 'shader-f16'). Where 'float16' was asked
 * of a device without it, says so once: the module's projections and attention then run in float32.
 */
export function precisionProfile(device, requested = 'float32') {
  const float16 = requested === 'float16' && Boolean(device.features?.has('shader-f16'));
  if (requested === 'float16' && !float16) {
    warnOnce('webgpu-no-shader-f16', 'webattention: gpuPrecision \'float16\' was asked of a WebGPU device without '
      + '\'shader-f16\'; its projections and attention run in float32 (mha.gpuProfile().precision)');
  }
  return { requested, float16 };
}
