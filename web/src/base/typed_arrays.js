// What a typed array really is, whatever realm made it and whatever a subclass or an own property
// claims. `instanceof Float32Array` is false for an array from another realm (an iframe, a
// worker's structured clone is fine but node:vm is not), and `constructor.name` or an overridden
// `length` can be anything a subclass says. The intrinsic getters of %TypedArray%.prototype read
// the array's internal slots instead: its element type, buffer, offset and length.
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
const intrinsic = (key) => Object.getOwnPropertyDescriptor(TypedArrayPrototype, key).get;
const typeOf = intrinsic(Symbol.toStringTag);
const bufferOf = intrinsic('buffer');
const byteOffsetOf = intrinsic('byteOffset');
const lengthOf = intrinsic('length');
const byteLengthOf = intrinsic('byteLength');
const dataViewGetter = (key) => Object.getOwnPropertyDescriptor(DataView.prototype, key).get;
const dataViewBuffer = dataViewGetter('buffer');
const dataViewByteOffset = dataViewGetter('byteOffset');
const dataViewByteLength = dataViewGetter('byteLength');
const bufferLengthGetters = [ArrayBuffer, globalThis.SharedArrayBuffer]
  .filter(Boolean).map((Buffer) => Object.getOwnPropertyDescriptor(Buffer.prototype, 'byteLength').get);

const VIEWS = { Float32Array, Uint8Array, Uint16Array, Int32Array };

/**
 * The element type of a typed array ('Float32Array', 'Uint8Array', ...) from its internal slot,
 * or undefined for anything else (a DataView, a plain object, a fake).
 */
export function typedArrayType(value) {
  return typeOf.call(value);
}

/** The element count of a typed array, from its internal slot. */
export function typedArrayLength(value) {
  return lengthOf.call(value);
}

/**
 * A plain Float32Array, Uint8Array, Uint16Array or Int32Array of this realm on the same memory as `value` (whose type
 * typedArrayType() said is one of those): the package reads only such views.
 */
export function plainView(value) {
  const View = VIEWS[typeOf.call(value)];
  return new View(bufferOf.call(value), byteOffsetOf.call(value), lengthOf.call(value));
}

/**
 * A copy of a typed array's elements in a plain array of this realm (the type typedArrayType()
 * said): the one read of the caller's memory a call makes, at the moment the call is made. Its
 * length is read once from the internal slot, so a buffer shrunk (resizable), grown (growable
 * shared) or detached later cannot change what the checks saw; a detached buffer, or one already
 * shrunk past the view, gives an empty copy. No caller code runs here (no species, no getters).
 */
export function snapshot(value) {
  const View = VIEWS[typeOf.call(value)];
  const length = lengthOf.call(value);
  // slice() of a view made here (this realm's own constructor, never the caller's subclass or its
  // species): one copy, no zero-filled array first.
  return length > 0 ? new View(bufferOf.call(value), byteOffsetOf.call(value), length).slice() : new View(0);
}

// ArrayBuffer.prototype.resizable (absent before resizable buffers existed: none is resizable then).
const resizableOf = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'resizable')?.get ?? (() => false);

/**
 * The caller's memory itself (a plain view of this realm, no copy) where, once the caller's own
 * code has stopped running, nothing can change it: a fixed-size, unshared ArrayBuffer. Else (a
 * SharedArrayBuffer another thread may write, a resizable buffer) snapshot(). For a synchronous
 * call that consumes the data before it returns (a state dict's load), checking the result with
 * stillWhole() after every getter ran then makes the read as good as a copy, without one.
 */
export function borrowed(value) {
  const buffer = bufferOf.call(value);
  if (lengthOf.call(value) === 0) return new VIEWS[typeOf.call(value)](0);  // empty or detached: nothing to view
  let fixed;
  try {
    fixed = !resizableOf.call(buffer);  // throws for a SharedArrayBuffer
  } catch {
    fixed = false;
  }
  return fixed ? plainView(value) : snapshot(value);
}

/**
 * Whether a view from borrowed() still holds its `length` elements: a later getter of the call
 * may have detached (transferred) its buffer, which empties the view.
 */
export const stillWhole = (view, length) => lengthOf.call(view) === length;

/** Whether the typed array's memory is gone (its ArrayBuffer was transferred or detached). */
export function isDetached(value) {
  const buffer = bufferOf.call(value);
  // Node 20 has no ArrayBuffer.prototype.detached; a detached buffer reads byteLength 0 there.
  return buffer.detached ?? (buffer.byteLength === 0 && lengthOf.call(value) === 0);
}

/** The byte length of an ArrayBuffer or SharedArrayBuffer, or undefined for anything else. */
function bufferByteLength(value) {
  for (const get of bufferLengthGetters) {
    try {
      return get.call(value);
    } catch {
      // not this kind of buffer
    }
  }
  return undefined;
}

/**
 * A Uint8Array on the bytes of an ArrayBuffer, a SharedArrayBuffer, a typed array or a DataView
 * (its own window of its buffer), or null for anything else. Read from internal slots, as above;
 * a detached buffer gives an empty array (constructing a view on it would throw).
 */
export function byteView(value) {
  let buffer = value, offset = 0, length;
  if (typeOf.call(value) !== undefined) {
    buffer = bufferOf.call(value);
    offset = byteOffsetOf.call(value);
    length = byteLengthOf.call(value);
  } else if (ArrayBuffer.isView(value)) {
    buffer = dataViewBuffer.call(value);
    // A DataView's offset and length getters throw once its buffer is detached.
    if (bufferByteLength(buffer) === 0) return new Uint8Array(0);
    offset = dataViewByteOffset.call(value);
    length = dataViewByteLength.call(value);
  } else {
    length = bufferByteLength(value);
    if (length === undefined) return null;
  }
  return length === 0 ? new Uint8Array(0) : new Uint8Array(buffer, offset, length);
}
