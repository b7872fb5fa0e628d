// A state dict checked against the entries a module expects (resolveStateDict), and
// loadStateDict()'s options: a module's weights taken out of a bigger model's state dict
// (`prefix`, `strict`), and BERT-style separate q/k/v weights where the module packs them. The
// state dict is mapped onto the names the module expects, then resolveStateDict() checks every
// entry. The expected names carry the prefix through those checks, so every message names the key
// as the caller gave it ('layers.0.self_attn.in_proj_weight').
import { HALF_DTYPES } from './storage_types.js';
import { ENTRY } from './state_dict_entries.js';
import { LAYOUTS, otherLayoutHint } from './checkpoint_layouts.js';
import { DTypeError, OptionError, StateDictError, WebAttentionError, describe, formatShape } from '../base/errors.js';
import { asFloat32, firstNonFinite, widenHalf } from './half_floats.js';
import { checkBoolean, checkOptions } from '../base/option_checks.js';
import { FLOAT_DATA, HALF_DTYPE_NAMES, checkTensor, product, tensorDtype } from '../base/tensor_checks.js';
import { borrowed, isDetached, stillWhole, typedArrayType } from '../base/typed_arrays.js';
import { copyEntry, isQuantisedEntry, isQuantisedTensor } from './quantised_entries.js';
import { lazyModules } from '../base/lazy_modules.js';


const OPTIONS = ['prefix', 'strict', 'layout'];
const PACKED = ENTRY.inProjWeight;
const SEPARATE = [ENTRY.qProjWeight, ENTRY.kProjWeight, ENTRY.vProjWeight];

/** { prefix? = '', strict? = true, layout? = 'torch' }, checked. */
function resolveOptions(options) {
  const o = checkOptions('loadStateDict', options, OPTIONS);
  if (o.prefix !== undefined && typeof o.prefix !== 'string') {
    throw new OptionError(`prefix: expected a string such as 'layers.0.self_attn.', got ${describe(o.prefix)}`, {
      argument: 'prefix', expected: 'string', actual: describe(o.prefix),
    });
  }
  const layout = o.layout ?? 'torch';
  if (!LAYOUTS.includes(layout)) {
    throw new OptionError(`layout: expected one of ${LAYOUTS.map((l) => `'${l}'`).join(', ')}, got ${describe(layout)}`, {
      argument: 'layout', expected: LAYOUTS, actual: describe(layout),
    });
  }
  return { prefix: o.prefix ?? '', strict: checkBoolean('strict', o.strict, true), layout };
}

/** A state dict (an object or a Map of tensors) as a Map. */
function stateDictEntries(stateDict) {
  if (stateDict === null || typeof stateDict !== 'object' || ArrayBuffer.isView(stateDict)) {
    throw new StateDictError(`stateDict: expected an object or Map of tensors, got ${describe(stateDict)}`, {
      argument: 'stateDict', expected: 'object', actual: describe(stateDict),
    });
  }
  if (!(stateDict instanceof Map)) return new Map(Object.entries(stateDict));
  // An object's keys are strings; a Map's may be anything, and names are compared as strings.
  for (const key of stateDict.keys()) {
    if (typeof key !== 'string') {
      throw new StateDictError(`stateDict: expected string keys, got the key ${describe(key)}`, {
        argument: 'stateDict', expected: 'string keys', actual: describe(key),
      });
    }
  }
  return stateDict;
}

/**
 * Checks a state dict against the module's expected entries ([{ name, shape }]) and returns
 * [{ name, data, dtype }] in that order: data a Float32Array (dtype 'float32') or a 16-bit
 * tensor's Uint16Array of bits (dtype 'float16' | 'bfloat16'), the caller's memory where only its
 * own code could change it (typed_arrays.js borrowed(); else a copy), looked at again once every
 * getter ran, so every check (int8's and int4's finite scan too) sees what is loaded, as long as the load
 * reads it before the caller's code runs again: whoever keeps entries for later copies them
 * (copyEntries()). Nothing is
 * loaded unless every entry is right. weightsDtype: the module's, against which a 16-bit weight
 * matrix of the other 16-bit kind is a DTypeError (re-rounding it would change its values
 * silently: F16 overflows past 65504, BF16 keeps 8 significant bits), and a non-finite value in an
 * int8 or int4 weight matrix a StateDictError (refuseNonFiniteQuantised); vectors (biases, sinks,
 * norm weights) are float32 in every module, so any dtype widens into them exactly. scanned: names
 * of such weight matrices already checked finite (in_proj_weight stacked from checked q/k/v
 * weights). A spec's `transposed`: the caller's tensor is [in, out] (GPT-2's Conv1D).
 */
