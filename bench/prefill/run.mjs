#!/usr/bin/env node
// Benchmark: webattention vs onnxruntime-web (wasm EP) vs @tensorflow/tfjs-backend-wasm, same
// shapes, same weights, same input; prints a table (and checks the outputs agree).
//
//   npm --prefix bench install --no-audit --no-fund      (once: the peers live in bench/)
//   bash scripts/build.sh                                 (once: web/dist, this package's WASM)
//   node bench/prefill/run.mjs [--quick] [--browser] [--firefox] [--node] [--threads N] [--webgpu [--webgpu-max-gflop G]]
//                      [--budget MS] [--ort-graph contrib|plain] [--ort-webgpu-graph plain|contrib]
//                      [--tfjs-graph per-head|batched]
//                      [--markdown] [--json FILE] [--timeout S] [--wasm simd|relaxed|scalar|mt]
//
//   (no flag)        run in Node (this process)
//   --browser        run in headless Chromium instead (/usr/bin/chromium via playwright-core,
//                    page served from 127.0.0.1 by scripts/serve.mjs with COOP/COEP so
//                    ORT/tfjs threads can work)
//   --firefox        run in headless Firefox (Debian's firefox-esr over WebDriver BiDi,
//                    tests/browser/browsers.mjs; FIREFOX= to change), same page
//   --node --browser --firefox  any of them, one after the other (one table each)
//   --quick          shapes (64,256,4), (128,512,8), (512,512,8) only (drops the two largest)
//   --threads N      threads for webattention (its worker pool), onnxruntime-web
//                    (ort.env.wasm.numThreads) and tfjs-wasm
//                    (setThreadsCount); default 1. tfjs-wasm
//                    has no threads under Node (its own rule), so N only reaches ORT there.
//   --webgpu         add a 'webattention-webgpu' row: the package's WebGPU backend (Node: the npm
//                    'webgpu' package from the repository's devDependencies, on SwiftShader unless
//                    the machine has a GPU with a Vulkan driver; Chromium: --enable-unsafe-webgpu).
//                    'ours/peer' in that row is WebGPU ms / WASM ms. On a software adapter
//                    (SwiftShader: WebGPU emulated on the CPU) the timings are NOT speed claims
//                    about WebGPU; they only show that the path works end to end.
//                    With --browser it also adds 'onnxruntime-web-webgpu': ORT's webgpu EP
//                    (dist/ort.webgpu.min.mjs, executionProviders ['webgpu']) under the same cap
//   --ort-webgpu-graph G  ONNX graph for onnxruntime-web-webgpu: 'plain' (default) or 'contrib'
//                    (ORT 1.30's webgpu MultiHeadAttention disagrees by 0.06-0.2 on SwiftShader)
//   --webgpu-max-gflop G  WebGPU cells only for shapes up to G GFLOP (default: 0.5 on a
//                    software adapter, where (128, 512, 8) already takes ~2 s a call; no limit
//                    on a hardware adapter)
//   --budget MS      time per cell for the timed runs (default 2000); runs = budget / warm time,
//                    at least 3, at most 200
//   --ort-graph G    ONNX graph for ORT: 'contrib' (default: com.microsoft.MultiHeadAttention
//                    between MatMul+Add projections) or 'plain' (MatMul/Softmax/... only)
//   --tfjs-graph G   tf ops for tfjs-wasm: 'per-head' (default: 2-D matMuls per head, the only
//                    form tfjs-wasm sends to XNNPACK) or 'batched' ([h, L, d] tensors and
//                    matMul(q, k, false, true): the textbook form, ~12x slower in tfjs-wasm 4.22)
//   --wasm M         force webattention's WASM module (WEBATTENTION_WASM in Node, the page's
//                    globalThis.WEBATTENTION_WASM in a browser): the page is cross-origin isolated,
//                    so a browser picks 'mt-relaxed' or 'mt' unless told. Node 20 runs 'relaxed' only when started
//                    with --experimental-wasm-relaxed-simd.
//   --markdown       also print each table as Markdown (what docs/performance/prefill.md#prefill holds)
//   --json FILE      also write { node?, browser?, firefox? } → { header, rows } as JSON to FILE
//   --timeout S      give up on the browser run after S seconds (default 600)
//   CHROMIUM=/path, FIREFOX=/path   other browser binaries
//
// Shapes (L, E, h), B = 1, self-attention (query = key = value), each without mask and causal
// (isCausal: true for webattention, an additive -inf band for the peers). GFLOP/s counts
// 8·L·E² + 4·L²·E for both masks, so a causal speedup shows as a higher rate. "ours/peer" is
// peer ms / webattention ms: above 1, webattention is faster. max|Δ| is the largest absolute
// difference from webattention's output; '!' flags > 1e-3.
import { engineTitle, engineVersion, runBenchPage } from '../lib/browser_page.mjs';
import { SUITE_FLAGS, checkPeersInstalled, exitWithUsage, loadAverage, parseFlags, runAndExit } from '../lib/run_env.mjs';
import {
  DIFF_LIMIT, QUICK_SHAPES, SHAPES, flops, formatMarkdown, formatTable, runSuite, setupLibraries,
} from '../lib/suite.mjs';

