// The model's non-attention arithmetic on row-major [rows, width] matrices, in float64: linear
// layers, LayerNorm and the exact GELU (README.md, "Architecture"). Weights are the float32
// tensors of the safetensors file ([out, in], PyTorch's layout); activations stay Float64Array so
// that the only float32 rounding left is the attention's (the golden logits are float64).
import { erf } from './erf.js';

/**
 * y = x Wᵀ + b: x [rows, in], weight { data, shape: [out, in] }, bias [out]. Four partial sums per
 * dot product: independent additions that the CPU overlaps (about 2× the speed of one sum).
 */
export function linear(x, rows, weight, bias) {
  const [out, inWidth] = weight.shape;
  const w = weight.data;
  const b = bias.data;
  const tail = inWidth - (inWidth % 4);
  const y = new Float64Array(rows * out);
  for (let r = 0; r < rows; r++) {
    const xr = r * inWidth;
    for (let o = 0; o < out; o++) {
      const wo = o * inWidth;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let i = 0; i < tail; i += 4) {
        s0 += x[xr + i] * w[wo + i];
        s1 += x[xr + i + 1] * w[wo + i + 1];
        s2 += x[xr + i + 2] * w[wo + i + 2];
        s3 += x[xr + i + 3] * w[wo + i + 3];
      }
      for (let i = tail; i < inWidth; i++) s0 += x[xr + i] * w[wo + i];
      y[r * out + o] = b[o] + (s0 + s1 + (s2 + s3));
    }
  }
  return y;
}

/** (x − mean) / √(biased variance + eps) · weight + bias over each row of width weight.length. */
export function layerNorm(x, rows, { weight, bias }, eps) {
  const width = weight.data.length;
  const y = new Float64Array(rows * width);
  for (let r = 0; r < rows; r++) {
    const o = r * width;
    let mean = 0;
    for (let i = 0; i < width; i++) mean += x[o + i];
    mean /= width;
    let variance = 0;
    for (let i = 0; i < width; i++) variance += (x[o + i] - mean) ** 2;
    const scale = 1 / Math.sqrt(variance / width + eps);
    for (let i = 0; i < width; i++) y[o + i] = (x[o + i] - mean) * scale * weight.data[i] + bias.data[i];
  }
  return y;
}

/** GELU(z) = z · ½ (1 + erf(z / √2)), in place. */
export function gelu(z) {
  for (let i = 0; i < z.length; i++) z[i] = 0.5 * z[i] * (1 + erf(z[i] / Math.SQRT2));
  return z;
}

/** x += y, in place. */
export function addInPlace(x, y) {
  for (let i = 0; i < x.length; i++) x[i] += y[i];
  return x;
}
