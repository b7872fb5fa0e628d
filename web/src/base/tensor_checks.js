// Tensor checks shared by every plan and the state dict: a caller's { data, shape } (or
// { data, dims, type }) tensor checked and copied (its data read once), 16-bit tensors' dtypes,
// masks, and the ShapeError of a tensor of the wrong shape.
import { MaskKind } from './call_plan.js';
import { isDeviceData } from './gpu_tensors.js';
import { DTypeError, ShapeError, describe, formatShape } from './errors.js';
import { borrowed, isDetached, snapshot, stillWhole, typedArrayType } from './typed_arrays.js';

/** Elements of a tensor of `shape`. */
export const product = (shape) => shape.reduce((a, b) => a * b, 1);

/**
 * The most dimensions a tensor's shape may have (every tensor of this API has at most 4). Checked
 * before any entry is read, so that a sparse array of 2^31 entries is refused in O(1).
 */
const MAX_RANK = 8;

// What a tensor's optional dtype (`dtype`, or `type` as onnxruntime-web and transformers.js
// tensors say it; 'bool' is their boolean mask) may say for each data type but 16-bit floats
// (HALF_KINDS below). loadSafetensors() tags float32 data with its file's dtype, 'F16' and 'BF16'
// included (widened exactly): those say where the values came from, so they stay float32 here;
// the API's 'float16' / 'bfloat16' on float32 data is a DTypeError, never ignored.
const TYPE_NAMES = { Float32Array: ['float32', 'F32', 'F16', 'BF16'], Uint8Array: ['bool', 'uint8'], Int32Array: ['int32'] };

/** Element types of a float tensor: float32 values, or 16-bit ones whose dtype says which kind. */
export const FLOAT_DATA = ['Float32Array', 'Uint16Array'];

// A 16-bit tensor's dtype (its `dtype`, or `type` for a { data, dims, type } tensor) → the kind
// of its values: the API's names, the safetensors spellings, onnxruntime-web's and
// transformers.js's 'float16'. A Uint16Array holds bits only: without one of these it means nothing.
const HALF_KINDS = { float16: 'float16', bfloat16: 'bfloat16', F16: 'float16', BF16: 'bfloat16' };

/**
 * The dtypes a 16-bit tensor may name: the `expected` of the DTypeError of one that names none
 * (this very array, so that the state dict tells that error from its own).
 */
export const HALF_DTYPE_NAMES = Object.freeze(Object.keys(HALF_KINDS));

/** The kind of values a 16-bit dtype name says ('F16' → 'float16'), or undefined for another name. */
export const halfKindOf = (name) => (typeof name === 'string' && Object.hasOwn(HALF_KINDS, name) ? HALF_KINDS[name] : undefined);

/**
 * Checks `{ data, shape }` (or `{ data, dims, type? }`, as onnxruntime-web and transformers.js
 * tensors are): data of one of `dtypes` (element types, read from the array itself:
 * typed_arrays.js), shape an array of integers >= minSize (1; saveSafetensors() takes 0, as the
 * format does) whose product is its length, rank one of `ranks`. Returns { data, shape } with data
 * a copy of this realm (typed_arrays.js snapshot()), taken when the call is made, which everything
 * after the checks reads (borrow: the caller's memory instead where typed_arrays.js borrowed() may,
 * for a caller that consumes it before returning); `views` (original → copy) makes the same array
 * passed twice one copy, so that aliasing (query === key === value) survives.
 */
