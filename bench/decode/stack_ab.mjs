#!/usr/bin/env node
// A/B of two builds on the decode stack (decode_stack_suite.mjs): two package roots, each a
// checkout with its own web/dist (e.g. `git worktree add /tmp/base <commit>`, then
// `bash scripts/build.sh` there). Each setting gets a stack per build, made from the same weights
// and fed the same input. Prints each setting's median ms per token and B's time ÷ A's.
//
//   node bench/decode/stack_ab.mjs ROOT_A ROOT_B [--processes N] [--settings i8a8,i4a8] [--threads N]
//        [--tokens N] [--warmup N] [--layers N] [--cache N] [--shape E/h/hkv]
//
//   --processes N    each build in processes of its own, N pairs run in turn (A B, B A, A B, ...),
//                    every setting interleaved token by token inside each process; prints each
//                    pair's B/A, their median and, with f32 among the settings, each build's
//                    speed-up over f32 in its own processes. Without it (0, the default) both builds
//                    run in one process, a token each in turn, their order swapped every token:
//                    quicker, but on a Xeon VM that favoured the build timed second by 5-10 % (two
//                    WASM instances side by side), where processes alternated agreed run to run.
//   --settings LIST  decode_dtypes.mjs names (default i8a8,i4a8)
//   --tokens N       timed tokens per setting and build (default 24)
//   --warmup N       untimed tokens before them (default 48, as decode_stack.mjs)
//   --layers, --cache, --shape, --threads: as bench/decode/decode_stack.mjs (defaults 24, 512,
//                    2048/32/8, 1)
//
// The module is each root's package choice, or WEBATTENTION_WASM's (mt, mt-relaxed: pthreads, with
// --threads 2); Node runs the relaxed ones with --experimental-wasm-relaxed-simd (the processes
// get this one's Node flags).
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { exitWithUsage, parseFlags, runChild } from '../lib/run_env.mjs';
import { filled, median } from '../lib/suite.mjs';
import { dtypeNames } from './decode_dtypes.mjs';
import { createStacks, parseStackSizes, prefill, stackShape, timeToken, tokenRounds } from './decode_stack_suite.mjs';

const SIZE_FLAGS = ['threads', 'tokens', 'warmup', 'layers', 'cache', 'shape'];
const { values: v, positionals } = parseFlags(import.meta.url, process.argv.slice(2), {
  settings: 'i8a8,i4a8', processes: '0', child: { type: 'boolean', default: false },
  ...Object.fromEntries(SIZE_FLAGS.map((name) => [name, { type: 'string' }])),
}, { allowPositionals: true });
const usage = (error) => exitWithUsage(import.meta.url, error);
const rootCount = v.child ? 1 : 2;
if (positionals.length !== rootCount) usage(v.child ? 'expected one package root' : 'expected two package roots, ROOT_A and ROOT_B');
let settings, shape;
try {
  settings = dtypeNames(v.settings);
  shape = stackShape(parseStackSizes(v));
} catch (e) { usage(e.message); }
if (!settings.length) usage('--settings: expected at least one name');
const processes = Number(v.processes);
if (!Number.isInteger(processes) || processes < 0) usage(`--processes: expected a whole number >= 0, got ${v.processes}`);

// times[b][s]: build b's timed tokens of setting s, the builds (package roots) in one process.
async function timeBuilds(packageRoots) {
  const builds = [];
  for (const root of packageRoots) {
    const { MultiHeadAttention } = await import(pathToFileURL(resolve(root, 'web/src/node.js')).href);
    builds.push({ root, stacks: await createStacks(MultiHeadAttention, shape, settings, () => {}) });
  }
  for (const { stacks } of builds) for (const stack of stacks) await prefill(stack, shape);
  const x = filled(shape.E, 11, 1);
  const times = builds.map(({ stacks }) => stacks.map(() => []));
  await tokenRounds(shape, builds.flatMap((b) => b.stacks), async (t, timed) => {
    for (let s = 0; s < settings.length; s++) {
      for (const b of t % 2 ? [...builds.keys()].reverse() : builds.keys()) {  // the builds' order swapped every token
        const ms = await timeToken(builds[b].stacks[s], x, shape.E);
        if (timed) times[b][s].push(ms);
      }
    }
  });
  for (const { stacks } of builds) for (const stack of stacks) for (const { mha } of stack.layers) mha.dispose();
  return times;
}

const medianOf = (values) => median([...values].sort((p, q) => p - q));

// One process of --processes: root's median ms per setting, as JSON on the last line.
async function childRun(root) {
  const [times] = await timeBuilds([root]);
  console.log(JSON.stringify(times.map(medianOf)));
}

// This script again on one root, with the same settings and sizes (run_env.mjs's runChild).
function runProcess(root) {
  const flags = ['--settings', settings.join(','), ...SIZE_FLAGS.filter((k) => v[k] !== undefined).flatMap((k) => [`--${k}`, v[k]])];
  return runChild(import.meta.url, [root, ...flags]);
}

function header() {
  const [a, b] = positionals;
  return `A ${a}, B ${b}; (E, h, hkv) = (${shape.E}, ${shape.h}, ${shape.hkv}), ${shape.layers} layers, cache ${shape.cacheLength}, `
    + `threads ${shape.threads}, ${shape.tokens} tokens each after ${shape.warmup} untimed`;
}

async function oneProcess() {
  const times = await timeBuilds(positionals);
  console.log(`${header()}, both builds in this process`);
  settings.forEach((name, s) => {
    const [a, b] = [0, 1].map((i) => medianOf(times[i][s]));
    console.log(`${name}: A ${a.toFixed(2)} ms, B ${b.toFixed(2)} ms, B/A time ${(b / a).toFixed(3)}`);
  });
}

async function alternatedProcesses() {
  const runs = [[], []];  // runs[b][pair]: build b's medians per setting in that pair's process
  for (let pair = 0; pair < processes; pair++) {
    for (const b of pair % 2 ? [1, 0] : [0, 1]) runs[b].push(runProcess(positionals[b]));
    const ratios = settings.map((name, s) => `${name} ${(runs[1][pair][s] / runs[0][pair][s]).toFixed(3)}`);
    console.error(`pair ${pair + 1} of ${processes}, B/A time: ${ratios.join(', ')}`);
  }
  console.log(`${header()}, ${processes} pairs of processes, alternated`);
  const f32 = settings.indexOf('f32');
  settings.forEach((name, s) => {
    const ms = runs.map((r) => r.map((medians) => medians[s]));
    const ratios = ms[0].map((a, pair) => ms[1][pair] / a);
    const speedUps = f32 >= 0 && s !== f32
      ? `; speed-up over f32, A ${runs[0].map((m) => (m[f32] / m[s]).toFixed(2)).join(' ')}, B ${runs[1].map((m) => (m[f32] / m[s]).toFixed(2)).join(' ')}`
      : '';
    console.log(`${name}: A ${ms[0].map((x) => x.toFixed(2)).join(' ')} ms, B ${ms[1].map((x) => x.toFixed(2)).join(' ')} ms; `
      + `B/A time ${ratios.map((r) => r.toFixed(3)).join(' ')}, median ${medianOf(ratios).toFixed(3)}${speedUps}`);
  });
}

if (v.child) await childRun(positionals[0]);
else if (processes > 0) await alternatedProcesses();
else await oneProcess();
process.exit(0);
