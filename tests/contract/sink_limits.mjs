// Attention sinks at their limits on any backend (tests/js/sink_limits.test.js on the WASM modules
// and the pool, tests/webgpu/node_sink_limits.test.mjs on WebGPU), docs/attention-math/scores.md §10: a
// +Inf sink is a StateDictError naming `sinks` (as float32 and as float16 bits 0x7c00) that leaves
// the module with its previous weights; -Inf (or the lowest float32) is no sink; a NaN sink makes its head's rows NaN
// (WASM only: on WebGPU NaN follows no rule, docs/webgpu.md).
import { sameBits } from './compare.mjs';
import { filled, seededStateDict } from './random.mjs';

const CREATE = { embedDim: 8, numHeads: 2, sinks: true };
const B = 2, L = 3;

/** The state dict of a module with seeded entries (seed offset `seed`), sinks replaced by `sinks`. */
function stateDict(mha, seed, sinks) {
  const sd = seededStateDict(mha.stateDictShapes, seed);
  if (sinks) sd.sinks = sinks;
  return sd;
}

/** Self-attention over seeded rows, batch 0's keys all masked, per-head weights. */
async function run(mha) {
  const x = { data: filled(B * L * 8, 77), shape: [B, L, 8] };
  const keyPaddingMask = { data: new Uint8Array([1, 1, 1, 0, 0, 1]), shape: [B, L] };
  const { output, attnWeights } = await mha.forward(x, x, x, { keyPaddingMask, needWeights: true, averageAttnWeights: false });
  return { output: output.data, weights: attnWeights.data };
}


/**
 * Loads a +Inf sink three ways (float32; float16 0x7c00; under a prefix, with every other entry
 * changed): each throws a StateDictError naming the key and head 1, and the module's next forward
 * gives the bits it gave before. Throws (assert-style) on any difference.
 */
export async function assertInfiniteSinkRefused(api, create = {}) {
  const mha = await api.MultiHeadAttention.create({ ...CREATE, ...create });
  try {
    mha.loadStateDict(stateDict(mha, 10, { data: new Float32Array([0.5, -1]), shape: [2] }));
    const before = await run(mha);
    const prefixed = Object.fromEntries(Object.entries(stateDict(mha, 40, { data: new Float32Array([0, Infinity]), shape: [2] }))
      .map(([name, t]) => [`layers.0.${name}`, t]));
    for (const [sd, options, key] of [
      [stateDict(mha, 10, { data: new Float32Array([0.5, Infinity]), shape: [2] }), undefined, 'sinks'],
      [stateDict(mha, 10, { data: new Uint16Array([0x3800, 0x7c00]), shape: [2], dtype: 'float16' }), undefined, 'sinks'],
      [prefixed, { prefix: 'layers.0.' }, 'layers.0.sinks'],
    ]) {
      let error = null;
      try {
        mha.loadStateDict(sd, options);
      } catch (e) {
        error = e;
      }
      if (!(error instanceof api.StateDictError) || error.argument !== key || !error.message.includes('Infinity at [1]')) {
        throw new Error(`a +Inf sink (${key}) must be a StateDictError naming it and head 1, got ${error}`);
      }
      const after = await run(mha);
      if (!sameBits(after.output, before.output) || !sameBits(after.weights, before.weights)) {
        throw new Error(`the module changed after a refused +Inf sink (${key})`);
      }
    }
  } finally {
    mha.dispose();
  }
}

/** Sinks that take no mass: -Inf, and the lowest float32 (below WebGPU's mask sentinel). */
export const NO_MASS_SINKS = [-Infinity, -3.4028234663852886e38];

/**
 * Both heads' sinks `sink` (one of NO_MASS_SINKS) against the same weights without sinks: the
 * same outputs and weights, a row with every key masked included (zero heads, zero weights).
 * Resolves to [{ what, actual, expected }].
 */
export async function noMassSinkPairs(api, sink, create = {}) {
  const withSinks = await api.MultiHeadAttention.create({ ...CREATE, ...create });
  const without = await api.MultiHeadAttention.create({ ...CREATE, ...create, sinks: false });
  try {
    withSinks.loadStateDict(stateDict(withSinks, 10, { data: new Float32Array([sink, sink]), shape: [2] }));
    const plain = stateDict(without, 10);
    without.loadStateDict(plain);
    const [a, b] = [await run(withSinks), await run(without)];
    return [{ what: 'output', actual: a.output, expected: b.output }, { what: 'weights', actual: a.weights, expected: b.weights }];
  } finally {
    withSinks.dispose();
    without.dispose();
  }
}

/**
 * A NaN sink on head 1 (head 0's is 0): head 1's weights are NaN in every row with an allowed
 * key, head 0's finite; so are those rows' outputs (out_proj mixes the heads). Resolves to
 * { weights, output } of batch 1 (batch 0 has every key masked: B·h·L·S weights).
 */
export async function nanSinkRows(api, create = {}) {
  const mha = await api.MultiHeadAttention.create({ ...CREATE, ...create });
  try {
    mha.loadStateDict(stateDict(mha, 10, { data: new Float32Array([0, NaN]), shape: [2] }));
    const { output, weights } = await run(mha);
    return { head0: weights.subarray(2 * L * L, 3 * L * L), head1: weights.subarray(3 * L * L), output: output.subarray(L * 8) };
  } finally {
    mha.dispose();
  }
}
