// A call's way through the WASM heap, for the executors (wasm_executor.js, wasm_sdpa.js): one
// aligned block per call holding its inputs and outputs, freed on every path (so a failing call
// leaks nothing), and the results read back.
import { WASM_MAX_BYTES } from './core_binding.js';
import { MemoryError } from '../base/errors.js';
import { requireOutWhole, writeOut } from '../base/output_target.js';

const F32 = 4;

/** Test seam: malloc(core, bytes) in place of core._malloc (a 0 from it is an out-of-memory). */
export const heapHooks = { malloc: null };

// "64 + 4294967296": the byte sizes a call's block is made of, for the error message.
const describeParts = (sizes) => sizes.filter((b) => b > 0).join(' + ');

/**
 * Reserves one aligned block for `parts` ({ data } to copy in, or { floats } to reserve), calls
 * `body(addresses)` and always frees the block. Views are taken after malloc, since heap growth
 * detaches earlier ones.
 */
export function withHeap(core, parts, body) {
  // The same typed array passed twice (self-attention: query === key === value) is copied once,
  // and the core sees equal addresses, which lets it fuse the Q, K and V projections.
  const first = parts.map((p, i) => (p.data ? parts.findIndex((o) => o.data === p.data) : i));
  const sizes = parts.map((p, i) => {
    if (first[i] !== i) return 0;
    const bytes = p.data ? p.data.byteLength : (p.floats ?? 0) * F32;
    return Math.ceil(bytes / 16) * 16;
  });
  const total = sizes.reduce((a, b) => a + b, 0);
  // _malloc takes a 32-bit size: a request at or past 4 GiB would wrap to a small block that the
  // copies below would then overrun.
  if (total >= WASM_MAX_BYTES) {
    throw new MemoryError(`out of WASM memory: a call needs ${total} bytes (${describeParts(sizes)}), `
      + `more than a WASM heap holds (${WASM_MAX_BYTES})`, { argument: 'inputs', expected: `< ${WASM_MAX_BYTES} bytes`, actual: total });
  }
  const bytes = Math.max(total, 16);
  // >>> 0: _malloc returns an i32, negative for an address at or past 2 GiB (the heap may grow to 4).
  const base = (heapHooks.malloc ? heapHooks.malloc(core, bytes) : core._malloc(bytes)) >>> 0;
  if (!base) throw new MemoryError(`out of WASM memory: a call needs ${total} bytes`);
  try {
    const addresses = [];
    let offset = base;
    parts.forEach((p, i) => {
      if (first[i] !== i) {
        addresses.push(addresses[first[i]]);
        return;
      }
      addresses.push(p.data || p.floats ? offset : 0);
      if (p.data) core.HEAPU8.set(new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength), offset);
      offset += sizes[i];
    });
    return body(addresses);
  } finally {
    core._free(base);
  }
}

// slice() straight off HEAPF32: no intermediate view to allocate on every call.
export const readFloats = (core, address, count) => core.HEAPF32.slice(address >>> 2, (address >>> 2) + count);

// A float32 call's output: into the caller's `out` (base/output_target.js) when it gave one, else
// a new array. (A 16-bit call's `out` is written by api.js, after the rounding.)
export const readOutput = (core, address, count, target) => (target
  ? writeOut(target, core.HEAPF32.subarray(address >>> 2, (address >>> 2) + count))
  : readFloats(core, address, count));

// The `out` a float32 call writes on this thread, null for none or for a 16-bit call; checked
// before the core runs, so that an `out` detached while the call waited fails with the call
// undone (a cache not appended to).
export function outTarget(plan) {
  if (!plan.out || plan.dtype !== 'float32') return null;
  requireOutWhole(plan.out);
  return plan.out;
}

// A plan's mask as core_binding.js takes it: its kind, where its data was copied, its rank and its
// shape padded to three dims.
export function maskArgs(mask, address) {
  const [d0 = 0, d1 = 0, d2 = 0] = mask.shape;
  return { kind: mask.kind, address, rank: mask.shape.length, shape0: d0, shape1: d1, shape2: d2 };
}
