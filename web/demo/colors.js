// Colour maps: each takes a value and returns [r, g, b] in 0..255.

// Viridis, polynomial fit (Matt Zucker, CC0).
const VIRIDIS = [
  [0.2777273272234177, 0.005407344544966578, 0.3340998053353061],
  [0.1050930431085774, 1.404613529898575, 1.384590162594685],
  [-0.3308618287255563, 0.214847559468213, 0.09509516302823659],
  [-4.634230498983486, -5.799100973351585, -19.33244095627987],
  [6.228269936347081, 14.17993336680509, 56.69055260068105],
  [4.776384997670288, -13.74514537774601, -65.35303263337234],
  [-5.435455855934631, 4.645852612178535, 26.3124352495832],
];
function viridis(t) {
  t = Math.min(1, Math.max(0, t));
  return [0, 1, 2].map((c) => {
    let v = 0;
    for (let k = VIRIDIS.length - 1; k >= 0; k--) v = v * t + VIRIDIS[k][c];
    return Math.round(255 * Math.min(1, Math.max(0, v)));
  });
}
const LUT = Array.from({ length: 256 }, (_, i) => viridis(i / 255));
/** A weight in [0, 1] on a √ scale, so that small weights stay visible. */
export const color = (w) => LUT[Math.round(255 * Math.sqrt(Math.min(1, Math.max(0, w))))];

// Diverging blue–white–red for signed values, t in [−1, 1] (ColorBrewer RdBu stops).
const RDBU = [[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]];
export function diverging(t) {
  const u = (Math.min(1, Math.max(-1, t)) + 1) * 2;  // 0..4
  const k = Math.min(3, Math.floor(u));
  const f = u - k;
  return [0, 1, 2].map((c) => Math.round(RDBU[k][c] + f * (RDBU[k + 1][c] - RDBU[k][c])));
}
/** diverging() for values in [−scale, scale]. */
export const signedColor = (scale) => (v) => diverging(scale > 0 ? v / scale : 0);
/** |v| on a log scale over `decades` decades: 10^−decades (dark) … 1 (bright). */
export const logScaleColor = (decades) => (v) =>
  LUT[Math.round(255 * Math.min(1, Math.max(0, (Math.log10(Math.abs(v) || 1e-30) + decades) / decades)))];
/** |v| on a log scale, 1e-8 (dark) … 1 (bright). */
export const logColor = logScaleColor(8);
