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

const VIEWS = { Float32Array, Uint8Array };

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
 * A plain Float32Array or Uint8Array of this realm on the same memory as `value` (whose type
 * typedArrayType() said is one of those): the package reads only such views.
 */
export function plainView(value) {
  const View = VIEWS[typeOf.call(value)];
  return new View(bufferOf.call(value), byteOffsetOf.call(value), lengthOf.call(value));
}

/** Whether the typed array's memory is gone (its ArrayBuffer was transferred or detached). */
export function isDetached(value) {
  const buffer = bufferOf.call(value);
  // Node 20 has no ArrayBuffer.prototype.detached; a detached buffer reads byteLength 0 there.
  return buffer.detached ?? (buffer.byteLength === 0 && lengthOf.call(value) === 0);
}
