#!/usr/bin/env node
// Speculative decoding on WASM (issue 38): a verification step of 4 drafted tokens on a KV cache
// of n positions followed by cache.keep() of 2 of them, against plain decoding of the same 2
// accepted tokens (two steps of one token). Each round starts from the same n positions
// (truncate(n) after it, untimed); median ms per round, interleaved; four plain steps too (all 4
// drafts accepted). keep([0, 1]) keeps an accepted prefix (nothing moves); keep([0, 2]) moves a
// key, which is rotated again at its new position (RoPE) from the call's projected keys.
//
//   bash scripts/build.sh                        (once: web/dist)
//   node bench/decode/speculative.mjs [--config E,h,hkv] [--positions 512,2048] [--rounds 40]
import { importBuiltPackage, parseFlags } from '../lib/run_env.mjs';
import { filled, median } from '../lib/suite.mjs';

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  config: { type: 'string', default: '1024,16,4' },
  positions: { type: 'string', default: '512,2048' },
  rounds: { type: 'string', default: '40' },
});
const rounds = Number(v.rounds);
const [E, h, hkv] = v.config.split(',').map(Number);
const { MultiHeadAttention } = await importBuiltPackage();
const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, rotary: {}, threads: 1, backend: 'wasm' });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) =>
  [name, { data: filled(shape.reduce((a, b) => a * b, 1), 11 + i, 0.05), shape }])));
const rows = (data, n) => ({ data, shape: [1, n, E] });
const drafts = rows(filled(4 * E, 7, 1), 4);
const tokens = [0, 1, 2, 3].map((i) => rows(filled(E, 8 + i, 1), 1));

console.log(`(${E}, ${h}, ${hkv}) RoPE, float32 cache, 1 thread, median of ${rounds} rounds, Node ${process.version}`);
for (const n of v.positions.split(',').map(Number)) {
  const cache = mha.createCache({ maxLength: n + 8 });
  const x = filled(n * E, 5, 1);
  for (let at = 0; at < n; at += 512) {
    const t = rows(x.subarray(at * E, Math.min(n, at + 512) * E), Math.min(512, n - at));
    await mha.forward(t, t, t, { cache });
  }
  const variants = {
    'verify 4 + keep([0, 1])': () => {
      mha.forward(drafts, drafts, drafts, { cache });
      cache.keep([0, 1]);
    },
    'verify 4 + keep([0, 2])': () => {
      mha.forward(drafts, drafts, drafts, { cache });
      cache.keep([0, 2]);
    },
    'plain: 2 steps of 1': () => {
      for (const t of tokens.slice(0, 2)) mha.forward(t, t, t, { cache });
    },
    // Where all 4 drafts are accepted: what the verification step replaces at best.
    'plain: 4 steps of 1': () => {
      for (const t of tokens) mha.forward(t, t, t, { cache });
    },
  };
  const ms = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let r = 0; r <= rounds; r++) {
    for (const [name, run] of Object.entries(variants)) {
      const t0 = performance.now();
      run();
      const t = performance.now() - t0;
      if (r > 0) ms[name].push(t);
      cache.truncate(n);
    }
  }
  console.log(`n = ${n}: ${Object.entries(ms).map(([name, t]) => `${name} ${median(t.sort((a, b) => a - b)).toFixed(3)} ms`).join('; ')}`);
  cache.dispose();
}
mha.dispose();