export function checkTensor(argument, tensor, { dtypes = ['Float32Array'], ranks, views = new Map(), minSize = 1, borrow = false } = {}) {
  const shapeKey = tensor !== null && typeof tensor === 'object' && !('shape' in tensor) && 'dims' in tensor ? 'dims' : 'shape';
  if (tensor === null || typeof tensor !== 'object' || !('data' in tensor) || !(shapeKey in tensor)) {
    throw new DTypeError(
      `${argument}: expected a tensor { data: ${dtypes.join(' | ')}, shape: number[] } (or { data, dims }), got ${describe(tensor)}`,
      { argument, expected: 'tensor', actual: describe(tensor) });
  }
  // Each field is read once (a getter or a Proxy answers once).
  const { data: given, [shapeKey]: givenShape } = tensor;
  if (!dtypes.includes(typedArrayType(given))) {
    const names = dtypes.map((d) => (d === 'Uint16Array' ? 'Uint16Array (16-bit floats, with a dtype)' : d));
    throw new DTypeError(`${argument}.data: expected ${names.join(' or ')}, got ${describe(given)}`, {
      argument, expected: dtypes, actual: describe(given),
    });
  }
  const shape = snapshotShape(`${argument}.${shapeKey}`, givenShape, minSize);
  const dtype = elementKind(argument, typedArrayType(given), readTag(argument, tensor, shapeKey), dtypes);
  if (ranks && !ranks.includes(shape.length)) {
    throw new ShapeError(
      `${argument}: expected ${ranks.map((r) => `${r}-D`).join(' or ')} shape, got ${formatShape(shape)}`,
      { argument, expected: ranks.map((r) => `${r}-D`), actual: shape });
  }
  if (isDetached(given) && product(shape) > 0) {
    throw new ShapeError(`${argument}: shape ${formatShape(shape)} needs ${product(shape)} values, data has none `
      + '(its ArrayBuffer is detached, e.g. transferred to a worker, or empty)', {
      argument, expected: product(shape), actual: 'detached',
    });
  }
  // The copy is taken after every getter of this tensor ran; later tensors' getters cannot
  // reach it (they may shrink or detach `given`: the call still computes on what was checked).
  if (!views.has(given)) views.set(given, borrow ? borrowed(given) : snapshot(given));
  const data = views.get(given);
  if (product(shape) !== data.length) {
    throw new ShapeError(
      `${argument}: shape ${formatShape(shape)} needs ${product(shape)} values, data has ${data.length}`,
      { argument, expected: product(shape), actual: data.length });
  }
  return dtype ? { data, shape, dtype } : { data, shape };
}

/**
 * A tensor's dtype as it says it: `dtype` (this API's key) or `type` (onnxruntime-web's and
 * transformers.js's), taken under either key in either form, each read once. Returns { key, value }:
 * the key given (the form's own when neither is: 'type' beside dims, else 'dtype'), value
 * undefined when neither is; both given must name one kind.
 */
function readTag(argument, tensor, shapeKey) {
  const dtype = 'dtype' in tensor ? tensor.dtype : undefined;
  const type = 'type' in tensor ? tensor.type : undefined;
  const kind = (name) => (Object.hasOwn(HALF_KINDS, name) ? HALF_KINDS[name] : name);
  if (dtype !== undefined && type !== undefined && kind(dtype) !== kind(type)) {
    throw new DTypeError(`${argument}: dtype ${describe(dtype)} and type ${describe(type)} disagree; give one`, {
      argument, expected: 'one dtype', actual: `${describe(dtype)} and ${describe(type)}`,
    });
  }
  if (dtype !== undefined) return { key: 'dtype', value: dtype };
  return { key: type !== undefined || shapeKey === 'dims' ? 'type' : 'dtype', value: type };
}

/**
 * The kind of a tensor's elements from its data type and its dtype tag (readTag()): a 16-bit
 * tensor's ('float16' | 'bfloat16', halfKind()), or undefined for the other types, whose tag may
 * only name them (float32 data tagged 'float16' or 'bfloat16' would be read as something it is
 * not, so it is a DTypeError rather than ignored).
 */
function elementKind(argument, dataType, { key, value }, dtypes) {
  if (dataType === 'Uint16Array') return halfKind(argument, key, value);
  if (value === undefined || TYPE_NAMES[dataType].includes(value)) return undefined;
  const half = Object.hasOwn(HALF_KINDS, value) ? ' (16-bit floats are given as a Uint16Array of their bits)' : '';
  // The safetensors tags are accepted, not advertised: the API's names are what a caller writes.
  const expected = dtypes.filter((d) => d !== 'Uint16Array').flatMap((d) => TYPE_NAMES[d] ?? []).filter((t) => !/^B?F\d+$/.test(t));
  throw new DTypeError(`${argument}.${key}: expected ${expected.map((t) => `'${t}'`).join(' or ')} `
    + `(with ${dataType} data), got ${describe(value)}${half}`, {
    argument, expected, actual: describe(value),
  });
}

