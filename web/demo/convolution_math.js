// The 3×3 convolution that the 9-head construction reproduces: the image, the kernels, the
// per-head masks that pick offset Δ_k, and the direct computation it is checked against.
import { SEED, prng } from './seeded_data.js';

// ---------------------------------------------------------------- docs/attention-math/heads.md §6

export const N = 16;           // image side; the tokens are its N² pixels
export const PIX = N * N;
const OFFSETS = [];     // Δ_k = (dy, dx), k = 3·(dy+1) + (dx+1)
for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) OFFSETS.push([dy, dx]);
/** key → [label, taps in row-major 3×3 order, k = 3·(dy+1) + (dx+1)]. */
export const KERNELS = {
  'sobel-x': ['Sobel x (vertical edges)', [-1, 0, 1, -2, 0, 2, -1, 0, 1]],
  'sobel-y': ['Sobel y (horizontal edges)', [-1, -2, -1, 0, 0, 0, 1, 2, 1]],
  laplacian: ['Laplacian', [0, 1, 0, 1, -4, 1, 0, 1, 0]],
  sharpen: ['sharpen', [0, -1, 0, -1, 5, -1, 0, -1, 0]],
  box: ['box blur', Array(9).fill(1 / 9)],
  emboss: ['emboss', [-2, -1, 0, -1, 1, 1, 0, 1, 2]],
  random: ['random (seeded)', (() => { const r = prng(SEED + 6); return Array.from({ length: 9 }, () => r() * 2 - 1); })()],
};

/** A drawn shape: a filled rectangle, a disc and a diagonal stroke, values 0 / 1 (and ½). */
export function initialImage() {
  const img = new Float32Array(PIX);
  for (let y = 0; y < N; y++) {
    for (let x = 0; x < N; x++) {
      let v = 0;
      if (y >= 2 && y <= 6 && x >= 2 && x <= 8) v = 1;
      if ((y - 10.5) ** 2 + (x - 10) ** 2 <= 3.3 ** 2) v = 1;
      if (x - y === 9 || x - y === 10) v = Math.max(v, 0.5);
      img[y * N + x] = v;
    }
  }
  return img;
}

let masks = null;

/** The per-head [9, L, L] masks over the N² pixels, built on first use and kept (they depend only
 *  on N): dist2 = |q − (p + Δ_k)|², boolMask = 0 where q = p + Δ_k, else 1. */
export function convolutionMasks() {
  if (masks) return masks;
  const dist2 = new Float32Array(9 * PIX * PIX);
  const boolMask = new Uint8Array(9 * PIX * PIX).fill(1);
  OFFSETS.forEach(([dy, dx], k) => {
    for (let p = 0; p < PIX; p++) {
      const ty = Math.floor(p / N) + dy;
      const tx = (p % N) + dx;
      const row = (k * PIX + p) * PIX;
      for (let q = 0; q < PIX; q++) dist2[row + q] = (Math.floor(q / N) - ty) ** 2 + ((q % N) - tx) ** 2;
      if (ty >= 0 && ty < N && tx >= 0 && tx < N) boolMask[row + ty * N + tx] = 0;
    }
  });
  masks = { dist2, boolMask };
  return masks;
}

/** The additive mask −s·|q − (p + Δ_k)|²: head k leans towards offset Δ_k, one-hot as s grows. */
export function biasMask(s) {
  const { dist2 } = convolutionMasks();
  const bias = new Float32Array(dist2.length);
  for (let i = 0; i < bias.length; i++) bias[i] = -s * dist2[i];
  return bias;
}

/** y(p) = Σ_k w_k x(p + Δ_k), zero padding (cross-correlation, as torch conv2d). */
export function directConvolution(image, taps) {
  const y = new Float64Array(PIX);
  for (let py = 0; py < N; py++) {
    for (let px = 0; px < N; px++) {
      OFFSETS.forEach(([dy, dx], k) => {
        const qy = py + dy;
        const qx = px + dx;
        if (qy >= 0 && qy < N && qx >= 0 && qx < N) y[py * N + px] += taps[k] * image[qy * N + qx];
      });
    }
  }
  return y;
}

/** Whether pixel p's 3×3 window lies inside the image (no zero padding involved). */
export const isInterior = (p) => {
  const y = Math.floor(p / N);
  const x = p % N;
  return y > 0 && y < N - 1 && x > 0 && x < N - 1;
};

/** max |a − b| over every pixel, or over the interior (pixels whose 3×3 window is inside). */
export function maxDiff(a, b, interior) {
  let worst = 0;
  for (let p = 0; p < PIX; p++) if (!interior || isInterior(p)) worst = Math.max(worst, Math.abs(a[p] - b[p]));
  return worst;
}
