// The WASM core's exported C functions (cpp/bindings/exports.cpp, wa_*) as the objects the
// executors call: core.Mha and core.KvCache handles, core.sdpa(), core.kvRingGeometry(),
// core.memoryInUse(), core.threadCount(), core.setThreadLimit(). Attached once per instance by
// instantiateCore(). Methods that can fail return the core's error text
// ("<ErrorClass>|<argument>|<message>", errors.js throwCoreError()) or '' on success.
// A call with many arguments passes one record of doubles, written here by field NAME from the
// list the core gives (argument_wire.h), so neither side depends on the other's field order.
import { MemoryError } from './errors.js';

export const RECORD = { config: 0, forward: 1, sdpa: 2 };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The NUL-terminated UTF-8 text the core returned at `pointer` ('' for 0), which it frees. */
function readText(core, pointer) {
  const address = pointer >>> 0;  // an i32 result: addresses past 2 GiB come back negative
  if (!address) return '';
  const heap = core.HEAPU8;
  // slice(), not subarray(): TextDecoder refuses views of the pthreads module's shared memory.
  const text = decoder.decode(heap.slice(address, heap.indexOf(0, address)));
  core._wa_free_text(address);
  return text;
}

/** The core's field names of record `kind` (RECORD), in the order it reads them. */
export const recordFieldNames = (core, kind) => readText(core, core._wa_record_fields(kind)).split(',');

// Per core: each record's fields as paths into the JS object ('attnMask.shape.0' →
// ['attnMask', 'shape', '0']), read from the core once.
const fieldCache = new WeakMap();
function recordFields(core, kind) {
  let byKind = fieldCache.get(core);
  if (!byKind) fieldCache.set(core, (byKind = new Map()));
  if (!byKind.has(kind)) byKind.set(kind, recordFieldNames(core, kind).map((name) => name.split('.')));
  return byKind.get(kind);
}

function fieldValue(object, path) {
  let v = object;
  for (const key of path) v = v?.[key];
  if (typeof v !== 'number' && typeof v !== 'boolean') {
    throw new TypeError(`webattention: core argument ${path.join('.')}: expected a number or boolean, got ${v}`);
  }
  return Number(v);
}

// The most parts one state-dict entry has (in_proj_weight: Q, K and V; exports.cpp).
const MAX_IN_PLACE_PARTS = 3;

// The most bytes one call's arguments take on the WASM stack: the records are ~25 doubles and
// the strings are names and dtypes the JS side has already checked.
const SCRATCH_MAX_BYTES = 4096;

/**
 * A call's arguments on the WASM stack (a pointer bump, as Emscripten's ccall does, not a
 * malloc and free per call): `record` written as record `kind`'s fields (kind undefined: none),
 * `outDoubles` doubles for the core to fill, and `strings` (NUL-terminated). Returns
 * fn({ record, out, strings }) with their addresses, and always restores the stack.
 */
function withScratch(core, { kind, record, outDoubles = 0, strings = [] }, fn) {
  const fields = kind === undefined ? [] : recordFields(core, kind);
  const encoded = strings.map((s) => encoder.encode(`${s}\0`));
  const doubles = fields.length + outDoubles;
  const bytes = doubles * 8 + encoded.reduce((n, e) => n + e.length, 0);
  if (bytes > SCRATCH_MAX_BYTES) {
    throw new MemoryError(`webattention: a call's arguments take ${bytes} bytes, more than ${SCRATCH_MAX_BYTES}`);
  }
  const top = core.stackSave();
  try {
    const base = core.stackAlloc(bytes) >>> 0;  // 16-aligned: the doubles come first
    const f64 = core.HEAPF64;
    let i = base >>> 3;
    for (const path of fields) f64[i++] = fieldValue(record, path);
    const addresses = [];
    let at = base + doubles * 8;
    for (const e of encoded) {
      core.HEAPU8.set(e, at);
      addresses.push(at);
      at += e.length;
    }
    return fn({ record: base, out: base + fields.length * 8, strings: addresses });
  } finally {
    core.stackRestore(top);
  }
}

