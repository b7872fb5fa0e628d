#!/usr/bin/env node
// Against llama.cpp: its WASM build (npm @wllama/wllama, pinned in bench/package.json) and this
// package side by side in one browser page per (shape, n, threads), per layer of decode and of
// prefill. llama.cpp runs GGUFs written by scripts/write_gguf.mjs (a llama model: feed-forward
// width 64, vocabulary 256, so attention dominates; 8 layers and 1, (8 − 1) / 7 per layer);
// ours is an 8-layer attention stack ÷ 8 (decode_stack_suite.mjs), the same shape (head width 64,
// RoPE, GQA), dtype for dtype: F32 → f32, F16 → f16, Q8_0 → i8 and i8a8, Q4_0 → i4 and i4a8
// (int8 activations, as llama.cpp computes its quantised types). What each side times:
// bench/decode/llama_cpp_suite.mjs.
//
//   bash scripts/build.sh && npm --prefix bench install --no-audit --no-fund      (once)
//   node bench/decode/llama_cpp.mjs [--quick] [--firefox] [--relaxed] [--markdown] [--json FILE]
//        [--shapes 768/12/12,2048/32/8] [--cache 128,2048] [--threads 1,2] [--types F32,F16,Q8_0,Q4_0]
//        [--flash off,on] [--tokens 16] [--repeats 3] [--timeout S]
//
//   (no flag)       headless Chromium, every shape × cache × threads × type × flash setting
//   --quick         (768, 12, 12), n 128, 1 thread only (~2 min)
//   --firefox       headless Firefox ESR instead (the same page)
//   --shapes LIST   E/h/hkv triples
//   --cache LIST    n: the prompt (prefill) length, then decode over caches of n to n + tokens
//   --threads LIST  1: our simd module, llama.cpp n_threads 1; 2: our pthreads module (mt) with
//                   threads 2, llama.cpp n_threads 2 (the page is cross-origin isolated)
//   --relaxed       ours in the relaxed-SIMD modules instead (relaxed, mt-relaxed), as the package's
//                   browser entry picks them where the engine has relaxed SIMD; wllama's build is
//                   SIMD128, the default's like
//   --tokens N      generated tokens per llama.cpp completion, timed tokens per setting of ours
//   --repeats N     completions per llama.cpp model after a warm-up (the median is taken)
// GGUFs are written once into build/llama_cpp/ (kept: the same seed writes the same bytes).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkPeersInstalled, exitWithUsage, loadAverage, parseFlags, ROOT, runAndExit } from '../lib/run_env.mjs';
import { engineVersion, runBenchPage } from '../lib/browser_page.mjs';
import { markdownTable, plainTable } from '../lib/table.mjs';
import { llamaModel } from '../../scripts/write_gguf.mjs';
import { OUR_SETTINGS } from './llama_cpp_suite.mjs';

const SCRIPT = 'decode/llama_cpp.mjs';
const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  quick: { type: 'boolean', default: false }, firefox: { type: 'boolean', default: false }, markdown: { type: 'boolean', default: false },
  relaxed: { type: 'boolean', default: false },
  json: { type: 'string' }, shapes: '768/12/12,2048/32/8', cache: '128,2048', threads: '1,2', types: 'F32,F16,Q8_0,Q4_0',
  flash: 'off,on', tokens: '16', repeats: '3', timeout: '3600',
});
const usage = (error) => exitWithUsage(import.meta.url, error);

function positiveList(name, text) {
  const list = text.split(',').map(Number);
  if (!list.every((n) => Number.isInteger(n) && n > 0)) usage(`--${name}: expected positive integers, got '${text}'`);
  return list;
}

