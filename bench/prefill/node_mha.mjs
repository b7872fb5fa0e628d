// MHA forward timing of this package in Node: warm median over a few runs per shape.
// FLOPs counted as 8·L·E² + 4·L²·E (projections + scores + weighted sum), as in the issues.
// Usage: node bench/prefill/node_mha.mjs [--causal] [--threads N|auto]   (default 1: the calling thread only)
// (node bench/prefill/run.mjs compares with ORT and tfjs)
// bench/ has its own package.json (the peers' dependencies), so the package self-reference
// 'webattention' does not resolve here; ../web/src/node.js is what it resolves to under Node.
import { MultiHeadAttention } from '../../web/src/node.js';
import { parseFlags } from '../lib/run_env.mjs';
import { filled, flops, makeWeights, mhaShapes } from '../lib/suite.mjs';

const { causal, threads: threadsArg } = parseFlags(import.meta.url, process.argv.slice(2), {
  causal: { type: 'boolean', default: false },
  threads: { type: 'string', default: '1' },
}).values;
const threads = threadsArg === 'auto' ? 'auto' : Number(threadsArg);

console.log(`shape (L, E, h)      ms (median)   GFLOP/s   threads ${threadsArg}${causal ? ', causal' : ''}`);
for (const [L, E, h] of mhaShapes('node_mha')) {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, threads });
  mha.loadStateDict(makeWeights(E));  // the same weights and input as bench/prefill/run.mjs
  const x = { data: filled(L * E, 2, 1), shape: [1, L, E] };
  // Two calls first: with threads > 1 the first one waits for the workers to start.
  for (let r = 0; r < 2; r++) await mha.forward(x, x, x, { isCausal: causal });
  const times = [];
  for (let r = 0; r < 7; r++) {
    const t0 = performance.now();
    await mha.forward(x, x, x, { isCausal: causal });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const ms = times[3];
  const gflops = flops(L, E) / (ms * 1e6);
  console.log(`(${L}, ${E}, ${h})`.padEnd(20), ms.toFixed(2).padStart(10), gflops.toFixed(1).padStart(12));
  mha.dispose();
}