/** A C++ object owned by JS: its address until delete(). */
class Handle {
  #address;
  constructor(core, address) {
    this.core = core;
    this.#address = address;
  }
  get address() {
    if (!this.#address) throw new Error('webattention: core object used after delete()');
    return this.#address;
  }
  isDeleted() { return this.#address === 0; }
  release(destroy) {
    destroy(this.address);
    this.#address = 0;
  }
}

class CacheHandle extends Handle {
  constructor(core) { super(core, core._wa_cache_new() >>> 0); }
  length() { return this.core._wa_cache_length(this.address); }
  reset() { this.core._wa_cache_reset(this.address); }
  read(first, count, k, v) { return readText(this.core, this.core._wa_cache_read(this.address, first, count, k, v)); }
  delete() { this.release(this.core._wa_cache_delete); }
}

class MhaHandle extends Handle {
  constructor(core) { super(core, core._wa_mha_new() >>> 0); }

  /** config: module_config.js's coreConfig() (weightsDtype goes as a string of its own). */
  configure(config) {
    return withScratch(this.core, { kind: RECORD.config, record: config, strings: [config.weightsDtype ?? 'float32'] },
      ({ record, strings: [dtype] }) => readText(this.core, this.core._wa_mha_configure(this.address, record, dtype)));
  }

  parameterSpecs() { return readText(this.core, this.core._wa_mha_parameter_specs(this.address)); }

  loadParameter(name, data, count, sourceDtype) {
    return withScratch(this.core, { strings: [name, sourceDtype] }, ({ strings: [n, dtype] }) =>
      readText(this.core, this.core._wa_mha_load_parameter(this.address, n, data, count, dtype)));
  }

  /**
   * An f32 entry written straight into the core's new storage (no staging copy): { parts:
   * [{ address, offset, count }] } (elements [offset, offset + count) of the entry go to byte
   * address `address`; no parts: load it with loadParameter), or { error }.
   */
  beginLoadInPlace(name, count, sourceDtype) {
    return withScratch(this.core, { strings: [name, sourceDtype], outDoubles: 1 + 3 * MAX_IN_PLACE_PARTS }, ({ strings: [n, dtype], out }) => {
      const error = readText(this.core, this.core._wa_mha_begin_load_in_place(this.address, n, count, dtype, out));
      if (error) return { error };
      const values = this.core.HEAPF64.slice(out >>> 3, (out >>> 3) + 1 + 3 * MAX_IN_PLACE_PARTS);
      const parts = [];
      for (let i = 0; i < values[0]; i++) parts.push({ address: values[1 + 3 * i], offset: values[2 + 3 * i], count: values[3 + 3 * i] });
      return { parts };
    });
  }

  finishLoadInPlace() { return readText(this.core, this.core._wa_mha_finish_load_in_place(this.address)); }

  readParameter(name, out, count) {
    return withScratch(this.core, { strings: [name] }, ({ strings: [n] }) =>
      readText(this.core, this.core._wa_mha_read_parameter(this.address, n, out, count)));
  }

  forgetParameters() { this.core._wa_mha_forget_parameters(this.address); }

  setRotaryTable(cos, sin, positions) {
    return readText(this.core, this.core._wa_mha_set_rotary_table(this.address, cos, sin, positions));
  }

  /** { matrix, shape, rank, factoredParameters, fullParameters }, or { error }. */
  headBilinearForm(head) {
    return withScratch(this.core, { outDoubles: 6 }, ({ out: info }) => {
      const error = readText(this.core, this.core._wa_mha_head_bilinear_form(this.address, head, info));
      if (error) return { error };
      const [rows, cols, rank, factoredParameters, fullParameters, matrix] = this.core.HEAPF64.slice(info >>> 3, (info >>> 3) + 6);
      return {
        matrix: this.core.HEAPF32.slice(matrix >>> 2, (matrix >>> 2) + rows * cols),
        shape: [rows, cols], rank, factoredParameters, fullParameters,
      };
    });
  }

  forward(args) {
    return withScratch(this.core, { kind: RECORD.forward, record: args }, ({ record }) =>
      readText(this.core, this.core._wa_mha_forward(this.address, record)));
  }

  forwardHeads(args, headBegin, headEnd) {
    return withScratch(this.core, { kind: RECORD.forward, record: args }, ({ record }) =>
      readText(this.core, this.core._wa_mha_forward_heads(this.address, record, headBegin, headEnd)));
  }

  projectOutput(heads, rows, out) {
    return readText(this.core, this.core._wa_mha_project_output(this.address, heads, rows, out));
  }

  createCache(cache, batch, maxLength, window, dtype) {
    return withScratch(this.core, { strings: [dtype] }, ({ strings: [d] }) =>
      readText(this.core, this.core._wa_mha_create_cache(this.address, cache.address, batch, maxLength, window, d)));
  }

  forwardCached(args, cache) {
    return withScratch(this.core, { kind: RECORD.forward, record: args }, ({ record }) =>
      readText(this.core, this.core._wa_mha_forward_cached(this.address, record, cache.address)));
  }

  delete() { this.release(this.core._wa_mha_delete); }
}

/** Adds the core's objects and functions to the instantiated Emscripten module `core`; returns it. */
export function attachCoreApi(core) {
  core.Mha = class extends MhaHandle { constructor() { super(core); } };
  core.KvCache = class extends CacheHandle { constructor() { super(core); } };
  core.sdpa = (args) => withScratch(core, { kind: RECORD.sdpa, record: args }, ({ record }) =>
    readText(core, core._wa_sdpa(record)));
  core.kvRingGeometry = (maxLength, window) => withScratch(core, { outDoubles: 2 }, ({ out }) => {
    const error = readText(core, core._wa_kv_ring_geometry(maxLength, window, out));
    if (error) return { error };
    const [capacity, rowsPerPass] = core.HEAPF64.slice(out >>> 3, (out >>> 3) + 2);
    return { capacity, rowsPerPass };
  });
  core.memoryInUse = () => core._wa_memory_in_use();
  core.threadCount = () => core._wa_thread_count();
  core.setThreadLimit = (threads) => core._wa_set_thread_limit(threads);
  return core;
}