function parseOptions() {
  const shapes = (v.quick ? '768/12/12' : v.shapes).split(',').map((s) => {
    const [E, h, hkv] = positiveList('shapes', s.replace(/\//g, ','));
    if (hkv === undefined || E % h || h % hkv) usage(`--shapes: expected E/h/hkv with h | E and hkv | h, got '${s}'`);
    return { E, h, hkv };
  });
  const types = v.types.split(',');
  for (const t of types) if (!OUR_SETTINGS[t]) usage(`--types: unknown '${t}' (expected ${Object.keys(OUR_SETTINGS).join(', ')})`);
  const flash = v.flash.split(',');
  if (!flash.every((f) => f === 'off' || f === 'on')) usage(`--flash: expected off and/or on, got '${v.flash}'`);
  const threads = positiveList('threads', v.quick ? '1' : v.threads);
  if (!threads.every((t) => t <= 2)) usage('--threads: 1 or 2 (our pthreads module runs two)');
  return { shapes, types, flash, threads, cache: positiveList('cache', v.quick ? '128' : v.cache),
    tokens: positiveList('tokens', v.tokens)[0], repeats: positiveList('repeats', v.repeats)[0] };
}
const o = parseOptions();

/** The GGUF's file stem in build/llama_cpp/, written there unless it is already. */
function modelStem({ E, h, hkv }, layers, type) {
  const stem = `llama_E${E}_h${h}_kv${hkv}_ffn64_vocab256_L${layers}_${type}`;
  const dir = join(ROOT, 'build/llama_cpp'), file = join(dir, `${stem}.gguf`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    const { bytes } = llamaModel({ type, embed: E, heads: h, kvHeads: hkv, layers, ffn: 64, vocab: 256, context: 8192 });
    writeFileSync(file, bytes);
    console.log(`   wrote build/llama_cpp/${stem}.gguf (${(bytes.length / 1e6).toFixed(1)} MB)`);
  }
  return stem;
}

/** Our module for a thread count: simd or mt, or with --relaxed their relaxed-SIMD kinds. */
const ourModule = (threads) => ({ 1: v.relaxed ? 'relaxed' : 'simd', 2: v.relaxed ? 'mt-relaxed' : 'mt' })[threads];

/** One page: a shape, a cache length n and a thread count; every type and flash setting. */
async function runPage(engine, shape, n, threads) {
  const query = new URLSearchParams({ suite: 'llama_cpp', ...Object.fromEntries(Object.entries(shape).map(([k, x]) => [k, String(x)])), n: String(n),
    threads: String(threads), tokens: String(o.tokens), repeats: String(o.repeats), types: o.types.join(','),
    flash: o.flash.map((f) => (f === 'on' ? '1' : '0')).join(','), wasm: ourModule(threads),
    wllamaWasm: '/bench/node_modules/@wllama/wllama/esm/wasm/wllama.wasm' });
  for (const type of o.types) for (const layers of [8, 1]) query.set(`model${layers}_${type}`, modelStem(shape, layers, type));
  const { result } = await runBenchPage(engine, { script: SCRIPT, path: '/bench/browser/suite.html', query,
    resultName: '__llamaCpp', logPrefix: '[llama_cpp] ', timeoutS: Number(v.timeout) });
  return result;
}

const ratio = (a, b) => `${(a / b).toFixed(2)}×`;

/**
 * The table of one page's result: a row per type × flash setting × our setting of that width (ours
 * has no flash setting: the same figures on both flash rows).
 */
function rowsOf(result) {
  const { shape } = result;
  return result.llama.flatMap((l) => OUR_SETTINGS[l.type].map((name) => {
    const ours = result.ours.find((r) => r.name === name);
    const oursMs = ours.ms / 8, oursPrefillMs = ours.prefillMs / 8;
    return { type: l.type, dtype: ours.name, threads: shape.threads, flash: l.flash ? 'on' : 'off', llamaMs: l.decodeMsPerLayer, oursMs,
      llamaPrefill: (l.deep.promptN * 1000) / l.prefillMsPerLayer, oursPrefill: (shape.n * 1000) / oursPrefillMs,
      llama8: l.deep.decodeMs, llama1: l.shallow.decodeMs };
  }));
}

const COLUMNS = [
  ['type', (r) => `${r.type} / ${r.dtype}`, 'l'], ['threads', (r) => String(r.threads), 'r'], ['flash', (r) => r.flash, 'l'],
  ['llama.cpp ms/layer', (r) => r.llamaMs.toFixed(3), 'r'], ['ours ms/layer', (r) => r.oursMs.toFixed(3), 'r'],
  ['llama.cpp / ours', (r) => ratio(r.llamaMs, r.oursMs), 'r'],
  ['llama.cpp prefill tok/s/layer', (r) => r.llamaPrefill.toFixed(0), 'r'], ['ours prefill tok/s/layer', (r) => r.oursPrefill.toFixed(0), 'r'],
  ['llama.cpp 8L / 1L ms/token', (r) => `${r.llama8.toFixed(2)} / ${r.llama1.toFixed(2)}`, 'r'],
];

function print(title, tables) {
  console.log(`\n== ${title} ==`);
  for (const { shape, n, rows } of tables) {
    const head = `(E, h, hkv) = (${shape.E}, ${shape.h}, ${shape.hkv}), head width ${shape.E / shape.h}, n = ${n}`;
    console.log(`\n${head}\n${plainTable(COLUMNS, rows, { breakAfter: (a, b) => a.threads !== b.threads })}`);
    if (v.markdown) console.log(`\n${head}\n\n${markdownTable(COLUMNS, rows)}`);
  }
}

async function runBrowser(_opts, _common, engine) {
  checkPeersInstalled(SCRIPT, ['@wllama/wllama']);
  const tables = [];
  let version = '';
  for (const shape of o.shapes) {
    for (const n of o.cache) {
      const rows = [];
      for (const threads of o.threads) {
        console.log(`\n-- (${shape.E}, ${shape.h}, ${shape.hkv}), n ${n}, ${threads} thread${threads > 1 ? 's' : ''}`);
        const result = await runPage(engine, shape, n, threads);
        version = engineVersion(engine, result.env.userAgent);
        const measured = rowsOf(result);
        // Each page's rows as soon as they are measured: a long run stopped early still reports.
        console.log(plainTable(COLUMNS, measured));
        rows.push(...measured);
      }
      tables.push({ shape, n, rows });
    }
  }
  print(`${version} headless; llama.cpp: wllama's own timings (wall clock in its worker), ours: wall clock per forward, modules ${ourModule(1)} / ${ourModule(2)}; `
    + `${o.tokens} tokens per completion / setting, ${o.repeats} completions; load average at the end ${loadAverage()}`, tables);
  return { engine: version, tables };
}

await runAndExit(SCRIPT, { node: false, browser: !v.firefox, firefox: v.firefox, json: v.json ?? null },
  { runNode: null, runBrowser });
