// The output bits of int8 activations calls (create({ activations: 'int8' }), docs/attention-math/storage.md
// §11) with int4 and int8 weights, for comparing WASM modules and engine tiers: every module must
// give the projections' same bits (the integer block sums are exact, the f32 order is the rule's).
// Attention itself may differ in its last bits between modules (the relaxed ones fuse its
// multiply-adds), so each batch entry is one query attending one key: its output is V's row exactly,
// and the call's output is out_proj(V projection(x)), both over all the batch's rows. Shapes that
// reach each path of the kernels: one row (a decode step), a row block of three, nine rows (a
// panel widened once); weight rows in whole blocks, a partial last block, and one that ends
// mid-group of four rows. `api` is the package's entry (Node or browser); resolves to
// { [case name]: number[] }, each output's float32 bits.
import { randomTensor, rng } from './random.mjs';

const SHAPES = [[64, 2], [48, 2], [42, 2]];  // [embedDim, numHeads]: 2, 1.5 and 1.31 blocks of 32
const ROWS = [1, 3, 9];

const bitsOf = (data) => Array.from(new Uint32Array(Float32Array.from(data).buffer));

async function module(api, E, h, weightsDtype, seed) {
  const mha = await api.MultiHeadAttention.create({ embedDim: E, numHeads: h, weightsDtype, activations: 'int8', backend: 'wasm' });
  const next = rng(seed);
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)])));
  return mha;
}

export async function act8Bits(api) {
  const out = {};
  let seed = 1;
  for (const weightsDtype of ['int4', 'int8']) {
    for (const [E, h] of SHAPES) {
      const mha = await module(api, E, h, weightsDtype, seed++);
      try {
        for (const B of ROWS) {
          const x = randomTensor([B, 1, E], rng(seed++), 3);
          out[`${weightsDtype} E${E} rows ${B}`] = bitsOf((await mha.forward(x, x, x)).output.data);
        }
      } finally {
        mha.dispose();
      }
    }
  }
  return out;
}