function parseOptions(argv) {
  const { values: v } = parseFlags(import.meta.url, argv, {
    ...SUITE_FLAGS,
    webgpu: { type: 'boolean', default: false },
    'webgpu-max-gflop': { type: 'string' },
    threads: '1',
    budget: '2000',
    'ort-graph': 'contrib',
    'ort-webgpu-graph': 'plain',
    'tfjs-graph': 'per-head',
    timeout: '600',
  });
  const opts = {
    quick: v.quick, browser: v.browser, firefox: v.firefox, node: v.node, threads: Number(v.threads), budgetMs: Number(v.budget),
    ortGraph: v['ort-graph'], ortWebgpuGraph: v['ort-webgpu-graph'], tfjsGraph: v['tfjs-graph'], markdown: v.markdown,
    json: v.json ?? null, timeoutS: Number(v.timeout), webgpu: v.webgpu,
    webgpuMaxGflop: v['webgpu-max-gflop'] === undefined ? null : Number(v['webgpu-max-gflop']), wasm: v.wasm ?? null,
  };
  if (!Number.isInteger(opts.threads) || opts.threads < 1) usage('--threads must be a positive integer');
  if (!(opts.budgetMs > 0)) usage('--budget must be a positive number of ms');
  if (!['contrib', 'plain'].includes(opts.ortGraph)) usage("--ort-graph must be 'contrib' or 'plain'");
  if (!['contrib', 'plain'].includes(opts.ortWebgpuGraph)) usage("--ort-webgpu-graph must be 'contrib' or 'plain'");
  if (!['per-head', 'batched'].includes(opts.tfjsGraph)) usage("--tfjs-graph must be 'per-head' or 'batched'");
  if (!(opts.timeoutS > 0)) usage('--timeout must be a positive number of seconds');
  if (opts.webgpuMaxGflop !== null && !(opts.webgpuMaxGflop >= 0)) usage('--webgpu-max-gflop must be a number >= 0');
  if (!opts.browser && !opts.firefox) opts.node = true;
  return opts;
}

const usage = (error) => exitWithUsage(import.meta.url, error);

/** Imports a module, retrying a few times (web/dist may be rebuilt under us). */
async function importRetry(spec) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await import(spec);
    } catch (e) {
      if (attempt >= 5) throw e;
      console.error(`(import ${spec} failed: ${e.message.split('\n')[0]}; retrying)`);
      await new Promise((r) => setTimeout(r, 5000));
    }
  }
}

/** WebGPU cells go up to this many GFLOP: the flag, else 0.5 on a software adapter. */
const webgpuMaxGflop = (info, opts) => opts.webgpuMaxGflop ?? (info.webgpu?.software ? 0.5 : Infinity);

/** Header lines for the WebGPU row (none without --webgpu). */
function webgpuHeader(info, opts, shapes) {
  if (!info.webgpu) return {};
  const max = webgpuMaxGflop(info, opts);
  const left = shapes.filter(([L, E]) => flops(L, E) > max * 1e9).map(([L, E, h]) => `(${L}, ${E}, ${h})`);
  return {
    'webgpu adapter': `${info.webgpu.adapter}${info.webgpu.software ? ' (software: WebGPU emulated on the CPU; '
      + 'these WebGPU timings are not speed claims, they only show the path works)' : ''}`,
    'webgpu cells': left.length ? `shapes up to ${max} GFLOP; left out: ${left.join(', ')}` : 'every shape',
  };
}

function librariesText(info, opts) {
  return `webattention ${info.ours}; onnxruntime-web ${info.ort} (wasm EP, numThreads ${opts.threads}, `
    + `graph '${opts.ortGraph}'); `
    + (info.ortWebgpu ? `onnxruntime-web-webgpu ${info.ortWebgpu} (webgpu EP, graph '${opts.ortWebgpuGraph}'; `
      + `WebGPU row: same adapter and GFLOP cap as webattention-webgpu); ` : '')
    + `tfjs ${info.tfjs} backend ${info.tfjsBackend} (SIMD ${info.tfjsSimd}, `
    + `threaded build usable ${info.tfjsThreadsSupported}, ${info.tfjsThreads} thread(s), graph '${opts.tfjsGraph}')`;
}

function printResults(title, header, rows, opts) {
  console.log(`\n== ${title} ==`);
  header = { ...header, 'load average (1/5/15 min) at the end': loadAverage() };
  for (const [k, v] of Object.entries(header)) console.log(`${k}: ${v}`);
  console.log('');
  console.log(formatTable(rows));
  if (opts.markdown) {
    console.log('\nMarkdown:\n');
    console.log(Object.entries(header).map(([k, v]) => `- ${k}: ${v}`).join('\n'));
    console.log('');
    console.log(formatMarkdown(rows));
  }
  const bad = rows.filter((r) => r.error || !(r.maxDiff <= DIFF_LIMIT));
  if (bad.length) {
    const limit = DIFF_LIMIT.toExponential();  // '1e-3', as the header comment writes it
    console.log(`\n${bad.length} cell(s) with an error or max|Δ| > ${limit} `
      + "(marked '!' or ERROR above)");
  }
  return header;
}

