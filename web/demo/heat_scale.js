// The colour scale of the attention-weight heatmaps of the first two panels. A row of weights sums
// to 1, so a typical weight is about 1/L: on the √ scale that is still visible at L = 32
// (√(1/32) ≈ 0.18) but nearly black at L = 1024 (0.03). The log scale spans ⌈log₁₀ L⌉ + 2
// decades below 1, which puts 1/L around the middle of the map whatever L is. 'auto' keeps the √
// scale (exact zeros of a causal mask stay black, small L keeps its detail) up to AUTO_LOG_ABOVE_L.
import { color, logScaleColor } from './colors.js';

export const AUTO_LOG_ABOVE_L = 128;

const SUPERSCRIPT = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };
const power10 = (n) => `10${String(n).replace(/./g, (c) => SUPERSCRIPT[c])}`;

/**
 * mode: 'auto' | 'sqrt' | 'log'. Returns { kind: 'sqrt' | 'log', colorOf (weight → rgb),
 * colorAt (legend position t in [0, 1] → rgb), lo, hi (legend ends), note (the legend's gloss) }.
 */
export function heatScale(mode, L) {
  const log = mode === 'log' || (mode === 'auto' && L > AUTO_LOG_ABOVE_L);
  if (!log) {
    return { kind: 'sqrt', colorOf: color, colorAt: (t) => color(t ** 2), lo: '0', hi: '1', note: '(√ of the weight)' };
  }
  const decades = Math.ceil(Math.log10(L)) + 2;
  const colorOf = logScaleColor(decades);
  return {
    kind: 'log',
    colorOf,
    colorAt: (t) => colorOf(10 ** (decades * (t - 1))),
    lo: power10(-decades),
    hi: '1',
    note: `(log₁₀ of the weight; 1/L = ${(1 / L).toPrecision(2)})`,
  };
}
