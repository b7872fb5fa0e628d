// Bind groups kept for reuse. createBindGroup() is the costliest call a dispatch makes on the
// host: Dawn validates every entry against the layout and the buffers. A decode step's layer binds
// the same buffers at every token (its per-call buffers come from the module's pool, its weights
// and cache stay), so most of its dispatches find their bind group made by the step before; only
// those that bind the step's new input or result buffers make one. Measured on SwiftShader (Dawn's
// host side, which a GPU shares): a batched decode layer made 8 groups a call, each 20–33 µs.
//
// A bind group holds its buffers alive, so a kept one may bind only buffers whose lifetime is
// the package's: a module's (its weights, its pooled per-call buffers) or a cache's (its storage),
// kept under that cache when the call has one, else under the module (a collected cache or module
// takes its groups with it), at most BIND_GROUPS_KEPT each. A group that binds a caller's buffer
// (a GPU input bound as it is, a 'gpu-buffer' result) is made for the call and not kept, so that
// dropping such a buffer still frees it. A destroyed buffer is never bound again by the package
// (its pool makes a new one), so its groups only age out.
import { idOf, keptPer } from './kept_values.js';

/** Bind groups kept per owner (a module's calls without a cache, or one cache's calls). */
export const BIND_GROUPS_KEPT = 256;

const kept = keptPer(BIND_GROUPS_KEPT);

/**
 * A bind group of `layout` (of `pipeline`) for `entries` ([{ binding, resource: { buffer,
 * offset?, size? } }], in binding order) on `device`: the one kept under `owner` for the same
 * pipeline, buffers, offsets and sizes, else a new one, kept there unless it binds one of
 * `callers` (a Set of the caller's buffers).
 */
export function bindGroupFor(device, owner, callers, pipeline, layout, entries) {
  const make = () => device.createBindGroup({ layout, entries });
  if (entries.some(({ resource }) => callers.has(resource.buffer))) return make();
  let key = String(idOf(pipeline));
  for (const { resource: { buffer, offset = 0, size = -1 } } of entries) key += `|${idOf(buffer)}@${offset}+${size}`;
  return kept.get(owner, key, make);
}
