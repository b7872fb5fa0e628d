// One contender of bench/ab/modules_ab.mjs: the package's public API (a Node process or a Chromium
// page that loaded one WASM module) timing MultiHeadAttention.forward, B = 1, self-attention,
// the weights and input of bench/lib/suite.mjs.
import { filled, makeWeights } from '../lib/suite.mjs';

/** api: the package's exports; threads: create()'s `threads` option; options: more create() options (weightsDtype, activations). */
export async function contender(api, threads, options = {}) {
  const caps = await api.capabilities();
  let current = null;  // { key, mha, x }: one shape at a time, so the heap holds one model
  async function setUp(L, E, h) {
    const key = `${L},${E},${h}`;
    if (current?.key === key) return current;
    current?.mha.dispose();
    const mha = await api.MultiHeadAttention.create({ embedDim: E, numHeads: h, threads, backend: 'wasm', ...options });
    mha.loadStateDict(makeWeights(E));
    current = { key, mha, x: { data: filled(L * E, 2, 1), shape: [1, L, E] } };
    return current;
  }
  return {
    info: { wasmModule: caps.wasmModule, threads, options },
    /** ms of each of `reps` forwards of shape [L, E, h]. */
    async time([L, E, h], causal, reps) {
      const { mha, x } = await setUp(L, E, h);
      const ms = [];
      for (let r = 0; r < reps; r++) {
        const t0 = performance.now();
        await mha.forward(x, x, x, { isCausal: causal });
        ms.push(performance.now() - t0);
      }
      return ms;
    },
  };
}
