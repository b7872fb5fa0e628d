#!/usr/bin/env node
// Decode benchmark: ms per decoded token (one forward with L = 1 on a KV cache holding n
// positions) for webattention with its cache in each storage dtype (f32, f16, int8 weights and
// cache), webattention without one (recomputing K/V),
// onnxruntime-web's wasm EP with past/present K/V (com.microsoft.GroupQueryAttention), and the
// memory bound (bytes a step must read / the measured WASM read bandwidth). Also the prefill of
// 512 tokens with the cache against a plain causal forward. What is measured and how:
// bench/decode/decode_suite.mjs and bench/README.md ("Incremental decoding").
//
//   npm --prefix bench install --no-audit --no-fund      (once: onnxruntime-web, in bench/)
//   bash scripts/build.sh                                 (once: web/dist, this package's WASM)
//   node bench/decode/decode.mjs [--node] [--browser] [--firefox] [--quick] [--memory] [--budget MS] [--markdown] [--json FILE]
//                         [--timeout S] [--wasm M] [--dtypes f32,f16,i8]
//
//   (no flag)        run in Node (this process)
//   --browser        run in headless Chromium instead (bench/browser/suite.html?suite=decode, served by
//                    scripts/serve.mjs; /usr/bin/chromium unless CHROMIUM= says otherwise)
//   --firefox        run in headless Firefox (firefox-esr, tests/browser/browsers.mjs; FIREFOX=)
//   --node --browser --firefox  any of them, one after the other (what docs/performance/decode.md#decode records)
//   --quick          cache lengths 128 and 512 only (the full run has 128, 512, 2048, 8192)
//   --budget MS      time per cell for the timed steps (default 1500): runs = budget / warm
//                    time, at least 3, at most 100
//   --dtypes LIST    the storage dtypes timed with the cache, each a weightsDtype + cache dtype
//                    pair: f32 (float32 + float32), f16 (float16 + float16), i8 (int8 + int8);
//                    default all three; f32 is always timed (the others are compared with it)
//   --memory         only the memory table (Node): each dtype's WASM heap for its weights and a cache
//                    of 8192 positions, against §11's byte count, in a few seconds
//   --markdown       also print the tables as Markdown
//   --json FILE      also write { node?, browser?, firefox? } → { header, check, decode, prefill } to FILE
//   --timeout S      give up on the browser run after S seconds (default 1200)
//   --wasm M         webattention's WASM module (default: the package's choice in Node; 'simd'
//                    in the page, which is cross-origin isolated and would otherwise load 'mt')
//
// The bandwidth kernel (bench/limits/membw/membw.c) is built into build/membw/ on first use (emcc).
import { LAYOUT, checkText, runDecodeBench, runMemoryTable } from './decode_suite.mjs';
import { DTYPES, parseDtypes } from './decode_dtypes.mjs';
import { MEMORY_COLUMNS, formatDecode } from './decode_table.mjs';
import { markdownTable, plainTable } from '../lib/table.mjs';
import { SUITE_FLAGS, checkPeersInstalled, exitWithUsage, loadAverage, parseFlags, runAndExit } from '../lib/run_env.mjs';
import { engineTitle, engineVersion, runBenchPage } from '../lib/browser_page.mjs';
import { membwWasm } from '../limits/membw/wasm_file.mjs';

function parseOptions(argv) {
  const { values: v } = parseFlags(import.meta.url, argv, {
    ...SUITE_FLAGS,
    budget: '1500',
    timeout: '1200',
    dtypes: { type: 'string', default: Object.keys(DTYPES).join(',') },
    memory: { type: 'boolean', default: false },
  });
  const opts = { node: v.node, browser: v.browser, firefox: v.firefox, quick: v.quick, budgetMs: Number(v.budget), markdown: v.markdown,
    json: v.json ?? null, timeoutS: Number(v.timeout), wasm: v.wasm ?? null, dtypes: null, memory: v.memory };
  try {
    opts.dtypes = parseDtypes(v.dtypes);
  } catch (e) {
    usage(e.message);
  }
  if (!(opts.budgetMs > 0)) usage('--budget must be a positive number of ms');
  if (!(opts.timeoutS > 0)) usage('--timeout must be a positive number of seconds');
  if (!opts.browser && !opts.firefox) opts.node = true;
  if (opts.memory && (opts.browser || opts.firefox)) usage('--memory: Node only');
  return opts;
}

