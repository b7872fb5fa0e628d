// Bind groups kept for reuse. createBindGroup() is the costliest call a dispatch makes on the
// host: Dawn validates every entry against the layout and the buffers. A decode step's layer binds
// the same buffers at every token (its per-call buffers come from the module's pool, its weights
// and cache stay), so most of its dispatches find their bind group made by the step before; only
// those that bind the step's new input or result buffers make one. Measured on SwiftShader (Dawn's
// host side, which a GPU shares; scratch timing of a batched step through 4 layers, E 512): 8
// createBindGroup() calls took 157 µs of a layer's 935.
//
// A bind group holds its buffers, so the cache is bounded (least recently used out first); a
// destroyed buffer is never bound again by the package (its pool makes a new one), so its groups
// only age out. A caller's destroyed GPU input bound again gets the group made before, which the
// submit refuses as it would refuse a new one.

import { keptPerDevice } from './kept_per_device.js';

/** Bind groups kept per device. */
export const BIND_GROUPS_KEPT = 2048;

const ids = new WeakMap();  // GPU object → a number for the key (the object is held by its group)
let nextId = 1;
const idOf = (object) => {
  let id = ids.get(object);
  if (id === undefined) ids.set(object, (id = nextId++));
  return id;
};

const kept = keptPerDevice(BIND_GROUPS_KEPT);

/**
 * A bind group of `layout` (of `pipeline`) for `entries` ([{ binding, resource: { buffer,
 * offset?, size? } }], in binding order): the one made before for the same pipeline, buffers,
 * offsets and sizes, else a new one.
 */
export function bindGroupFor(device, pipeline, layout, entries) {
  let key = String(idOf(pipeline));
  for (const { resource: { buffer, offset = 0, size = -1 } } of entries) key += `|${idOf(buffer)}@${offset}+${size}`;
  return kept.get(device, key, () => device.createBindGroup({ layout, entries }));
}
