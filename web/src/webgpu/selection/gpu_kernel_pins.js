// configure({ gpuKernels: { linear?, attention?, decode?, q8linear?, q8rows? } }): WebGPU kernel
// variants pinned by name (kernel_config.js's catalogue), for deterministic runs and tests. A pinned family skips
// the selection by measurement (kernel_selection.js); where a pinned variant does not fit the
// device or the call (workgroup memory, head widths), the family's default runs instead.
import { OptionError, describe } from '../../base/errors.js';
import { variantNames } from './kernel_config.js';

let pins = {};
let pinnings = 0;  // pinGpuKernels() calls: pinsGeneration()

/** Checks a gpuKernels option: null/undefined (no pins) or { family: a variant name }. */
export function checkGpuKernels(value) {
  if (value === undefined || value === null) return {};
  const names = variantNames();
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new OptionError(`configure: gpuKernels: expected { linear?, attention?, decode?, q8linear?, q8rows? } of variant names, got ${describe(value)}`, {
      argument: 'gpuKernels', expected: 'object', actual: describe(value),
    });
  }
  for (const [family, name] of Object.entries(value)) {
    const known = names[family];
    if (!known) {
      throw new OptionError(`configure: gpuKernels: unknown kernel family '${family}'; expected one of ${Object.keys(names).join(', ')}`, {
        argument: 'gpuKernels', expected: Object.keys(names), actual: family,
      });
    }
    if (name !== undefined && name !== null && !known.includes(name)) {
      throw new OptionError(`configure: gpuKernels.${family}: unknown variant ${describe(name)}; expected one of ${known.join(', ')}`, {
        argument: `gpuKernels.${family}`, expected: known, actual: describe(name),
      });
    }
  }
  return Object.fromEntries(Object.entries(value).filter(([, name]) => name !== undefined && name !== null));
}

/** Replaces the pins (a checked value). */
export function pinGpuKernels(checked) {
  pins = { ...checked };
  pinnings++;
}

/** A number that changes whenever the pins may have (kernel choices kept from before are stale). */
export const pinsGeneration = () => pinnings;

/** The variant pinned for `family`, or undefined. */
export const pinnedVariant = (family) => pins[family];

/** gpuKernelVariants(): resolves to the variant names of each family. */
export async function gpuKernelVariants() {
  return variantNames();
}