const usage = (error) => exitWithUsage(import.meta.url, error);

const gbpsText = (bw) => `${bw.gbps.toFixed(1)} GB/s (best of ${bw.passes} passes over ${bw.megabytes} MiB; median ${bw.medianGbps.toFixed(1)})`;

/** Header, tables; the bound uses the higher of the two bandwidth figures (the stricter bound). */
function printResults(title, header, result, opts) {
  const gbps = Math.max(result.bandwidth.before.gbps, result.bandwidth.after.gbps);
  const shown = {
    ...header,
    'WASM read bandwidth (1 thread)': `before ${gbpsText(result.bandwidth.before)}; after ${gbpsText(result.bandwidth.after)}; `
      + `the bound uses ${gbps.toFixed(1)} GB/s`,
    'self-check': checkText(result.check),
    'load average (1/5/15 min) at the end': loadAverage(),
  };
  console.log(`\n== ${title} ==`);
  for (const [k, v] of Object.entries(shown)) console.log(`${k}: ${v}`);
  console.log(`\n${formatDecode(result, LAYOUT, gbps)}`);
  if (opts.markdown) {
    console.log('\nMarkdown:\n');
    console.log(Object.entries(shown).map(([k, v]) => `- ${k}: ${v}`).join('\n'));
    console.log(`\n${formatDecode(result, LAYOUT, gbps, { markdown: true })}`);
  }
  return { header: shown, ...result };
}

async function runNode(opts, common) {
  const { MultiHeadAttention, wasmMemoryInUse, capabilities } = await import('../../web/src/node.js');
  if (opts.memory) {
    const memory = await runMemoryTable({ MultiHeadAttention, wasmMemoryInUse }, { dtypes: opts.dtypes });
    console.log(`\nMemory (expected from §11's byte counts; measured: wasmMemoryInUse() before and after):\n\n${plainTable(MEMORY_COLUMNS, memory)}`);
    if (opts.markdown) console.log(`\n${markdownTable(MEMORY_COLUMNS, memory)}`);
    return { memory };
  }
  const ort = await import('onnxruntime-web');
  console.log(`\n-- Node ${process.version}`);
  const result = await runDecodeBench({ MultiHeadAttention, wasmMemoryInUse, capabilities, ort }, membwWasm(),
    { quick: opts.quick, dtypes: opts.dtypes, budgetMs: opts.budgetMs, log: (line) => console.log(`   ${line}`) });
  const header = { ...common, runtime: `Node ${process.version} (V8 ${process.versions.v8})`, libraries: result.libraries };
  return printResults(`Node ${process.version}`, header, result, opts);
}

async function runBrowser(opts, common, engine) {
  membwWasm();  // the page fetches it
  const q = new URLSearchParams({ suite: 'decode', quick: opts.quick ? '1' : '0', budget: String(opts.budgetMs), dtypes: opts.dtypes.join(','), wasm: opts.wasm ?? 'simd' });
  console.log(`\n-- ${engineTitle(engine)}`);
  const { result } = await runBenchPage(engine, {
    script: 'decode.mjs', path: '/bench/browser/suite.html', query: q, resultName: '__decode', logPrefix: '[decode] ',
    timeoutS: opts.timeoutS,
  });
  const version = engineVersion(engine, result.env.userAgent);
  const header = { ...common, runtime: `${version} headless (${result.env.userAgent})`, libraries: result.libraries };
  return printResults(version, header, result, opts);
}

const opts = parseOptions(process.argv.slice(2));
if (opts.wasm) process.env.WEBATTENTION_WASM = opts.wasm;
checkPeersInstalled('decode.mjs', ['onnxruntime-web']);
await runAndExit('decode.mjs', opts, { runNode, runBrowser });
