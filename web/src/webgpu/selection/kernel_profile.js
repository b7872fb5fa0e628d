// mha.gpuProfile(): what the kernel selection (kernel_selection.js) measured and chose on a
// device, with the pins in force and whether the device measures at all.
import { DEFAULT_VARIANTS, LINEAR_LARGE_ROWS } from './kernel_config.js';
import { pinnedVariant } from './gpu_kernel_pins.js';
import { rejectedVariants, selectionProfile, selectsKernels } from './kernel_selection.js';

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
