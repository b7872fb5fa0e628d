// What every loadStateDict() asks of its entries about quantised weights (whether an entry is a
// caller's quantised tensor or a quantised entry made from one) and the copy the pool takes of
// each: the rest of quantised-tensor loading, quantised_tensors.js, is reached only where a
// quantised tensor is given (base/lazy_modules.js: not parsed by a cold start's import).
/** The tensor dtypes taken as stored, each with the weightsDtype whose module takes it. */
export const QUANTISED_SOURCES = Object.freeze({ q4_0: 'int4', q8_0: 'int8', int4: 'int4' });

// Marks the quantised entries quantised_tensors.js makes (a caller's MatMulNBits tensor is { dtype: 'int4' } too).
const ENTRY = Symbol('quantised entry');

/** Whether `value` is a caller's quantised tensor (its dtype one of QUANTISED_SOURCES'). */
export const isQuantisedTensor = (value) => value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)
  && !value[ENTRY] && Object.hasOwn(QUANTISED_SOURCES, value.dtype);

/** Whether a state-dict entry is a quantised entry made here (codes with scales). */
export const isQuantisedEntry = (entry) => entry !== null && typeof entry === 'object' && entry[ENTRY] === true;

/** Marks `entry` as a quantised entry (quantised_tensors.js makes them). */
export const markQuantised = (entry) => Object.defineProperty(entry, ENTRY, { value: true, enumerable: true });

/** An entry with copies of its arrays (a quantised entry's scales and zero points too). */
export function copyEntry(entry) {
  const copy = { ...entry, data: entry.data.slice() };  // the mark is copied with the fields
  if (entry.scales) copy.scales = entry.scales.slice();
  if (entry.zeroPoints) copy.zeroPoints = entry.zeroPoints.slice();
  return copy;
}
