// RoPE's frequencies θ_j = base^(−2j/dim), j < dim/2, with the scaling of a resolved rotary
// option (docs/attention-math/decoding.md §8), in float64: the WebGPU cos/sin table (webgpu/rotary_table.js)
// is built from them. The WASM core computes the same rule (cpp/src/rotary.cpp).

const TWO_PI = 2 * Math.PI;

/** θ_j for rotary { base, dim, scaling: null | { type, factor, lowFreqFactor, highFreqFactor, originalMaxPositions } }. */
export function rotaryFrequencies({ base, dim, scaling }) {
  return Array.from({ length: dim / 2 }, (_, j) => {
    const theta = base ** (-2 * j / dim);
    if (!scaling) return theta;
    const { type, factor } = scaling;
    if (type === 'linear') return theta / factor;
    // llama3: in units of the trained context, a wavelength that fits it highFreqFactor times or
    // more is kept, one that fits fewer than lowFreqFactor times is stretched by factor, and
    // between the two the frequency is blended linearly in (context / wavelength).
    const perContext = scaling.originalMaxPositions / (TWO_PI / theta);
    const blend = (perContext - scaling.lowFreqFactor) / (scaling.highFreqFactor - scaling.lowFreqFactor);
    if (blend >= 1) return theta;
    if (blend <= 0) return theta / factor;
    return (1 - blend) * theta / factor + blend * theta;
  });
}