export function resolveStateDict(specs, stateDict, weightsDtype = 'float32', scanned = []) {
  const entries = stateDictEntries(stateDict);
  const expectedNames = specs.map((s) => s.name);
  for (const name of entries.keys()) {
    if (!expectedNames.includes(name)) {
      // A key that ends with an expected name after a '.' is most likely a whole model's: say which
      // prefix would load it.
      const known = expectedNames.find((expected) => name.endsWith(`.${expected}`));
      const hint = known ? ` (a model's key? loadStateDict(sd, { prefix: '${name.slice(0, -known.length)}' }) takes its part)` : '';
      throw new StateDictError(
        `stateDict: unexpected key '${name}'${hint}; expected keys: ${expectedNames.join(', ')}`,
        { argument: name, expected: expectedNames, actual: name });
    }
  }
  const resolved = specs.map(({ name, shape }) => checkedEntry(name, shape, entries, weightsDtype));
  // Every getter has run: what each entry holds now is what is loaded (no caller code runs until
  // the load has read it), so the finite scan and a last look at each borrowed view come here.
  specs.forEach(({ name, shape }, i) => {
    const entry = resolved[i];
    if (!stillWhole(entry.data, product(shape))) {
      throw new StateDictError(`stateDict['${name}']: its ArrayBuffer was detached (transferred) while the state dict `
        + 'was read, by a later entry\'s getter', { argument: name, expected: shape, actual: 'detached' });
    }
    if (QUANTISED.includes(weightsDtype) && shape.length === 2 && !scanned.includes(name) && !isQuantisedEntry(entry)) {
      refuseNonFiniteQuantised(entry, shape, weightsDtype, specs[i].transposed);
    }
  });
  return resolved;
}

/** Entries of resolveStateDict() with copies of their data, for a load that happens later. */
export const copyEntries = (entries) => entries.map(copyEntry);

/** One entry of resolveStateDict(): { name, data, dtype }, its key, shape and dtype checked. */
function checkedEntry(name, shape, entries, weightsDtype) {
  if (!entries.has(name)) {
    throw new StateDictError(`stateDict: missing key '${name}' (expected shape ${formatShape(shape)})`, {
      argument: name, expected: shape, actual: 'missing',
    });
  }
  const value = entries.get(name);
  // Blocks quantised already (GGUF, ORT MatMulNBits): taken as stored, copied into one form.
  if (isQuantisedTensor(value)) return { name, ...lazyModules().quantisedEntry(name, value, shape, weightsDtype) };
  if (isQuantisedEntry(value)) return { name, ...value };  // stacked here from checked entries (packSeparateWeights)
  if (typedArrayType(value) === 'Float32Array') {
    // Borrowed (typed_arrays.js): a load reads it before returning; resolveStateDict() looks again
    // once every getter ran.
    const data = borrowed(value);
    if (data.length !== product(shape)) {
      const got = isDetached(value) ? 'a detached Float32Array (its ArrayBuffer was transferred)' : `Float32Array(${data.length})`;
      throw new StateDictError(
        `stateDict['${name}']: expected ${formatShape(shape)} (${product(shape)} values), got ${got}`,
        { argument: name, expected: shape, actual: isDetached(value) ? 'detached' : data.length });
    }
    return { name, data, dtype: 'float32' };
  }
  if (typedArrayType(value) === 'Uint16Array') {
    throw new DTypeError(`stateDict['${name}']: a bare Uint16Array does not say which 16-bit floats it holds; `
      + `expected { data, shape, dtype: 'float16' | 'bfloat16' }, got ${describe(value)}`, {
      argument: `stateDict['${name}']`, expected: '{ data, shape, dtype }', actual: describe(value),
    });
  }
  let t;
  try {
    t = checkTensor(`stateDict['${name}']`, value, { dtypes: FLOAT_DATA, borrow: true });
  } catch (e) {
    // A getter's own error (whatever it throws, null included) passes through unwrapped, as the
    // README says; a 16-bit tensor without its dtype is a DTypeError wherever it is given.
    if (!(e instanceof WebAttentionError) || e.expected === HALF_DTYPE_NAMES) throw e;
    throw new StateDictError(e.message, { argument: name, expected: shape, actual: e.actual });
  }
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new StateDictError(
      `stateDict['${name}']: expected shape ${formatShape(shape)}, got ${formatShape(t.shape)}`,
      { argument: name, expected: shape, actual: t.shape });
  }
  const dtype = tensorDtype(t);
  if (HALF_DTYPES.includes(dtype) && HALF_DTYPES.includes(weightsDtype) && dtype !== weightsDtype && shape.length === 2) {
    throw new DTypeError(`stateDict['${name}']: the module stores ${weightsDtype} weights (create({ weightsDtype })), got ${dtype}; `
      + `a ${dtype} weight is not rounded to ${weightsDtype} silently (widen it to a Float32Array to have it rounded)`, {
      argument: `stateDict['${name}']`, expected: weightsDtype, actual: dtype,
    });
  }
  return { name, data: t.data, dtype };
}