/**
 * The kind ('float16' | 'bfloat16') a Uint16Array tensor's `key` ('dtype', or 'type' for
 * { data, dims, type }) says, or a DTypeError naming the argument: 16-bit data without a kind
 * could be either.
 */
function halfKind(argument, key, value) {
  if (typeof value === 'string' && Object.hasOwn(HALF_KINDS, value)) return HALF_KINDS[value];
  const expected = HALF_DTYPE_NAMES;
  throw new DTypeError(`${argument}.${key}: Uint16Array data holds 16-bit floats; expected ${key} `
    + `${expected.map((k) => `'${k}'`).join(' | ')} to say which, got ${describe(value)}`, {
    argument, expected, actual: describe(value),
  });
}

/** A checked tensor's dtype: 'float32', or a 16-bit tensor's kind. */
export const tensorDtype = (t) => t.dtype ?? 'float32';

/**
 * The caller's shape read once into a plain array of integers, which every later check and use
 * reads instead: each entry is read exactly once, so a Proxy or a getter cannot answer one value
 * to the checks and another to the allocation. Holes (which every() and reduce() skip),
 * non-numbers, non-integers, values of 2^53 and above and ranks above MAX_RANK are a ShapeError
 * naming the argument and the index.
 */
export function snapshotShape(where, shape, minSize = 1) {
  const fail = (got, actual) => {
    throw new ShapeError(`${where}: expected an array of integers >= ${minSize}, got ${got}`, {
      argument: where.slice(0, where.lastIndexOf('.')), expected: 'integer[]', actual,
    });
  };
  if (!Array.isArray(shape)) fail(describe(shape), describe(shape));
  const rank = shape.length;
  if (!(rank <= MAX_RANK)) fail(`${rank} dimensions (at most ${MAX_RANK})`, rank);
  const dims = [];
  for (let i = 0; i < rank; i++) {
    if (!(i in shape)) fail(`an empty slot at index ${i}`, 'hole');
    const n = shape[i];
    if (!(Number.isSafeInteger(n) && n >= minSize)) fail(`${describe(n)} at index ${i}`, describe(n));
    dims.push(n);
  }
  return dims;
}

/** Throws the ShapeError of `argument`: expected `expected` (text), got a tensor of shape `actual`. */
export function shapeError(argument, expected, actual) {
  throw new ShapeError(`${argument}: expected shape ${expected}, got ${formatShape(actual)}`, {
    argument, expected, actual,
  });
}

/** A plan's absent mask (a new object: a given mask's shape is set by the call's checks). */
export const noMask = () => ({ kind: MaskKind.none, data: null, shape: [] });

/** A boolean (Uint8Array) or additive (Float32Array) mask, or none. */
export function checkMask(argument, mask, views, borrow = false) {
  if (mask === undefined || mask === null) return noMask();
  const t = checkTensor(argument, mask, { dtypes: ['Uint8Array', 'Float32Array'], views, borrow });
  const kind = typedArrayType(t.data) === 'Uint8Array' ? MaskKind.boolean : MaskKind.additive;
  return { kind, ...t };
}

/**
 * forward()'s keyPaddingMask checked against the T keys a call attends to: [B, T], or [T]
 * unbatched (then given the shape [1, T]); none when absent.
 */
export function checkKeyPaddingMask(mask, views, { B, T, batched }) {
  const checked = checkMask('keyPaddingMask', mask, views, true);
  if (checked.kind !== MaskKind.none) {
    const want = batched ? [B, T] : [T];
    if (formatShape(checked.shape) !== formatShape(want)) shapeError('keyPaddingMask', formatShape(want), checked.shape);
    checked.shape = [B, T];
  }
  return checked;
}

/**
 * ShapeError unless tensor `t`'s data (if any) still holds its shape's values (typed_arrays.js
 * stillWhole()): a borrowed view looked at again once every getter of the call has run.
 */
export function requireWhole(argument, t) {
  if (t.data && !isDeviceData(t.data) && !stillWhole(t.data, product(t.shape))) {
    throw new ShapeError(`${argument}: its ArrayBuffer was detached (transferred) while the call read its arguments, `
      + 'by a later argument\'s getter', { argument, expected: product(t.shape), actual: 'detached' });
  }
}
