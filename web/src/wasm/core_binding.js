// The binding's JS side (cpp/bindings/embind.cpp is the other). The executors call the core's
// Mha through CoreMha, which looks the enums up by their JS spelling and copies results out of
// the heap, and the rest through the functions below. embind.cpp registers at load only what a
// first create(), load and forward call; requireGroup() registers each other group (sdpa, cache,
// inspection, heads) the first time it is needed.
// Methods that can fail return the core's error text ("<ErrorClass>|<argument>|<message>",
// errors.js throwCoreError()) or '' on success, as Embind hands it over.
import { MemoryError, OptionError } from '../base/errors.js';

/**
 * The most bytes a WASM heap holds: the modules are wasm32 with MAXIMUM_MEMORY=4GB
 * (CMakeLists.txt). Every request is checked against it in exact JS arithmetic before it reaches
 * the core, whose sizes would wrap at 2^32.
 */
export const WASM_MAX_BYTES = 2 ** 32;

// The most parts one state-dict entry has (in_proj_weight's Q, K and V): binding_objects.h.
const IN_PLACE_DOUBLES = 1 + 3 * 3;

/** The value of Embind enum `type` named `name` (a JS spelling: 'float16', …), else an OptionError. */
function enumValue(type, name, argument) {
  const value = Object.hasOwn(type, name) ? type[name] : undefined;
  if (!(value instanceof type)) {
    const names = Object.keys(type).filter((k) => type[k] instanceof type);
    throw new OptionError(`${argument}: expected one of ${names.join(', ')}, got ${String(name)}`,
      { argument, expected: names.join(' | '), actual: String(name) });
  }
  return value;
}

// Each group (embind.cpp's register_group() knows them by these names) with the name it
// registers first (present once the group is).
const GROUPS = {
  sdpa: 'sdpa',
  cache: 'KvCache',
  inspection: 'mhaReadParameter',
  heads: 'mhaForwardHeads',
  quantised: 'mhaLoadQuantised',
};

/** `core` with binding group `name` registered (embind.cpp). */
export function requireGroup(core, name) {
  if (!core[GROUPS[name]] && core.registerGroup(name) !== 0) throw new Error(`no binding group ${name}`);
  return core;
}

// A call's arguments go to the core as positional numbers (cpp/bindings/binding_objects.h says
// why): coreSdpa() and CoreMha's #setCall() are the one place JS names them, in the core's order,
// each field written out (no array and spread per call: this is every call's path). A mask is
// { kind (tensor_checks.js's MaskKind), address, rank, shape0, shape1, shape2 }.
const maskKind = (core, m) => core.MaskKind.values[m.kind];

/**
 * A failing core call returns 1 and leaves its error text for takeError() (binding_objects.h):
 * the text ('' for 0), as the executors take it (errors.js throwCoreError()).
 */
const errorText = (core, status) => (status ? core.takeError() : '');

/** args: { N, L, S, dk, dv, q, k, v, attnMask, isCausal, hasScale, scale, output, weights }. */
export const coreSdpa = (core, a) => errorText(core, requireGroup(core, 'sdpa').sdpa(a.N, a.L, a.S, a.dk, a.dv,
  a.q, a.k, a.v, maskKind(core, a.attnMask), a.attnMask.address, a.attnMask.rank, a.attnMask.shape0, a.attnMask.shape1,
  a.attnMask.shape2, a.isCausal, a.hasScale, a.scale, a.output, a.weights));

/** One core KvCache (Embind's), empty until a CoreMha's createCache() or fork() gives it storage. */
class CoreCache {
  #core;

  constructor(core) {
    this.#core = core;
    this.native = new (requireGroup(core, 'cache').KvCache)();
  }

