#!/usr/bin/env node
// Prefill with int8 activations (create({ activations: 'int8' }), docs/attention-math.md §11)
// against float32: one uncached self-attention forward of L rows (causal), float32, int8 and int4
// weights, the narrow ones with int8 activations too, one process, the variants interleaved round
// by round (the table: each variant's median round and its fastest; on a shared machine the
// fastest is the least preempted). Beside each forward, where its time goes: the output
// projection alone (projectOutput, the core's projection entry over [L, E] rows), scaled by the
// weights' count to all four projections (Q, K, V and O have the same kernel and rows), and the
// rest (attention, the row quantisation inside the act8 projections, copies). One thread.
//
//   node bench/prefill/prefill_activations.mjs [--configs 768,12,12;2048,32,8] [--length 512]
//                                              [--rounds 7] [--variants f32,int8,i8a8,i4a8]
//                                              [--before <package root>]
//
//   --before  another build of the package (e.g. a worktree of the commit before a change, built):
//             its variants except f32 are timed too, in the same rounds, named "before …"
//
// Which WASM module runs: WEBATTENTION_WASM=simd|relaxed|scalar (default simd). Weights and inputs
// are bench/decode/decode_suite.mjs's, so E / h must be its head width.
import { HEAD_DIM, makeDecodeWeights, stateDict } from '../decode/decode_suite.mjs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { exitWithUsage, parseFlags, ROOT } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

/** The variants timed: create() options beside the shape. */
const VARIANTS = {
  f32: { name: 'f32', options: {} },
  int8: { name: 'int8', options: { weightsDtype: 'int8' } },
  int4: { name: 'int4', options: { weightsDtype: 'int4' } },
  i8a8: { name: 'int8 + act8', options: { weightsDtype: 'int8', activations: 'int8' } },
  i4a8: { name: 'int4 + act8', options: { weightsDtype: 'int4', activations: 'int8' } },
};

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  configs: { type: 'string', default: '768,12,12;2048,32,8' },
  length: { type: 'string', default: '512' },
  rounds: { type: 'string', default: '7' },
  variants: { type: 'string', default: 'f32,int8,i8a8,i4a8' },
  before: { type: 'string' },
});
const L = Number(v.length), rounds = Number(v.rounds);
const configs = v.configs.split(';').map((c) => c.split(',').map(Number));
for (const [E, h] of configs) {
  if (E !== h * HEAD_DIM) exitWithUsage(import.meta.url, `--configs: E must be h · ${HEAD_DIM}, got ${E},${h}`);
}
const variants = v.variants.split(',').map((name) => VARIANTS[name] ?? exitWithUsage(import.meta.url, `--variants: unknown '${name}'`));
const variant = process.env.WEBATTENTION_WASM || 'simd';

/** A build of the package at `root`: its public API, and its core and executor for projectOutput. */
async function loadBuild(root, label) {
  const at = (path) => import(pathToFileURL(resolve(root, path)).href);
  const [{ MultiHeadAttention }, { loadNodeCore }, { coreConfig, resolveMhaConfig }, { WasmExecutor }] = await Promise.all([
    at('web/dist/node.js'), at('web/src/node_core.js'), at('web/src/checks/module_config.js'), at('web/src/wasm/wasm_executor.js')]);
  const { core } = await loadNodeCore(variant);
  return { label, MultiHeadAttention, core, WasmExecutor, coreConfig, resolveMhaConfig };
}
const builds = [await loadBuild(ROOT, '')];
if (v.before) builds.push(await loadBuild(v.before, 'before '));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const timed = async (fn) => {
  const start = performance.now();
  await fn();
  return performance.now() - start;
};

for (const [E, h, hkv] of configs) {
  const x = { data: filled(L * E, 7 + E, 1), shape: [1, L, E] };
  const heads = filled(L * E, 11 + E, 1);
  const weights = makeDecodeWeights({ E, h, hkv });
  // Q and O are E × E, K and V E × hkv·d: all four in units of O's weights.
  const projectionsPerOutput = (2 * E + 2 * hkv * HEAD_DIM) / E;
  const runs = [];
  for (const build of builds) for (const { name, options } of variants) {
    if (build.label && name === 'f32') continue;
    const { MultiHeadAttention, core, WasmExecutor, coreConfig, resolveMhaConfig } = build;
    const shape = { embedDim: E, numHeads: h, numKvHeads: hkv, ...options };
    const mha = await MultiHeadAttention.create({ ...shape, threads: 1, backend: 'wasm' });
    mha.loadStateDict(stateDict(mha.stateDictShapes, weights));
    const config = resolveMhaConfig(shape);
    const exec = new WasmExecutor(core, config, coreConfig(config));
    exec.loadStateDict(Object.entries(stateDict(exec.parameterSpecs(), weights)).map(([name, data]) => ({ name, data })));
    const forward = () => mha.forward(x, x, x, { isCausal: true });
    const project = () => exec.projectOutput(heads, L);
    for (let i = 0; i < 2; i++) { await forward(); project(); }  // V8 optimises the kernels
    runs.push({ name: build.label + name, mha, exec, forward, project, ms: [], projMs: [] });
  }
  for (let round = 0; round < rounds; round++) {
    for (const run of runs) {
      run.ms.push(await timed(run.forward));
      run.projMs.push(await timed(run.project));
    }
  }
  const f32 = median(runs[0].ms), f32Best = Math.min(...runs[0].ms);
  console.log(`(${E}, ${h}, ${hkv}), L ${L} causal, module ${variant}, 1 thread: forward ms, median and fastest of ${rounds} rounds; `
    + `projections = projectOutput × ${projectionsPerOutput.toFixed(2)} (fastest), rest = fastest forward − projections`);
  for (const run of runs) {
    const ms = median(run.ms), best = Math.min(...run.ms), proj = Math.min(...run.projMs) * projectionsPerOutput;
    const gmac = (L * E * E * projectionsPerOutput) / 1e9;
    console.log(`  ${run.name.padEnd(19)} median ${ms.toFixed(1)} ms (${(f32 / ms).toFixed(2)}× f32)   fastest ${best.toFixed(1)} ms `
      + `(${(f32Best / best).toFixed(2)}× f32)   projections ${proj.toFixed(1)} ms (${(gmac / proj * 1e3).toFixed(1)} GMAC/s), rest ${(best - proj).toFixed(1)} ms`);
    run.mha.dispose();
    run.exec.dispose();
  }
}
