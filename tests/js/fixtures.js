// Reads tests/fixtures/mha_parity.json (written by tests/fixtures/make_fixtures.py with PyTorch)
// and compares results against it; also the seeded random tensors the tests make for themselves.
import { readFileSync } from 'node:fs';

const dtypes = { float32: Float32Array, uint8: Uint8Array };

function decode({ dtype, shape, b64 }) {
  const bytes = Buffer.from(b64, 'base64');
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const Type = dtypes[dtype];
  return { data: new Type(copy.buffer, 0, copy.length / Type.BYTES_PER_ELEMENT), shape };
}

const decodeAll = (obj) => Object.fromEntries(Object.entries(obj ?? {}).map(([k, v]) =>
  [k, v && typeof v === 'object' && 'b64' in v ? decode(v) : v]));

export function loadFixtures() {
  const json = JSON.parse(readFileSync(new URL('../fixtures/mha_parity.json', import.meta.url), 'utf8'));
  return json.cases.map((c) => ({
    ...c,
    stateDict: decodeAll(c.stateDict),
    inputs: decodeAll(c.inputs),
    options: decodeAll(c.options),
    expected: decodeAll(c.expected),
  }));
}

/** Largest |a - b| / (1e-4 + 1e-4 |b|): within tolerance when <= 1. Also returns the max abs error. */
export function compare(actual, expected) {
  if (JSON.stringify(actual.shape) !== JSON.stringify(expected.shape)) {
    throw new Error(`shape ${JSON.stringify(actual.shape)} vs expected ${JSON.stringify(expected.shape)}`);
  }
  let ratio = 0;
  let abs = 0;
  for (let i = 0; i < expected.data.length; i++) {
    const a = actual.data[i];
    const b = expected.data[i];
    const err = Math.abs(a - b);
    if (!Number.isFinite(a)) return { ratio: Infinity, abs: Infinity, index: i };
    abs = Math.max(abs, err);
    ratio = Math.max(ratio, err / (1e-4 + 1e-4 * Math.abs(b)));
  }
  return { ratio, abs };
}

/** Seeded LCG giving values in [-0.5, 0.5): every run of a test sees the same numbers. */
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
