#!/usr/bin/env node
// Prefill with int8 activations (create({ activations: 'int8' }), docs/attention-math/storage.md §11)
// against float32: one uncached self-attention forward of L rows (causal), float32, int8 and int4
// weights, the narrow ones with int8 activations too, one thread, the variants interleaved round
// by round (the table: each variant's median round and its fastest; on a shared machine the
// fastest is the least preempted). What is timed: bench/prefill/prefill_activations_suite.mjs.
// In Node, beside each forward, where its time goes: the output projection alone (projectOutput,
// the core's projection entry over [L, E] rows), scaled by the weights' count to all four
// projections (Q, K, V and O have the same kernel and rows), and the rest (attention, the row
// quantisation inside the act8 projections, copies).
//
//   node bench/prefill/prefill_activations.mjs [--node] [--browser] [--firefox] [--wasm M]
//        [--configs 768,12,12;2048,32,8] [--length 512] [--rounds 7] [--variants f32,int8,i8a8,i4a8]
//        [--before <package root>] [--json FILE]
//
//   (no engine flag)  Node, this process; the module: WEBATTENTION_WASM=simd|relaxed|scalar (default
//                     simd; relaxed needs node --experimental-wasm-relaxed-simd)
//   --browser         headless Chromium (bench/browser/suite.html), --firefox headless Firefox ESR:
//                     the forwards only; --wasm M the page's module (default simd; relaxed)
//   --before          Node only: another build of the package (e.g. a worktree of the commit before
//                     a change, built): its variants except f32 are timed too, in the same rounds,
//                     named "before …"
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { exitWithUsage, parseFlags, ROOT, runAndExit } from '../lib/run_env.mjs';
import { engineTitle, engineVersion, runBenchPage } from '../lib/browser_page.mjs';
import { HEAD_DIM, stateDict } from '../decode/decode_suite.mjs';
import { parseConfigs, parseVariants, projectionsPerOutput, timePrefillConfig } from './prefill_activations_suite.mjs';
import { filled } from '../lib/suite.mjs';

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  node: { type: 'boolean', default: false }, browser: { type: 'boolean', default: false }, firefox: { type: 'boolean', default: false },
  wasm: { type: 'string' }, configs: { type: 'string', default: '768,12,12;2048,32,8' }, length: { type: 'string', default: '512' },
  rounds: { type: 'string', default: '7' }, variants: { type: 'string', default: 'f32,int8,i8a8,i4a8' }, before: { type: 'string' },
  json: { type: 'string' }, timeout: { type: 'string', default: '3600' },
});
const L = Number(v.length), rounds = Number(v.rounds);
let configs, variants;
try {
  configs = parseConfigs(v.configs);
  variants = parseVariants(v.variants);
} catch (e) { exitWithUsage(import.meta.url, e.message); }
if (v.before && (v.browser || v.firefox)) exitWithUsage(import.meta.url, '--before: Node only');
const opts = { node: v.node || (!v.browser && !v.firefox), browser: v.browser, firefox: v.firefox, json: v.json ?? null, timeoutS: Number(v.timeout) };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Prints one configuration's rows; projections where the rows have them. */
function print(runtime, { E, h, hkv, rows }) {
  const per = projectionsPerOutput(E, hkv);
  const f32 = median(rows[0].ms), f32Best = Math.min(...rows[0].ms);
  console.log(`(${E}, ${h}, ${hkv}), L ${L} causal, ${runtime}, 1 thread: forward ms, median and fastest of ${rounds} rounds`
    + (rows[0].projMs ? `; projections = projectOutput × ${per.toFixed(2)} (fastest), rest = fastest forward − projections` : ''));
  for (const row of rows) {
    const ms = median(row.ms), best = Math.min(...row.ms);
    let line = `  ${row.name.padEnd(19)} median ${ms.toFixed(1)} ms (${(f32 / ms).toFixed(2)}× f32)   fastest ${best.toFixed(1)} ms (${(f32Best / best).toFixed(2)}× f32)`;
    if (row.projMs) {
      const proj = Math.min(...row.projMs) * per, gmac = (L * E * E * per) / 1e9;
      line += `   projections ${proj.toFixed(1)} ms (${(gmac / proj * 1e3).toFixed(1)} GMAC/s), rest ${(best - proj).toFixed(1)} ms`;
    }
    console.log(line);
  }
}

/** A build of the package at `root`: its public API, and a projector through its core and executor (projectOutput). */
async function loadBuild(root, label) {
  const at = (path) => import(pathToFileURL(resolve(root, path)).href);
  const [{ MultiHeadAttention }, { loadNodeCore }, { coreConfig, resolveMhaConfig }, { WasmExecutor }] = await Promise.all([
    at('web/dist/node.js'), at('web/src/node_core.js'), at('web/src/checks/module_config.js'), at('web/src/wasm/wasm_executor.js')]);
  const { core } = await loadNodeCore(process.env.WEBATTENTION_WASM || 'simd');
  const projector = (shape, weights) => {
    const config = resolveMhaConfig(shape);
    const exec = new WasmExecutor(core, config, coreConfig(config));
    exec.loadStateDict(Object.entries(stateDict(exec.parameterSpecs(), weights)).map(([name, data]) => ({ name, data })));
    const heads = filled(L * shape.numHeads * HEAD_DIM, 11 + shape.embedDim, 1);
    return { project: () => exec.projectOutput(heads, L), dispose: () => exec.dispose() };
  };
  return { label, MultiHeadAttention, projector };
}

async function runNode() {
  const builds = [await loadBuild(ROOT, '')];
  if (v.before) builds.push(await loadBuild(v.before, 'before '));
  const results = [];
  for (const [E, h, hkv] of configs) {
    const rows = await timePrefillConfig(builds, { E, h, hkv, L, rounds, variants });
    results.push({ E, h, hkv, L, rows });
    print(`Node ${process.version}, module ${process.env.WEBATTENTION_WASM || 'simd'}`, results.at(-1));
  }
  return { results };
}

async function runBrowser(_opts, _common, engine) {
  const q = new URLSearchParams({ suite: 'prefill_activations', configs: v.configs, length: String(L), rounds: String(rounds),
    variants: v.variants, wasm: v.wasm ?? 'simd' });
  const { result } = await runBenchPage(engine, { script: 'prefill_activations.mjs', path: '/bench/browser/suite.html', query: q,
    resultName: '__prefillActivations', logPrefix: '[prefill_activations] ', timeoutS: opts.timeoutS });
  const runtime = `${engineVersion(engine, result.env.userAgent)} headless, module ${v.wasm ?? 'simd'}`;
  console.log(`\n== ${engineTitle(engine)} ==`);
  for (const r of result.results) print(runtime, r);
  return result;
}

await runAndExit('prefill_activations.mjs', opts, { runNode, runBrowser });
