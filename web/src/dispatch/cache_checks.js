// A cache's arguments checked (docs/attention-math/decoding.md §9): createCache()'s options, and a batched
// cache's one length per row for kv_cache.js and forward()'s plan: cache.truncate()'s argument,
// forward()'s `rows`, and the one length of rows that agree.
import { CACHE_DTYPES } from '../storage/storage_types.js';
import { CacheError, OptionError, ShapeError, describe } from '../base/errors.js';
import { MAX_CACHE_POSITIONS, truncationFloor } from '../storage/kv_ring.js';
import { checkChoice, checkOptions, checkSize } from '../base/option_checks.js';

/**
 * createCache() options: { batchSize = 1, maxLength, window, dtype = 'float32' }; maxLength
 * optional with a window.
 */
export function resolveCacheOptions(options) {
  const o = checkOptions('createCache', options, ['batchSize', 'maxLength', 'window', 'dtype']);
  const batchSize = checkSize('batchSize', o.batchSize, 1);
  if (o.maxLength === undefined && o.window === undefined) {
    throw new OptionError('createCache: expected maxLength (the most positions the cache holds) or window (a sliding '
      + 'window of that many keys, maxLength then optional), got neither', {
      argument: 'maxLength', expected: 'maxLength or window', actual: 'neither',
    });
  }
  const window = o.window === undefined ? 0 : checkSize('window', o.window);
  const maxLength = window && o.maxLength === undefined ? 0 : checkSize('maxLength', o.maxLength);
  for (const [argument, value] of [['maxLength', maxLength], ['window', window]]) {
    if (value > MAX_CACHE_POSITIONS) {
      throw new OptionError(`${argument}: expected an integer <= ${MAX_CACHE_POSITIONS}, got ${value}`, {
        argument, expected: `<= ${MAX_CACHE_POSITIONS}`, actual: value,
      });
    }
  }
  return { batchSize, maxLength, window, dtype: checkChoice('dtype', o.dtype, CACHE_DTYPES, 'float32') };
}

/** Whether `value` is a list of numbers the cache methods take: an array or a typed array. */
export const isList = (value) => Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView));

/**
 * The one length of `lengths` (each row's), or a CacheError naming `lengths` for `where` (a
 * method that needs every row at one length) when the rows differ.
 */
export function uniformLength(lengths, where) {
  const first = lengths[0];
  for (let b = 1; b < lengths.length; b++) {
    if (lengths[b] !== first) {
      throw new CacheError(`${where}: the cache's rows hold different numbers of positions (${lengths.join(', ')}); `
        + 'cache.lengths has one per row', {
        argument: 'lengths', expected: 'rows of one length', actual: `[${lengths.join(', ')}]`,
      });
    }
  }
  return first;
}

/**
 * CacheError naming `cache` unless `L` more positions fit after `lengthBefore` (its maxLength; a
 * windowed cache without one has no end): forward()'s plan and a GpuStep's replay(). `where` and
 * `row` go into the message: the call ('call N of the step: ') and the row (' (row r)').
 */
export function checkRoom(cache, lengthBefore, L, { where = '', row = '' } = {}) {
  if (!cache.maxLength || lengthBefore + L <= cache.maxLength) return;
  throw new CacheError(`cache: ${where}appending ${L} positions to length ${lengthBefore}${row} would pass maxLength ${cache.maxLength}`, {
    argument: 'cache', expected: `<= ${cache.maxLength - lengthBefore} positions`, actual: L,
  });
}

/**
 * ShapeError naming `rotary.table` unless a given rotary table's `positions` rows (null: no table)
 * cover positions first … first + rows − 1: forward()'s plan and a GpuStep's replay() (`where`:
 * the call, 'call N of the step: ').
 */
export function checkRotaryRows(positions, first, rows, { where = '' } = {}) {
  if (positions === null || first + rows <= positions) return;
  throw new ShapeError(`rotary.table: ${where}this call rotates positions ${first} … ${first + rows - 1}, the table has rows `
    + `for 0 … ${positions - 1}`, { argument: 'rotary.table', expected: `>= ${first + rows} rows`, actual: positions });
}

/**
 * cache.truncate(length | lengths)'s argument, for rows of `current` positions each (options: the
 * cache's createCache() options). One integer cuts every row to it; a list holds one length per
 * row. Returns the new lengths, one per row, or a CacheError naming `length` / `lengths` unless
 * each row can be cut back to its own (truncationFloor(): not above its length, nor below what a
 * window's ring still needs).
 */