/** The weights dtypes quantised in blocks of 32 along a weight's input dimension. */
const QUANTISED = ['int8', 'int4'];

/**
 * int8 and int4 storage quantise blocks of 32 values of a row by their largest magnitude, which a
 * NaN or an infinity makes meaningless (docs/attention-math/storage.md §11): refused here, for every entry
 * before any backend loads one, so that a refused state dict leaves the module's weights as they
 * were (the C++ core refuses them too, for C++ callers, but one entry at a time). The index is in
 * the tensor as the caller gave it; the row and block in the module's [out, in] weight, where a
 * transposed tensor (GPT-2's Conv1D, [in, out]) has them the other way round.
 */
function refuseNonFiniteQuantised({ name, data, dtype }, shape, weightsDtype, transposed = false) {
  const i = firstNonFinite(data, dtype);
  if (i < 0) return;
  const value = asFloat32(data.subarray(i, i + 1), dtype)[0];  // the one value the message names
  const at = [Math.floor(i / shape[1]), i % shape[1]];
  const [row, col] = transposed ? [at[1], at[0]] : at;
  const block = Math.floor(col / 32);
  throw new StateDictError(`stateDict['${name}']: ${weightsDtype} weights (create({ weightsDtype: '${weightsDtype}' })) must be finite, `
    + `got ${value} at [${at.join(', ')}] (block ${block} of row ${row})`,
  { argument: name, expected: 'finite values', actual: { index: at, value, row, block } });
}

/**
 * Where the module packs W_Q, W_K, W_V into in_proj_weight [3E, E] (every width equals E), the
 * three separate [E, E] weights are stacked into it, as PyTorch's in_proj_weight stacks them.
 * Returns the entries with them replaced (each checked as an entry of its own, an int8 module's
 * non-finite values included, under its own name), or null when none is given.
 */
function packSeparateWeights(entries, prefix, packedShape, weightsDtype) {
  const names = SEPARATE.map((name) => prefix + name);
  const given = names.filter((name) => entries.has(name));
  if (given.length === 0) return null;
  if (entries.has(prefix + PACKED)) {
    throw new StateDictError(
      `stateDict: both '${prefix}${PACKED}' and '${given[0]}' given; expected ${PACKED} ${formatShape(packedShape)} `
      + `or ${SEPARATE.join(', ')}, not both`,
      { argument: given[0], expected: `${PACKED} or ${SEPARATE.join(', ')}`, actual: [prefix + PACKED, ...given] });
  }
  const E = packedShape[1];
  // Each is checked as an entry of its own ([E, E], float32 or 16-bit), missing ones included.
  const parts = resolveStateDict(names.map((name) => ({ name, shape: [E, E] })),
    new Map(given.map((name) => [name, entries.get(name)])), weightsDtype);
  const quantised = parts.filter(isQuantisedEntry);
  if (quantised.length > 0) {
    if (quantised.length < parts.length || quantised.some((p) => p.dtype !== quantised[0].dtype)) {
      const odd = parts.find((p) => !isQuantisedEntry(p) || p.dtype !== quantised[0].dtype);
      throw new StateDictError(`stateDict: '${odd.name}' is ${odd.dtype}, '${quantised[0].name}' ${quantised[0].dtype} blocks; `
        + `stacked into ${PACKED} they must be of one kind`, { argument: odd.name, expected: quantised[0].dtype, actual: odd.dtype });
    }
    const rest = new Map([...entries].filter(([name]) => !names.includes(name)));
    return rest.set(prefix + PACKED, lazyModules().stackQuantised(parts));
  }
  // Stacked in their own dtype when they share one; else widened to float32 (exactly) first.
  const dtype = parts.every((p) => p.dtype === parts[0].dtype) ? parts[0].dtype : 'float32';
  const packed = dtype === 'float32' ? new Float32Array(3 * E * E) : new Uint16Array(3 * E * E);
  parts.forEach((p, i) => packed.set(p.dtype === dtype ? p.data : widenHalf(p.dtype, p.data), i * E * E));
  const rest = new Map([...entries].filter(([name]) => !names.includes(name)));
  return rest.set(prefix + PACKED, dtype === 'float32' ? { data: packed, shape: [...packedShape] } : { data: packed, shape: [...packedShape], dtype });
}

