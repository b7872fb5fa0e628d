// The small option checks every resolver uses: an options object with known keys, booleans,
// sizes and indices. Each throws an OptionError naming the option, the expected and the actual.
import { OptionError, describe } from './errors.js';

const isSize = (n) => Number.isInteger(n) && n >= 1;

export function checkOptions(argument, options, allowed) {
  if (options === undefined || options === null) return {};
  let keys;
  try {
    keys = typeof options !== 'object' || Array.isArray(options) ? null : Object.keys(options);
  } catch (e) {  // a revoked Proxy, an ownKeys trap that throws
    throw new OptionError(`${argument}: its keys could not be read (${e?.message ?? e})`, { argument, expected: 'object', actual: 'unreadable' });
  }
  if (!keys) {
    throw new OptionError(`${argument}: expected an options object, got ${describe(options)}`, {
      argument, expected: 'object', actual: describe(options),
    });
  }
  for (const key of keys) {
    if (!allowed.includes(key)) {
      throw new OptionError(
        `${argument}: unknown option '${key}'; expected one of ${allowed.join(', ')}`,
        { argument: key, expected: allowed, actual: key });
    }
  }
  // A snapshot, each option read once (a getter runs once; one that throws passes its error on):
  // the checks and the call then read the same values.
  const snapshot = {};
  for (const key of allowed) if (key in options) snapshot[key] = options[key];
  return snapshot;
}

export function checkBoolean(argument, value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new OptionError(`${argument}: expected a boolean, got ${describe(value)}`, {
      argument, expected: 'boolean', actual: describe(value),
    });
  }
  return value;
}

export function checkSize(argument, value, fallback) {
  if (value === undefined && fallback !== undefined) return fallback;
  if (!isSize(value)) {
    throw new OptionError(`${argument}: expected an integer >= 1, got ${describe(value)}`, {
      argument, expected: 'integer >= 1', actual: describe(value),
    });
  }
  return value;
}

/** An integer in [0, count). */
export function checkIndex(argument, value, count) {
  if (!Number.isInteger(value) || value < 0 || value >= count) {
    throw new OptionError(`${argument}: expected an integer in [0, ${count}), got ${describe(value)}`, {
      argument, expected: `[0, ${count})`, actual: value,
    });
  }
  return value;
}

// The float32 range: the core and the GPU store every scalar option as a float32, where a
// double past FLT_MAX is Infinity (1e39 as a scale gave all-NaN outputs) and one under 2^-149
// (the least subnormal) is 0 (a scale of 1e-46 was read as "no scale given").
const FLT_MAX = 3.4028234663852886e38;
const FLT_TRUE_MIN = 2 ** -149;

/**
 * A finite number > `above` (0: scale, softcap, qkNorm.eps, rotary scaling factors; 1:
 * rotary.base) that float32 holds: its magnitude in [2^-149, FLT_MAX], and still > `above` once
 * rounded to float32 (1 + 1e-9 is 1 there). The one check of every scalar option the core stores.
 */
export function checkPositive(argument, value, above = 0) {
  if (typeof value !== 'number' || !(value >= FLT_TRUE_MIN && value <= FLT_MAX) || !(Math.fround(value) > above)) {
    throw new OptionError(`${argument}: expected a finite number > ${above}, got ${describe(value)} (it is stored as a `
      + `float32: in [2^-149, ${FLT_MAX}], > ${above} once rounded)`, {
      argument, expected: `finite number > ${above}, float32`, actual: describe(value),
    });
  }
  return value;
}

/** One of `choices` (strings), `fallback` when not given. */
export function checkChoice(argument, value, choices, fallback) {
  if (value === undefined) return fallback;
  if (!choices.includes(value)) {
    throw new OptionError(`${argument}: expected ${choices.map((c) => `'${c}'`).join(' | ')}, got ${describe(value)}`, {
      argument, expected: choices, actual: describe(value),
    });
  }
  return value;
}
