// forward()'s `positionIds` option (docs/attention-math/decoding.md §8): the rotary position of each query
// row (and of the key row beside it) instead of its index. The rotation moves, and a cache's window
// (§9): masks, the causal rule and a cache's order still follow the rows, so ids may repeat, skip
// or run backwards (with a window, within what its ring holds).
import { OptionError, ShapeError, describe, formatShape } from '../base/errors.js';
import { checkTensor } from '../base/tensor_checks.js';

/**
 * positionIds: undefined or null (none, as for the masks), or a tensor { data: Int32Array, shape: [B, L] } ([L] for an unbatched
 * call) of integers >= 0, below rotary.table's rows when the module has a table. Without a cache
 * a query row and the key row beside it share a position, so S must equal L. Returns the ids as
 * an Int32Array view [B·L], or null.
 */
export function checkPositionIds(positionIds, { rotary, B, L, S, batched }) {
  if (positionIds === undefined || positionIds === null) return null;
  if (!rotary) {
    throw new OptionError('positionIds: the module has no rotary embedding, so there are no positions to set '
      + '(create it with the `rotary` option)', { argument: 'positionIds', expected: 'a module created with rotary', actual: 'no rotary' });
  }
  const want = batched ? [B, L] : [L];
  const ids = checkTensor('positionIds', positionIds, { dtypes: ['Int32Array'], ranks: [want.length] });
  if (formatShape(ids.shape) !== formatShape(want)) {
    throw new ShapeError(`positionIds: expected ${formatShape(want)} (one position per query row), got ${formatShape(ids.shape)}`, {
      argument: 'positionIds', expected: want, actual: ids.shape,
    });
  }
  if (S !== L) {
    throw new ShapeError(`positionIds: a query row and the key row beside it share a position, so key needs L = ${L} rows, got S = ${S}`, {
      argument: 'positionIds', expected: `S = ${L}`, actual: `S = ${S}`,
    });
  }
  // A table has rows for positions 0 … positions − 1; θ_j-built angles take any int32 >= 0.
  const limit = rotary.table ? rotary.table.positions : 2 ** 31;
  const { data } = ids;
  for (let n = 0; n < data.length; n++) {
    if (data[n] >= 0 && data[n] < limit) continue;
    const at = batched ? `[${Math.floor(n / L)}, ${n % L}]` : `[${n}]`;
    const range = rotary.table ? `an integer in [0, ${limit - 1}] (rotary.table has ${limit} rows)` : 'an integer >= 0';
    throw new OptionError(`positionIds${at}: expected ${range}, got ${describe(data[n])}`, {
      argument: 'positionIds', expected: range, actual: data[n],
    });
  }
  return data;
}