// ---- Node -----------------------------------------------------------------------------------

async function runNode(opts, common) {
  // bench/package.json makes bench/ its own package scope, so the self-reference 'webattention'
  // does not resolve from here: import what it resolves to under Node (the "node" export).
  const { MultiHeadAttention, capabilities } = await importRetry('../../web/src/node.js');
  const ort = await import('onnxruntime-web');
  const tf = await import('@tensorflow/tfjs');
  const tfwasm = await import('@tensorflow/tfjs-backend-wasm');
  const libs = { MultiHeadAttention, capabilities, ort, tf, tfwasm };
  if (opts.webgpu) {
    // Dawn reads the Vulkan driver list when it starts: SwiftShader's (from Debian's chromium)
    // unless the caller chose one. Without a GPU, Mesa's lavapipe does not work with Dawn.
    process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
    const { create } = await import('webgpu');
    libs.gpu = create([]);
  }
  const info = await setupLibraries(libs, { threads: opts.threads });
  const header = {
    ...common,
    runtime: `Node ${process.version} (V8 ${process.versions.v8})`,
    libraries: librariesText(info, opts),
    ...webgpuHeader(info, opts, opts.shapes),
  };
  console.log(`\n-- Node ${process.version}: running ${opts.shapes.length} shapes × 2 masks × ${opts.webgpu ? 4 : 3} libraries`);
  const rows = await runSuite(libs, { shapes: opts.shapes, budgetMs: opts.budgetMs, ortGraph: opts.ortGraph,
    tfjsGraph: opts.tfjsGraph, webgpuMaxGflop: webgpuMaxGflop(info, opts), log: (line) => console.log(`   ${line}`) });
  return { header: printResults(`Node ${process.version}`, header, rows, opts), rows };
}

// ---- Chromium and Firefox ---------------------------------------------------------------

async function runBrowser(opts, common, engine) {
  // The page (bench/browser/index.html) reaches bench/node_modules and web/dist through
  // scripts/serve.mjs, cross-origin isolated so that ORT, tfjs and webattention can use threads.
  const q = new URLSearchParams({ quick: opts.quick ? '1' : '0', threads: String(opts.threads),
    budget: String(opts.budgetMs), ortGraph: opts.ortGraph, ortWebgpuGraph: opts.ortWebgpuGraph, tfjsGraph: opts.tfjsGraph });
  if (opts.webgpu) q.set('webgpu', '1');
  if (opts.wasm) q.set('wasm', opts.wasm);
  if (opts.webgpuMaxGflop !== null) q.set('webgpuMaxGflop', String(opts.webgpuMaxGflop));
  console.log(`\n-- ${engineTitle(engine)}: running ${opts.shapes.length} shapes × 2 masks × ${opts.webgpu ? 5 : 3} libraries`);
  const { result, problems, wasmFiles } = await runBenchPage(engine, {
    script: 'run.mjs', path: '/bench/browser/index.html', query: q, resultName: '__bench', logPrefix: '[bench] ',
    timeoutS: opts.timeoutS, chromiumArgs: opts.webgpu ? ['--enable-unsafe-webgpu'] : [],
  });
  const env = result.env;
  const version = engineVersion(engine, env.userAgent);
  const header = {
    ...common,
    runtime: `${version} headless (${env.userAgent}); crossOriginIsolated ${env.crossOriginIsolated}, `
      + `hardwareConcurrency ${env.hardwareConcurrency}`,
    libraries: librariesText(env.info, opts),
    ...webgpuHeader(env.info, opts, opts.shapes),
    'wasm files fetched': wasmFiles.join(', '),
  };
  const shown = printResults(version, header, result.rows, opts);
  const noise = problems.filter((p) => !/Download the React DevTools|favicon/.test(p));
  if (noise.length) console.log(`\nbrowser console:\n${noise.slice(0, 20).join('\n')}`);
  return { header: shown, rows: result.rows };
}

// ---- main -----------------------------------------------------------------------------------

const opts = parseOptions(process.argv.slice(2));
// Node reads WEBATTENTION_WASM at its first create(); the page gets ?wasm= (below).
if (opts.wasm) process.env.WEBATTENTION_WASM = opts.wasm;
opts.shapes = opts.quick ? QUICK_SHAPES : SHAPES;
checkPeersInstalled('run.mjs', ['onnxruntime-web', '@tensorflow/tfjs', '@tensorflow/tfjs-backend-wasm']);
await runAndExit('run.mjs', opts, { runNode, runBrowser });
