// The order of calls is the order of effects, on any backend (tests/js/call_order.test.js on WASM
// and the worker pool, tests/webgpu/node_call_order.test.mjs on WebGPU): forward() made, then
// loadStateDict(sd2) without awaiting it, then forward() again: the first computes with sd1, the
// second with sd2, bit for bit as a module that only ever had that state dict computes.
import { filled, seededStateDict } from './random.mjs';

const CONFIG = { embedDim: 8, numHeads: 2 };
const B = 2, L = 3;

/** What a fresh module of `options` loaded with state dict seed `seed` outputs for x. */
async function reference(MultiHeadAttention, options, seed, x) {
  const mha = await MultiHeadAttention.create({ ...CONFIG, ...options });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, seed));
    return (await mha.forward(x, x, x)).output.data;
  } finally {
    mha.dispose();
  }
}

/**
 * Module of `options` loaded with sd1, `prepare(mha, x)` (brings it to a readiness state), then
 * forward, load sd2, forward, none awaited until all are made. Throws unless the first output is
 * sd1's and the second sd2's (same(a, b): bitwise equality).
 */
export async function assertLoadAfterCallKeepsOrder(MultiHeadAttention, options, prepare, same) {
  const x = { data: filled(B * L * CONFIG.embedDim, 21), shape: [B, L, CONFIG.embedDim] };
  const expected = [await reference(MultiHeadAttention, options, 1, x), await reference(MultiHeadAttention, options, 2, x)];
  if (same(expected[0], expected[1])) throw new Error('the two state dicts give one output');
  const mha = await MultiHeadAttention.create({ ...CONFIG, ...options });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 1));
    await prepare(mha, x);
    const before = mha.forward(x, x, x);
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 2));
    const after = mha.forward(x, x, x);
    const got = [(await before).output.data, (await after).output.data];
    got.forEach((output, i) => {
      if (!same(output, expected[i])) throw new Error(`call ${i + 1} did not compute with sd${i + 1}`);
    });
  } finally {
    mha.dispose();
  }
}
