// cache.read() of a sliding-window cache whose ring has wrapped, against the same positions read
// from a cache that keeps everything: the module and inputs are seeded, so WASM and WebGPU run the
// very same sequence (tests/js/cache_read.test.js, tests/webgpu/node_checkpoints.test.mjs).
import { filled, seededStateDict } from './random.mjs';
import { rows } from './run_decode.mjs';
import { stored } from './storage.mjs';

export const WINDOW_CASE = {
  create: { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: { dim: 2 }, bias: { k: true, v: true } },
  B: 2, T: 100, window: 5, chunks: [30, 1, 60, 9],  // T past the ring's 72 slots: it wraps
};

/**
 * Feeds the case's sequence to a window cache and to a plain one (module options merged with
 * `create`). Resolves to { windowed, whole } = the two caches' read().
 */
export async function readWindowAndWhole(api, create = {}, cacheOptions = {}) {
  const { B, T, window, chunks } = WINDOW_CASE;
  const mha = await api.MultiHeadAttention.create({ ...WINDOW_CASE.create, ...create });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 40));
    const E = mha.config.embedDim;
    const x = { data: filled(B * T * E, 77), shape: [B, T, E] };
    const caches = {
      windowed: mha.createCache({ batchSize: B, window, ...cacheOptions }),
      whole: mha.createCache({ batchSize: B, maxLength: T, ...cacheOptions }),
    };
    const result = {};
    for (const [name, cache] of Object.entries(caches)) {
      let at = 0;
      for (const n of chunks) {
        const chunk = rows(x, at, n);
        await mha.forward(chunk, chunk, chunk, { cache });
        at += n;
      }
      result[name] = await cache.read();
    }
    return result;
  } finally {
    mha.dispose();
  }
}

/** Positions [first, T) of a read() [B, G, T, d] tensor. */
export function lastPositions({ data, shape: [B, G, T, d] }, first) {
  const n = T - first;
  const out = new Float32Array(B * G * n * d);
  for (let bg = 0; bg < B * G; bg++) out.set(data.subarray((bg * T + first) * d, (bg + 1) * T * d), bg * n * d);
  return { data: out, shape: [B, G, n, d] };
}

/**
 * The case's whole cache read from a float32 cache and from a `dtype` one (same module, same
 * sequence: the projected rows appended are the same floats): { float32, narrow, expected }, with
 * expected the float32 read as `dtype` storage holds it (docs/attention-math/storage.md §11: one int8
 * scale per position and K/V head, a row of d values).
 */
export async function readNarrowAndFloat32(api, dtype, create = {}) {
  const { whole: float32 } = await readWindowAndWhole(api, create);
  const { whole: narrow, windowed } = await readWindowAndWhole(api, create, { dtype });
  const storedAs = ({ data, shape }) => {
    const d = shape[3];
    return { data: Float32Array.from(stored(data, dtype, d, d)), shape };
  };
  return { float32, narrow, windowed, expected: { key: storedAs(float32.key), value: storedAs(float32.value) } };
}