  length() { return this.native.length(); }
  /** Row b's positions (a batched cache keeps one length per row). */
  rowLength(b) { return this.native.rowLength(b); }
  reset() { this.native.reset(); }
  read(first, count, k, v) { return errorText(this.#core, this.native.read(first, count, k, v)); }
  truncate(length) { return errorText(this.#core, this.native.truncate(length)); }
  /** truncate(lengths): one float64 per row at `lengths` (the heap). */
  truncateRows(lengths) { return errorText(this.#core, this.native.truncateRows(lengths)); }
  /** Fills `target` (a new CoreCache) with a copy of this one. */
  fork(target) { return errorText(this.#core, this.native.fork(target.native)); }
  isDeleted() { return this.native.isDeleted(); }
  delete() { this.native.delete(); }
}

/** A new, empty core KvCache (a Mha's createCache() gives it storage). */
export const newCoreCache = (core) => new CoreCache(core);

/** The KV cache's ring geometry as the core computes it: { capacity, rowsPerPass } or { error }. */
export const coreRingGeometry = (core, maxLength, window) => requireGroup(core, 'cache').kvRingGeometry(maxLength, window);

/** One core MultiHeadAttention (Embind's Mha), with its arguments in the core's enums. */
export class CoreMha {
  #core;
  #native;
  #inPlaceParts;  // heap doubles beginLoadInPlace() writes: [count, (address, offset, count) × 3]

  constructor(core) {
    this.#core = core;
    this.#native = new core.Mha();
    this.#inPlaceParts = core._malloc(IN_PLACE_DOUBLES * 8) >>> 0;  // unsigned: the heap may pass 2 GiB
    if (!this.#inPlaceParts) {
      this.#native.delete();
      throw new MemoryError(`out of WASM memory: a module needs ${IN_PLACE_DOUBLES * 8} bytes`);
    }
  }

  /** config: module_config.js's coreConfig(). */
  configure(config) {
    const { StorageType, RotaryScaling } = this.#core;
    const wire = {
      ...config,
      weightsDtype: enumValue(StorageType, config.weightsDtype, 'weightsDtype'),
      activations: enumValue(StorageType, config.activations, 'activations'),
    };
    // An absent field stays absent, so that Embind's error names it.
    if ('rotaryScaling' in config) wire.rotaryScaling = RotaryScaling.values[config.rotaryScaling];
    return errorText(this.#core, this.#native.configure(wire));
  }

  parameterSpecs() { return this.#native.parameterSpecs(); }

  loadParameter(name, data, count, sourceDtype) {
    return errorText(this.#core, this.#native.loadParameter(name, data, count, enumValue(this.#core.StorageType, sourceDtype, 'sourceDtype')));
  }

  /** A quantised entry (heap addresses of its codes, scales and zero points, 0 for none) taken as stored. */
  loadQuantised(name, codes, scales, zeroPoints, count, dtype) {
    const core = requireGroup(this.#core, 'quantised');
    return errorText(core, core.mhaLoadQuantised(this.#native, name, codes, scales, zeroPoints, count,
      enumValue(core.StorageType, dtype, 'dtype')));
  }

  /**
   * An f32 entry written straight into the core's new storage (no staging copy): { parts:
   * [{ address, offset, count }] } (elements [offset, offset + count) of the entry go to byte
   * address `address`; no parts: load it with loadParameter), or { error }.
   */
  beginLoadInPlace(name, count, sourceDtype) {
    const source = enumValue(this.#core.StorageType, sourceDtype, 'sourceDtype');
    const error = errorText(this.#core, this.#native.beginLoadInPlace(name, count, source, this.#inPlaceParts));
    if (error) return { error };
    const at = this.#inPlaceParts >>> 3;
    const v = this.#core.HEAPF64;  // read after the call: the core's new storage may have grown the memory
    return { parts: Array.from({ length: v[at] }, (_, i) => ({ address: v[at + 1 + 3 * i], offset: v[at + 2 + 3 * i], count: v[at + 3 + 3 * i] })) };
  }

  finishLoadInPlace() { return errorText(this.#core, this.#native.finishLoadInPlace()); }
  forgetParameters() { this.#native.forgetParameters(); }

  readParameter(name, out, count) {
    return errorText(this.#core, requireGroup(this.#core, 'inspection').mhaReadParameter(this.#native, name, out, count));
  }

  /** encode(): `target` (a new CoreCache) holds key and value (heap addresses) projected, read-only. */
  encode(target, key, value, batch, S, dtype) {
    const core = requireGroup(this.#core, 'cache');
    return errorText(core, core.mhaEncode(this.#native, target.native, key, value, batch, S, enumValue(core.StorageType, dtype, 'dtype')));
  }

  /** RoPE's θ_j as the core computed them (a Float64Array of rotaryDim / 2; rotary.cpp). */
  rotaryThetas(count) {
    const core = requireGroup(this.#core, 'inspection');
    const at = core._malloc(Math.max(1, count) * 8) >>> 0;
    if (!at) throw new MemoryError(`out of WASM memory: ${count * 8} bytes`);
    try {
      const n = core.mhaRotaryThetas(this.#native, at);
      return core.HEAPF64.slice(at >>> 3, (at >>> 3) + n);
    } finally {
      core._free(at);
    }
  }

  setRotaryTable(cos, sin, positions) {
    return errorText(this.#core, requireGroup(this.#core, 'heads').mhaSetRotaryTable(this.#native, cos, sin, positions));
  }

  /** { matrix, shape, rank, singularValues, factoredParameters, fullParameters }, or { error }. */
  headBilinearForm(head) {
    const f = requireGroup(this.#core, 'inspection').mhaHeadBilinearForm(this.#native, head);
    if (f.error) return { error: f.error };
    const core = this.#core;
    return {
      matrix: core.HEAPF32.slice(f.matrix >>> 2, (f.matrix >>> 2) + f.rows * f.cols),
      shape: [f.rows, f.cols],
      rank: f.rank,
      singularValues: core.HEAPF64.slice(f.singularValues >>> 3, (f.singularValues >>> 3) + f.singularValueCount),
      factoredParameters: f.factoredParameters,
      fullParameters: f.fullParameters,
    };
  }

  /**
   * args: { batch, L, S, query, key, value, keyPaddingMask, attnMask, isCausal, output, weights,
   * averageWeights, positionIds } (addresses and numbers).
   */
  #setCall(a) {
    const core = this.#core;
    const { keyPaddingMask: p, attnMask: m } = a;
    this.#native.setCall(a.batch, a.L, a.S, a.query, a.key, a.value,
      maskKind(core, p), p.address, p.rank, p.shape0, p.shape1, p.shape2,
      maskKind(core, m), m.address, m.rank, m.shape0, m.shape1, m.shape2,
      a.isCausal, a.output, a.weights, a.averageWeights, a.positionIds);
  }

  forward(args) {
    this.#setCall(args);
    return errorText(this.#core, this.#native.forward());
  }

  forwardHeads(args, headBegin, headEnd) {
    this.#setCall(args);
    return errorText(this.#core, requireGroup(this.#core, 'heads').mhaForwardHeads(this.#native, headBegin, headEnd));
  }

  projectOutput(heads, rows, out) {
    return errorText(this.#core, requireGroup(this.#core, 'heads').mhaProjectOutput(this.#native, heads, rows, out));
  }

  /** cache: from newCoreCache(). */
  createCache(cache, batch, maxLength, window, dtype) {
    const storage = enumValue(this.#core.StorageType, dtype, 'dtype');
    return errorText(this.#core, requireGroup(this.#core, 'cache').mhaCreateCache(this.#native, cache.native, batch, maxLength,
      window, storage));
  }

  /** args.rows: the cache rows the call appends to (an address of int32s), or 0 for every row. */
  forwardCached(args, cache) {
    this.#setCall(args);
    const group = requireGroup(this.#core, 'cache');
    return errorText(this.#core, args.rows ? group.mhaForwardCachedRows(this.#native, cache.native, args.rows)
      : group.mhaForwardCached(this.#native, cache.native));
  }

  /** cache.keep(): `count` int32 indices at `indices` (the heap) among the last call's positions. */
  keepCached(cache, indices, count) {
    return errorText(this.#core, requireGroup(this.#core, 'cache').mhaKeepCached(this.#native, cache.native, indices, count));
  }

  isDeleted() { return this.#native.isDeleted(); }
  delete() {
    this.#native.delete();
    this.#core._free(this.#inPlaceParts);
  }
}