export function checkTruncation(length, current, options) {
  const list = isList(length);
  const argument = list ? 'lengths' : 'length';
  const refuse = (message, expected, actual = describe(length)) => {
    throw new CacheError(`cache.truncate: ${message}`, { argument, expected, actual });
  };
  if (list && length.length !== current.length) {
    refuse(`expected one length for each of the cache's ${current.length} rows, got ${length.length}`,
      `${current.length} lengths`, length.length);
  }
  const lengths = current.map((_, b) => (list ? length[b] : length));
  const perRow = list || current.some((n) => n !== current[0]);  // else every row is refused alike
  lengths.forEach((n, b) => {
    const row = perRow ? ` for row ${b}` : '';
    if (!Number.isInteger(n)) refuse(`expected an integer length${row}, got ${describe(n)}`, 'an integer', describe(n));
    const { lowest, oldest } = truncationFloor(current[b], options);
    const range = `[${lowest}, ${current[b]}]`;
    if (n > current[b] || (n < lowest && oldest === 0)) refuse(`expected a length in ${range}${row}, got ${n}`, range, n);
    if (n < lowest) {
      refuse(`positions below ${oldest}${row} have left the ring of the window (${options.window}), and a later `
        + `query would need them; expected a length in ${range}, got ${n}`, range, n);
    }
  });
  return lengths;
}

/**
 * forward()'s `rows` with a cache of `batchSize` rows, for a call whose batch dimension is B: the
 * rows it appends to (the ones still decoding), strictly increasing, one per batch row of the
 * call. Returns an Int32Array, or null for none given (every row); a ShapeError naming `rows`
 * otherwise.
 */
export function checkCallRows(rows, { B, batchSize }) {
  if (rows === undefined) return null;
  const refuse = (message, expected, actual) => {
    throw new ShapeError(`rows: ${message}`, { argument: 'rows', expected, actual });
  };
  if (!isList(rows)) refuse(`expected an array of the cache's rows, got ${describe(rows)}`, 'an array of integers', describe(rows));
  if (rows.length !== B) {
    refuse(`expected one row of the cache for each of the call's ${B} batch rows, got ${rows.length}`, `${B} rows`, rows.length);
  }
  return increasingIndices(rows, batchSize, "the cache's rows", refuse);
}

/**
 * `list` as an Int32Array of strictly increasing integers in [0, below) (`what` they are, for the
 * message), or refuse(message, expected, actual) at the first that is not: keep()'s indices and
 * forward()'s rows.
 */
export function increasingIndices(list, below, what, refuse) {
  const range = `strictly increasing integers in [0, ${below}) (${what})`;
  const out = new Int32Array(list.length);
  for (let n = 0; n < list.length; n++) {
    const i = list[n];
    if (!Number.isInteger(i) || i < 0 || i >= below || (n > 0 && i <= out[n - 1])) {
      refuse(`expected ${range}, got ${describe(i)} at index ${n}${n > 0 ? ` after ${out[n - 1]}` : ''}`, range, describe(i));
    }
    out[n] = i;
  }
  return out;
}

/** The cache rows a call appends to (`planned`: its plan's cache part): its `rows`, else every row. */
export const listedRows = (planned) => planned.rows ?? planned.lengthsBefore.map((_, b) => b);

/**
 * A call's turn on a cache (KvCache.enqueue()): each of its `listed` rows still at the length it
 * was planned at (`lengthsBefore`), as rowLength(b) reads it; else a CacheError, and it does not run.
 */
export function checkPlannedLengths(listed, lengthsBefore, rowLength) {
  for (const b of listed) {
    const length = rowLength(b);
    if (length === lengthsBefore[b]) continue;
    throw new CacheError(`cache: this call was planned at length ${lengthsBefore[b]}, but the cache is at length ${length} `
      + 'at its turn (a call or batch submit before it on the cache failed and appended nothing, or the cache was cut back '
      + 'since a GpuStep planned it); it did not run', {
      argument: 'cache', expected: lengthsBefore[b], actual: length,
    });
  }
}

/** An encoded cache (`encoded`: mha.encode()'s) holds what its encoder gave for as long as it lives: `method` refused. */
export function refuseEncoded(encoded, method) {
  if (!encoded) return;
  throw new CacheError(`cache.${method}: an encoded cache (mha.encode()) is read-only; encode again for another input`, {
    argument: 'cache', expected: 'a cache from createCache()', actual: 'an encoded cache',
  });
}
