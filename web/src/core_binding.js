// The binding's JS side (cpp/bindings/embind.cpp is the other). The executors call Embind's
// objects on the core (KvCache, sdpa, kvRingGeometry, memoryInUse, threadCount, setThreadLimit)
// as they are, and its Mha through CoreMha, which looks the enums up by their JS spelling and
// copies results out of the heap.
// Methods that can fail return the core's error text ("<ErrorClass>|<argument>|<message>",
// errors.js throwCoreError()) or '' on success, as Embind hands it over.
import { OptionError } from './errors.js';

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

/** One core MultiHeadAttention (Embind's Mha), with its arguments in the core's enums. */
export class CoreMha {
  #core;
  #native;

  constructor(core) {
    this.#core = core;
    this.#native = new core.Mha();
  }

  /** config: module_config.js's coreConfig(). */
  configure(config) {
    const { StorageType, RotaryScaling } = this.#core;
    const wire = { ...config, weightsDtype: enumValue(StorageType, config.weightsDtype, 'weightsDtype') };
    // An absent field stays absent, so that Embind's error names it.
    if ('rotaryScaling' in config) wire.rotaryScaling = RotaryScaling.values[config.rotaryScaling];
    return this.#native.configure(wire);
  }

  parameterSpecs() { return this.#native.parameterSpecs(); }

  loadParameter(name, data, count, sourceDtype) {
    return this.#native.loadParameter(name, data, count, enumValue(this.#core.StorageType, sourceDtype, 'sourceDtype'));
  }

  /**
   * An f32 entry written straight into the core's new storage (no staging copy): { parts:
   * [{ address, offset, count }] } (elements [offset, offset + count) of the entry go to byte
   * address `address`; no parts: load it with loadParameter), or { error }.
   */
  beginLoadInPlace(name, count, sourceDtype) {
    const { error, count: n, parts } = this.#native.beginLoadInPlace(name, count,
      enumValue(this.#core.StorageType, sourceDtype, 'sourceDtype'));
    return error ? { error } : { parts: parts.slice(0, n) };
  }

  finishLoadInPlace() { return this.#native.finishLoadInPlace(); }
  readParameter(name, out, count) { return this.#native.readParameter(name, out, count); }
  forgetParameters() { this.#native.forgetParameters(); }
  setRotaryTable(cos, sin, positions) { return this.#native.setRotaryTable(cos, sin, positions); }

  /** { matrix, shape, rank, singularValues, factoredParameters, fullParameters }, or { error }. */
  headBilinearForm(head) {
    const f = this.#native.headBilinearForm(head);
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

  forward(args) { return this.#native.forward(args); }
  forwardHeads(args, headBegin, headEnd) {
    return this.#native.forwardHeads(args, headBegin, headEnd);
  }
  projectOutput(heads, rows, out) { return this.#native.projectOutput(heads, rows, out); }

  /** cache: a core.KvCache. */
  createCache(cache, batch, maxLength, window, dtype) {
    return this.#native.createCache(cache, batch, maxLength, window, enumValue(this.#core.StorageType, dtype, 'dtype'));
  }
  forwardCached(args, cache) { return this.#native.forwardCached(args, cache); }

  isDeleted() { return this.#native.isDeleted(); }
  delete() { this.#native.delete(); }
}

/** A mask's kind as the core's enum (tensor_checks.js's MaskKind numbers are its values). */
export const coreMaskKind = (core, kind) => core.MaskKind.values[kind];
