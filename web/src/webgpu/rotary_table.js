// The cos/sin table the rotary kernel reads (kernels/rotary.wgsl.js), formed on the CPU in
// float64 per call: θ_j (rotary_frequencies.js) and the angle p·θ_j are doubles, as in the WASM core
// (cpp/src/rotary.cpp), and only cos and sin are rounded to f32.
// An f32 angle would be off by about 10⁻² radian at p = 10⁵ (docs/attention-math/decoding.md §8).

import { rotaryFrequencies } from './rotary_frequencies.js';

/** The positions of rows first … first + count − 1: a call's rows without positionIds. */
export const consecutivePositions = (first, count) => Array.from({ length: count }, (_, i) => first + i);

/**
 * [positions.length, dim/2, 2] floats: (cos pθ_j, sin pθ_j) for each p of `positions` (integers
 * >= 0; with a given table, below its rows: plans.js checked them). Each distinct position is
 * computed once and its row copied where it repeats: positionIds give a row per (batch, query),
 * and a padded batch repeats one range in every batch row (B·L rows, about L distinct), so the
 * float64 cos and sin, not the copies, would set this table's cost.
 */
export function rotaryTable(rotary, positions) {
  const half = rotary.dim / 2;
  const width = half * 2;
  const table = new Float32Array(positions.length * width);
  const theta = rotary.table ? null : frequenciesOf(rotary);
  const rowOf = new Map();  // position → the first row that holds it
  for (let i = 0; i < positions.length; i++) {
    const position = positions[i];
    const earlier = rowOf.get(position);
    if (earlier !== undefined) {
      table.copyWithin(i * width, earlier * width, (earlier + 1) * width);
      continue;
    }
    rowOf.set(position, i);
    for (let j = 0; j < half; j++) {
      const at = (i * half + j) * 2;
      if (theta) {
        table[at] = Math.cos(position * theta[j]);
        table[at + 1] = Math.sin(position * theta[j]);
      } else {  // a given table: its row `position`
        table[at] = rotary.table.cos[position * half + j];
        table[at + 1] = rotary.table.sin[position * half + j];
      }
    }
  }
  return table;
}

/**
 * rotaryTable() of positions first … first + count − 1 (a call's rows without positionIds). The
 * last such table is kept per option's values (a given table's per option) and returned again
 * for the same rows: a decode step's layers share their option's values and the token's
 * position, so a step forms one table, not one a layer. Callers only read it.
 */
export function consecutiveTable(rotary, first, count) {
  const key = rotary.table ? rotary : frequenciesOf(rotary);
  const last = lastTables.get(key);
  if (last?.first === first && last.count === count) return last.table;
  const table = rotaryTable(rotary, consecutivePositions(first, count));
  lastTables.set(key, { first, count, table });
  return table;
}
const lastTables = new WeakMap();  // θ (or a given table's option) → { first, count, table }

// θ_j of a module's rotary option, formed once (a decode step forms a table per layer per token),
// one array for options of the same values (consecutiveTable()'s key).
const frequencies = new WeakMap();
const frequenciesByValues = new Map();  // the option's values (JSON) → θ
function frequenciesOf(rotary) {
  let theta = frequencies.get(rotary);
  if (theta) return theta;
  const values = JSON.stringify({ ...rotary, table: null });
  theta = frequenciesByValues.get(values) ?? rotaryFrequencies({ scaling: null, ...rotary });
  frequenciesByValues.set(values, theta);
  frequencies.set(rotary, theta);
  return theta;
}
