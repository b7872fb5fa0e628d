// Seeded inputs and weights: the same seed gives the same page, so the numbers the tests and
// screenshots read are reproducible. The order of the draws from one generator is part of that.

export const SEED = 20240611;  // each panel draws from its own offset of it
const IN_PROJ_GAIN = 3;   // sharper heads than plain Xavier, so the heatmaps show structure
export const INPUT_STD = 0.5;    // input ~ N(0, 0.5²)

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One N(0, 1) draw (Box–Muller); consumes two or more uniforms from `rand`. */
export function gaussian(rand) {
  let u = 0;
  while (u === 0) u = rand();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

/** Xavier-uniform matrices and small uniform biases for every entry the module expects. */
export function makeStateDict(specs, rand) {
  const dict = {};
  for (const { name, shape } of specs) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (shape.length === 1) {
      for (let i = 0; i < data.length; i++) data[i] = (rand() * 2 - 1) * 0.1;
    } else {
      const gain = name.startsWith('out_proj') ? 1 : IN_PROJ_GAIN;
      const bound = gain * Math.sqrt(6 / (shape[0] + shape[1]));
      for (let i = 0; i < data.length; i++) data[i] = (rand() * 2 - 1) * bound;
    }
    dict[name] = { data, shape };
  }
  return dict;
}

/** Copies x [L, C] with every row rescaled to norm r. */
export function equalNorm(x, L, C, r) {
  const y = new Float32Array(x.length);
  for (let i = 0; i < L; i++) {
    let ss = 0;
    for (let j = 0; j < C; j++) ss += x[i * C + j] ** 2;
    const f = ss > 0 ? r / Math.sqrt(ss) : 0;
    for (let j = 0; j < C; j++) y[i * C + j] = x[i * C + j] * f;
  }
  return y;
}

/** A { data, shape } tensor of N(0, INPUT_STD²) entries, drawn in row-major order. */
export const gaussianTensor = (shape, rand) => ({
  data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => INPUT_STD * gaussian(rand)),
  shape,
});
