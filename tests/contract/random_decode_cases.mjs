// Seeded random decode cases for 16- and 8-bit storage: a module of some weightsDtype and a KV cache
// of some dtype, fed a self-attention sequence chunk by chunk (run_decode.mjs), against the float64
// reference with the weights and the cached keys and values as stored (reference.mjs, storage.mjs).
// The values are coarse on purpose: inputs multiples of 2⁻⁵ in [-1, 1), weights and biases
// multiples of 2⁻⁷ in (-1, 1), each block of 32 weights along the input dimension holding one of
// ±127/128 (so its q8_0 scale is exactly 2⁻⁷ and its int8 values are the weights exactly). Every
// projected key and value is then exact in float32 whatever order a kernel sums in, so the core
// and the reference round or quantise the very same numbers: a key a hair's breadth from a
// rounding boundary cannot round one way in the core and the other in the reference.
import { mhaReference } from './reference.mjs';
import { rng } from './random.mjs';
import { parameterShapes } from './random_cases.mjs';

/** One case: { name, kind: 'decode', create, stateDict, cache, chunks, inputs: { query }, options, expected }. */
export function randomDecodeCase(seed, { weightsDtype = 'float32', cacheDtype = 'float32', activations = 'float32' } = {}) {
  const next = rng(seed);
  const u = () => next() + 0.5;
  const int = (lo, hi) => lo + Math.floor(u() * (hi - lo + 1));
  // Multiples of step in [-1, 1), kept within ±127/128 (the q8_0 anchor is then a block's largest).
  const coarse = (n, step) => Float32Array.from({ length: n }, () => Math.max(-127 / 128, Math.floor(next() * 2 / step) * step));

  const numHeads = int(1, 4), headDim = int(1, 9);
  const embedDim = numHeads * headDim;
  const bias = u() < 0.7;
  const B = int(1, 2), T = int(1, 24);
  const chunks = [];
  for (let left = T; left > 0; left -= chunks[chunks.length - 1]) chunks.push(Math.min(left, u() < 0.5 ? 1 : int(1, 8)));
  const stateDict = {};
  for (const { name, shape } of parameterShapes({ embedDim, numHeads, kdim: embedDim, vdim: embedDim, headDim, valueHeadDim: headDim, bias, packed: true })) {
    const data = coarse(shape.reduce((a, b) => a * b, 1), 2 ** -7);
    if (!name.endsWith('bias')) {
      const inDim = shape[1];
      for (let at = 0; at < data.length; at += inDim) {
        for (let b = 0; b < inDim; b += 32) data[at + b] = (u() < 0.5 ? -127 : 127) / 128;
      }
    }
    stateDict[name] = { data, shape };
  }
  const query = { data: coarse(B * T * embedDim, 2 ** -5), shape: [B, T, embedDim] };
  const options = u() < 0.5 ? { needWeights: true, averageAttnWeights: u() < 0.5 } : {};
  const create = { embedDim, numHeads, bias, ...(weightsDtype === 'float32' ? {} : { weightsDtype }), ...(activations === 'float32' ? {} : { activations }) };
  const config = { embedDim, numHeads, kdim: embedDim, vdim: embedDim, headDim, valueHeadDim: headDim, weightsDtype, activations };
  const { output, weights, outputSlack } = mhaReference(config, stateDict, query, query, query, { ...options, isCausal: true }, cacheDtype);
  return {
    name: `random decode seed ${seed} (${weightsDtype} weights, ${cacheDtype} cache${activations === 'float32' ? '' : `, ${activations} activations`})`,
    kind: 'decode', seed, create, stateDict,
    cache: { batchSize: B, maxLength: T + int(0, 3), ...(cacheDtype === 'float32' ? {} : { dtype: cacheDtype }) },
    chunks, inputs: { query }, options,
    expected: {
      output: { data: output, shape: [B, T, embedDim], ...(outputSlack ? { slack: outputSlack } : {}) },
      ...(weights ? { attnWeights: { data: weights, shape: options.averageAttnWeights === false ? [B, numHeads, T, T] : [B, T, T] } } : {}),
    },
  };
}
