// Seeded values for tests and the bench: every run sees the same numbers, in Node and in a page.
// One LCG (Numerical Recipes' constants); rng() and filled() are two views of the same sequence.

/** Seeded LCG giving values in [-0.5, 0.5). */
export function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/** A { data: Float32Array, shape } of next() * scale, one next() per element in order. */
export const randomTensor = (shape, next, scale = 1) => ({
  data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => next() * scale),
  shape,
});

/** n values uniform in [-scale, scale) from rng(seed) (the bench's weights and inputs). */
export function filled(n, seed, scale = 1) {
  const a = new Float32Array(n);
  const next = rng(seed);
  for (let i = 0; i < n; i++) a[i] = next() * 2 * scale;
  return a;
}

/**
 * A state dict of seeded entries for `shapes` (a module's stateDictShapes): entry i is
 * filled(its size, seed + i, scale), scale a number or a function of the entry's shape, so that
 * two modules of one configuration get the same weights from one seed.
 */
export function seededStateDict(shapes, seed, scale = 0.5) {
  return Object.fromEntries(shapes.map(({ name, shape }, i) =>
    [name, { data: filled(shape.reduce((a, b) => a * b, 1), seed + i, typeof scale === 'function' ? scale(shape) : scale), shape }]));
}
