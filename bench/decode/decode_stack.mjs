#!/usr/bin/env node
// Model-sized decode: ms per token through a stack of attention layers (24 at E 2048, 32 heads,
// 8 KV heads, RoPE, caches of 512), every storage setting in one process, interleaved, against
// its memory bound. What is measured and why: bench/decode/decode_stack_suite.mjs.
//
//   bash scripts/build.sh                    (once: web/dist, this package's WASM)
//   node bench/decode/decode_stack.mjs [--node] [--browser] [--firefox] [--settings f32,f16,i8,i4]
//        [--layers N] [--tokens N] [--warmup N] [--cache N] [--shape E/h/hkv] [--wasm M] [--markdown] [--json FILE]
//        [--fresh-outputs] [--timeout S]
//
//   (no flag)        run in Node (this process: one thread, the package's single-threaded module)
//   --browser        headless Chromium (bench/browser/suite.html; cross-origin isolated)
//   --firefox        headless Firefox ESR, the same page
//   --settings LIST  decode_dtypes.mjs names (weights + cache dtype [+ activations]; default
//                    f32,f16,i8,i8a8,i4,i4a8); f32 first
//   --wasm M         the module (the page's default simd, Node's its own choice; mt or mt-relaxed:
//                    pthreads, in Node too; Node takes relaxed ones with --experimental-wasm-relaxed-simd)
//   --layers N       layers in each stack (default 24: ~1 GB of float32 weights)
//   --tokens N       timed tokens per setting (default 24)
//   --warmup N       untimed tokens per setting before them (default 48: the engine's tier-up,
//                    decode_stack_suite.mjs's STACK_DEFAULTS says why; 0 times from the first)
//   --cache N        cached positions per layer (default 512)
//   --threads N      create()'s threads (default 1; with --wasm mt, 2 runs the pthreads module on two)
//   --shape E/h/hkv  embedding width, heads, KV heads (default 2048/32/8; head width 64): a small
//                    E (64/1/1) leaves each layer's fixed cost (the JS call, the glue) per token
//   --fresh-outputs  every forward() makes a new output array (default: each layer writes into an
//                    array of its own, forward's `out`, as a model's loop would)
import { parseDtypes } from './decode_dtypes.mjs';
import { parseStackSizes, runDecodeStack } from './decode_stack_suite.mjs';
import { exitWithUsage, loadAverage, parseFlags, runAndExit } from '../lib/run_env.mjs';
import { engineTitle, engineVersion, runBenchPage } from '../lib/browser_page.mjs';
import { markdownTable } from '../lib/table.mjs';
import { membwWasm } from '../limits/membw/wasm_file.mjs';

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  node: { type: 'boolean', default: false }, browser: { type: 'boolean', default: false }, firefox: { type: 'boolean', default: false },
  settings: { type: 'string', default: 'f32,f16,i8,i8a8,i4,i4a8' }, wasm: { type: 'string' }, layers: { type: 'string' },
  tokens: { type: 'string' }, warmup: { type: 'string' }, cache: { type: 'string' }, threads: { type: 'string' }, shape: { type: 'string' }, markdown: { type: 'boolean', default: false }, json: { type: 'string' },
  'fresh-outputs': { type: 'boolean', default: false },
  timeout: { type: 'string', default: '3600' },
});
const usage = (error) => exitWithUsage(import.meta.url, error);
let settings;
try { settings = parseDtypes(v.settings); } catch (e) { usage(e.message); }
let sizes;
try { sizes = parseStackSizes(v); } catch (e) { usage(e.message); }
const opts = { node: v.node || (!v.browser && !v.firefox), browser: v.browser, firefox: v.firefox, json: v.json ?? null, timeoutS: Number(v.timeout) };

function print(title, runtime, result) {
  const { shape, bandwidth, rows } = result;
  const f32 = rows[0].ms;
  const header = [`(E, h, hkv) = (${shape.E}, ${shape.h}, ${shape.hkv}), head width ${shape.headDim}, RoPE, ${shape.layers} layers, `
    + `cache ${shape.cacheLength} (+ up to ${shape.drift}), ${shape.tokens} tokens per setting after ${shape.warmup} untimed, interleaved, `
    + `output arrays ${result.outputs === 'reused' ? "each layer's own (forward's out)" : 'new per call'}`,
  `${runtime}; one-thread read bandwidth ${bandwidth.gbps.toFixed(1)} GB/s (best of ${bandwidth.passes} passes over ${bandwidth.megabytes} MiB); `
    + `load average at the end ${loadAverage()}`];
  const table = [['setting', 'ms/token (median)', 'best', 'speed-up over f32', 'MB read/token', 'bound ms', 'ms / bound', 'max |Δ| vs f32'],
    ...rows.map((r) => [r.name, r.ms.toFixed(2), r.best.toFixed(2), `${(f32 / r.ms).toFixed(2)}×`, (r.bytes / 1e6).toFixed(0),
      r.boundMs.toFixed(2), `${(r.ms / r.boundMs).toFixed(2)}×`, r.diff.toExponential(1)])];
  console.log(`\n== ${title} ==\n${header.join('\n')}\n`);
  console.log(table.map((r) => r.map((c, i) => (i ? c.padStart(table[0][i].length) : c.padEnd(8))).join('  ')).join('\n'));
  if (v.markdown) console.log(`\n${header.map((h) => `- ${h}`).join('\n')}\n\n${markdownTable(table[0].map((head, i) => [head, (r) => r[i], i ? 'r' : 'l']), table.slice(1))}`);
  return { runtime, ...result };
}

async function runNode() {
  if (v.wasm) process.env.WEBATTENTION_WASM = v.wasm;  // read when the entry loads its module
  const { MultiHeadAttention } = await import('../../web/src/node.js');
  const result = await runDecodeStack({ MultiHeadAttention }, membwWasm(), { settings, ...sizes, freshOutputs: v['fresh-outputs'], log: (l) => console.log(`   ${l}`) });
  return print(`Node ${process.version}`, `Node ${process.version}, module ${process.env.WEBATTENTION_WASM ?? "the package's choice"}, threads ${result.shape.threads}`, result);
}

async function runBrowser(_opts, _common, engine) {
  membwWasm();  // built before the page fetches it
  const q = new URLSearchParams({ suite: 'decode_stack', settings: settings.join(','), wasm: v.wasm ?? 'simd', ...Object.fromEntries(Object.entries(sizes).map(([k, n]) => [k, String(n)])),
    ...(v['fresh-outputs'] ? { freshOutputs: '1' } : {}) });
  const { result } = await runBenchPage(engine, { script: 'decode_stack.mjs', path: '/bench/browser/suite.html', query: q,
    resultName: '__decodeStack', logPrefix: '[decode_stack] ', timeoutS: opts.timeoutS });
  const version = engineVersion(engine, result.env.userAgent);
  return print(engineTitle(engine), `${version} headless, module ${v.wasm ?? 'simd'}, threads ${result.shape.threads}`, result);
}

await runAndExit('decode_stack.mjs', opts, { runNode, runBrowser });