/**
 * loadStateDict(stateDict, options) for a module expecting `specs` ([{ name, shape }]) that
 * stores `weightsDtype` weights: returns [{ name, data, dtype }] in specs' order, as
 * resolveStateDict() does. `prefix` selects
 * the keys that start with it and strips it; `strict: false` ignores keys that are not the
 * module's. Missing keys are errors either way: the module has no weights of its own to keep.
 * `layout` other than 'torch': the keys are another checkpoint's naming (checkpoint_layouts.js).
 */
export function resolveModuleStateDict(specs, stateDict, options, weightsDtype = 'float32') {
  const resolved = resolveOptions(options);
  return refuseInfiniteSink(resolveEntries(specs, stateDict, resolved, weightsDtype), resolved.prefix);
}

/**
 * A loaded state dict's entries ([{ name, data, dtype }], resolveModuleStateDict()'s) with
 * `offset` added to the qk-norm weights: Gemma 3 stores them as w − 1 (its RMSNorm scales by
 * 1 + w), and a fromConfig() module computes with 1 + w as the model does. New arrays: the data
 * may be the caller's own memory.
 */
export function offsetQkNorm(entries, offset) {
  if (!offset) return entries;
  return entries.map((e) => (e.name === ENTRY.qNormWeight || e.name === ENTRY.kNormWeight
    ? { ...e, data: asFloat32(e.data, e.dtype).map((w) => w + offset), dtype: 'float32' } : e));
}

/**
 * A +Inf sink would take all of its head's softmax mass, but every backend's running max would
 * compute Inf − Inf = NaN: refused here, before any backend loads anything, so the module keeps
 * its weights (the C++ core refuses it too, for C++ callers). NaN stays a NaN input (NaN rows);
 * −Inf is no sink (docs/attention-math/scores.md §10).
 */
function refuseInfiniteSink(entries, prefix) {
  const sinks = entries.find((e) => e.name === ENTRY.sinks);
  const head = sinks ? asFloat32(sinks.data, sinks.dtype).indexOf(Infinity) : -1;
  if (head >= 0) {
    throw new StateDictError(`stateDict['${prefix}sinks']: expected logits below +Infinity (-Infinity: no sink), got Infinity at [${head}]`, {
      argument: `${prefix}sinks`, expected: 'logits < +Infinity', actual: { index: head, value: Infinity },
    });
  }
  return entries;
}

/** resolveModuleStateDict() with its options resolved. */
function resolveEntries(specs, stateDict, resolved, weightsDtype) {
  const { prefix, strict, layout } = resolved;
  let entries = stateDictEntries(stateDict);
  if (layout !== 'torch') {
    // Another checkpoint's naming is rearranged (transposed, split) into float32 arrays: a 16-bit
    // entry is widened exactly first, and the core rounds it back to the module's type unchanged.
    // Quantised blocks stay quantised entries (split and stacked by rows); transposed they would
    // not be blocks along the module's rows.
    const checkEntry = (name, shape, value, transposed) => {
      if (transposed && isQuantisedTensor(value)) {
        throw new StateDictError(`stateDict['${name}']: ${value.dtype} blocks run along a Conv1D weight's [in, out] rows, not the module's; `
          + 'dequantise it first', { argument: name, expected: 'float tensor', actual: value.dtype });
      }
      const entry = resolveStateDict([{ name, shape, transposed }], new Map([[name, value]]), weightsDtype)[0];
      return isQuantisedEntry(entry) ? entry : asFloat32(entry.data, entry.dtype);
    };
    return lazyModules().resolveLayout(specs, entries, resolved, checkEntry).map((e) => (isQuantisedEntry(e) ? e : { ...e, dtype: 'float32' }));
  }
  const packed = specs.find((s) => s.name === PACKED);
  const stacked = packed && packSeparateWeights(entries, prefix, packed.shape, weightsDtype);
  if (stacked) entries = stacked;
  const expected = specs.map(({ name, shape }) => ({ name: prefix + name, shape }));
  const foreign = [...entries.keys()].find((name) => name.startsWith(prefix) && otherLayoutHint(name.slice(prefix.length), 'torch'));
  if (strict && foreign && !expected.some((s) => s.name === foreign)) {
    throw new StateDictError(`stateDict: unexpected key '${foreign}'${otherLayoutHint(foreign.slice(prefix.length), 'torch')}; `
      + `expected keys: ${expected.map((s) => s.name).join(', ')}`, { argument: foreign, expected: expected.map((s) => s.name), actual: foreign });
  }
  if (!strict) {
    const names = new Set(expected.map((s) => s.name));
    entries = new Map([...entries].filter(([name]) => names.has(name)));
  }
  // A stacked in_proj_weight's values were scanned as the q/k/v weights: not scanned twice.
  return resolveStateDict(expected, entries, weightsDtype, stacked ? [prefix + PACKED] : [])
    .map((e) => ({ ...e, name: e.name.slice(prefix.length) }));
}
