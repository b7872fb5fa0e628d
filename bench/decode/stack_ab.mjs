#!/usr/bin/env node
// A/B of two builds on the decode stack (decode_stack_suite.mjs): two package roots, each a
// checkout with its own web/dist (e.g. `git worktree add /tmp/base <commit>`, then
// `bash scripts/build.sh` there), loaded in one Node process. Each setting gets a stack per build,
// made from the same weights and fed the same input; the two are timed a token each in turn, their
// order swapped every token, so a slow spell of the machine hits both alike. Prints each setting's
// median ms per token and B's time ÷ A's.
//
//   node bench/decode/stack_ab.mjs ROOT_A ROOT_B [--settings i8a8,i4a8] [--threads N] [--tokens N]
//        [--warmup N] [--layers N] [--cache N] [--shape E/h/hkv]
//
//   --settings LIST  decode_dtypes.mjs names (default i8a8,i4a8)
//   --tokens N       timed tokens per setting and build (default 24)
//   --warmup N       untimed tokens before them (default 48, as decode_stack.mjs)
//   --layers, --cache, --shape, --threads: as bench/decode/decode_stack.mjs (defaults 24, 512,
//                    2048/32/8, 1)
//
// The module is each root's package choice, or WEBATTENTION_WASM's (mt, mt-relaxed: pthreads, with
// --threads 2); Node runs the relaxed ones with --experimental-wasm-relaxed-simd.
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { exitWithUsage, parseFlags } from '../lib/run_env.mjs';
import { filled, median } from '../lib/suite.mjs';
import { dtypeNames } from './decode_dtypes.mjs';
import { createStacks, parseStackSizes, prefill, stackShape, timeToken, tokenRounds } from './decode_stack_suite.mjs';

const { values: v, positionals } = parseFlags(import.meta.url, process.argv.slice(2), {
  settings: 'i8a8,i4a8', threads: { type: 'string' }, tokens: { type: 'string' }, warmup: { type: 'string' }, layers: { type: 'string' },
  cache: { type: 'string' }, shape: { type: 'string' },
}, { allowPositionals: true });
const usage = (error) => exitWithUsage(import.meta.url, error);
if (positionals.length !== 2) usage('expected two package roots, ROOT_A and ROOT_B');
let settings, shape;
try {
  settings = dtypeNames(v.settings);
  shape = stackShape(parseStackSizes(v));
} catch (e) { usage(e.message); }
if (!settings.length) usage('--settings: expected at least one name');

const builds = [];
for (const root of positionals) {
  const { MultiHeadAttention } = await import(pathToFileURL(resolve(root, 'web/src/node.js')).href);
  builds.push({ root, stacks: await createStacks(MultiHeadAttention, shape, settings, () => {}) });
}
for (const { stacks } of builds) for (const stack of stacks) await prefill(stack, shape);
const x = filled(shape.E, 11, 1);
const times = builds.map(({ stacks }) => stacks.map(() => []));
await tokenRounds(shape, builds.flatMap((b) => b.stacks), async (t, timed) => {
  for (let s = 0; s < settings.length; s++) {
    for (const b of t % 2 ? [1, 0] : [0, 1]) {  // the builds' order swapped every token
      const ms = await timeToken(builds[b].stacks[s], x, shape.E);
      if (timed) times[b][s].push(ms);
    }
  }
});
console.log(`A ${builds[0].root}, B ${builds[1].root}; (E, h, hkv) = (${shape.E}, ${shape.h}, ${shape.hkv}), `
  + `${shape.layers} layers, cache ${shape.cacheLength}, threads ${shape.threads}, ${shape.tokens} tokens each after ${shape.warmup} untimed`);
settings.forEach((name, s) => {
  const [a, b] = [0, 1].map((i) => median([...times[i][s]].sort((p, q) => p - q)));
  console.log(`${name}: A ${a.toFixed(2)} ms, B ${b.toFixed(2)} ms, B/A time ${(b / a).toFixed(3)}`);
});
for (const { stacks } of builds) for (const stack of stacks) for (const { mha } of stack.layers) mha.dispose();
process.exit(0);
