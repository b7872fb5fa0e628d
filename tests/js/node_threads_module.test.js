// The pthreads modules under Node (web/src/node_threads.js), opt-in by WEBATTENTION_WASM: each
// case runs in a fresh Node process (child_node.js), as a user's would, and compares with the
// same script on the single-threaded SIMD module. A cached decode step splits its projections
// and its attention over the core's threads: every output column and head is still computed by
// one thread in one order, so the bits are the single-threaded module's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runNodeScript } from './child_node.js';

// A GQA layer with RoPE per weights setting: a prefill of 9 positions into its cache, then 3
// decode steps; prints { module, threads, outputs } as JSON. Weights and inputs from a fixed
// sequence (no Math.random: the two processes must see the same numbers).
const SCRIPT = `
import { MultiHeadAttention, capabilities } from '#webattention';
let seed = 7;
const next = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
const fill = (n) => Float32Array.from({ length: n }, next);
const E = 512, outputs = {};  // weights of 2^18 and more: a decode step splits them by panels (projection.cpp)
let threads = 0;
for (const [weightsDtype, activations, dtype] of [['float32', 'float32', 'float32'], ['int8', 'int8', 'int8'], ['int4', 'int8', 'int8'], ['float16', 'float32', 'float16']]) {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 8, numKvHeads: 2, rotary: { base: 10000 },
    backend: 'wasm', threads: 2, weightsDtype, activations });
  threads = mha.threads;
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
    [name, { data: fill(shape.reduce((a, b) => a * b, 1)), shape }])));
  const cache = mha.createCache({ batchSize: 1, maxLength: 16, dtype });
  const steps = [];
  for (const L of [9, 1, 1, 1]) {
    const x = { data: fill(L * E), shape: [1, L, E] };
    steps.push(Array.from((await mha.forward(x, x, x, { cache })).output.data));
  }
  outputs[weightsDtype + '/' + activations] = steps;
  mha.dispose();
}
console.log(JSON.stringify({ module: (await capabilities()).wasmModule, threads, outputs }));
`;

/** The script's JSON line on module `variant` (the child must exit by itself). */
function run(variant) {
  const child = runNodeScript(SCRIPT, { env: { WEBATTENTION_WASM: variant, WEBATTENTION_THREADS: '' } });
  assert.equal(child.signal, null, `the process on '${variant}' was killed (it did not exit by itself): ${child.stderr}`);
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout.trim().split('\n').at(-1));
}

test("WEBATTENTION_WASM=mt under Node: the core's own threads, cached decode steps bit for bit the simd module's, and the process exits by itself", () => {
  const single = run('simd');
  const threaded = run('mt');
  assert.equal(threaded.module, 'mt');
  assert.equal(threaded.threads, 2);
  assert.equal(single.threads, 2, 'the simd module with threads: 2 (its worker pool, which cached calls do not use)');
  for (const [setting, steps] of Object.entries(single.outputs)) {
    steps.forEach((expected, i) => assert.deepEqual(threaded.outputs[setting][i], expected, `${setting}, call ${i}`));
  }
});

test('WEBATTENTION_WASM under Node names the pthreads modules among the expected ones', () => {
  const child = runNodeScript(`
    import { MultiHeadAttention } from '#webattention';
    try { await MultiHeadAttention.create({ embedDim: 8, numHeads: 2 }); } catch (e) { console.log(JSON.stringify({ name: e.name, expected: e.expected })); }
  `, { env: { WEBATTENTION_WASM: 'mt2' } });
  const { name, expected } = JSON.parse(child.stdout.trim());
  assert.equal(name, 'OptionError');
  assert.ok(expected.includes('mt') && expected.includes('mt-relaxed') && expected.includes('simd'), String(expected));
});
