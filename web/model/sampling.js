// Picking the next token from a row of logits: greedy (temperature 0), or a draw from
// softmax(logits / temperature) over the top-k logits, with a seeded generator so that a run can
// be repeated.
import { OptionError } from '../src/base/errors.js';

/** What a front end (the demo page's form) offers by default: sampling, since greedy decoding of
 *  this small model soon repeats one phrase. makeSampler() itself stays greedy unless asked. */
export const SAMPLING_DEFAULTS = Object.freeze({ temperature: 0.8, topK: 20, seed: 1 });

/** mulberry32: a small seeded generator of uniform floats in [0, 1) (32-bit state). */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Index of the largest value (the first one on a tie, as torch.argmax). */
export function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

function check(argument, value, ok, expected) {
  if (!ok) throw new OptionError(`${argument}: expected ${expected}, got ${value}`, { argument, expected, actual: value });
}

/**
 * A sampler: (logits row) → token id. options: { temperature = 0 (greedy), topK = 0 (every
 * token), seed = 1 }.
 */
export function makeSampler({ temperature = 0, topK = 0, seed = 1 } = {}) {
  check('temperature', temperature, typeof temperature === 'number' && temperature >= 0 && Number.isFinite(temperature), 'a finite number >= 0');
  check('topK', topK, Number.isInteger(topK) && topK >= 0, 'an integer >= 0 (0: no limit)');
  check('seed', seed, Number.isInteger(seed), 'an integer');
  if (temperature === 0) return argmax;
  const random = seededRandom(seed);
  return (row) => {
    const order = Array.from(row.keys()).sort((a, b) => row[b] - row[a] || a - b);
    const kept = topK > 0 ? order.slice(0, topK) : order;
    const top = row[kept[0]];
    const weights = kept.map((i) => Math.exp((row[i] - top) / temperature));
    let u = random() * weights.reduce((a, b) => a + b, 0);
    for (let k = 0; k < kept.length; k++) {
      u -= weights[k];
      if (u < 0) return kept[k];
    }
    return kept[kept.length - 1];
  };
}
