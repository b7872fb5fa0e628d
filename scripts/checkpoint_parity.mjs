#!/usr/bin/env node
// The checkpoint fixtures' parity per backend, as docs/checkpoints.md shows it: every case of
// tests/fixtures/checkpoints/ (float64 truth, make_checkpoint_fixtures.py) through
// loadSafetensors → loadStateDict({ layout }) → plain, causal and cached forwards and
// cache.read() (tests/contract/run_checkpoint.mjs, what the tests run), on each backend this
// machine has: the WASM modules simd, relaxed and scalar on the calling thread, the worker pool
// (threads: 2; the cached calls stay on the calling thread, as the pool declines them) and WebGPU
// through npm `webgpu` (on SwiftShader unless VK_ICD_FILENAMES names another Vulkan driver; the
// column names the adapter used). Prints a Markdown table of max |ours − float64| per case:
// the worst of the three forwards' outputs, and of the keys and values cache.read() gives, beside
// the largest |output| (the errors are float32 rounding of values that large).
//   node scripts/checkpoint_parity.mjs
// Each backend runs in a child process (the WASM module is chosen once per process).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { decodeTensor } from '../tests/contract/decode.mjs';
import { SWIFTSHADER_ICD, adapterInfo, adapterKind, requestTestAdapter } from '../tests/webgpu/adapter.mjs';

const dir = new URL('../tests/fixtures/checkpoints/', import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL('checkpoints.json', dir), 'utf8'));

const BACKENDS = {
  'WASM simd': { env: { WEBATTENTION_WASM: 'simd' }, create: { backend: 'wasm', threads: 1 } },
  // Node 20 validates relaxed SIMD behind a V8 flag (Node 22 without one).
  'WASM relaxed': { env: { WEBATTENTION_WASM: 'relaxed' }, create: { backend: 'wasm', threads: 1 }, node: ['--experimental-wasm-relaxed-simd'] },
  'WASM scalar': { env: { WEBATTENTION_WASM: 'scalar' }, create: { backend: 'wasm', threads: 1 } },
  'pool (2 threads)': { env: { WEBATTENTION_WASM: 'simd' }, create: { backend: 'wasm', threads: 2 } },
  WebGPU: { env: { VK_ICD_FILENAMES: process.env.VK_ICD_FILENAMES ?? SWIFTSHADER_ICD }, create: { backend: 'webgpu' }, gpu: true },
};

/** In the child: { case: { output, cache } } for one backend, as JSON on stdout. */
async function measure(name) {
  const backend = BACKENDS[name];
  const api = await import('../web/src/node.js');
  const { runCheckpointCase } = await import('../tests/contract/run_checkpoint.mjs');
  const gpu = backend.gpu && (await import('webgpu')).create([]);
  const create = { ...backend.create, ...(gpu && { gpu }) };
  const out = { module: (await api.capabilities()).wasmModule, ...(gpu && { adapter: adapterLabel(await requestTestAdapter(gpu)) }) };
  for (const c of cases) {
    const r = await runCheckpointCase(api, c, readFileSync(new URL(c.file, dir)), { create });
    if (r.backend !== create.backend) throw new Error(`${c.name} ran on ${r.backend}, not ${create.backend}`);
    out[c.name] = { output: Math.max(r.full.abs, r.causal.abs, r.cached.abs), cache: Math.max(r.cacheKey.abs, r.cacheValue.abs) };
  }
  process.stdout.write(JSON.stringify(out));
  process.exit(0);  // Dawn's GPU object keeps Node alive otherwise
}

/** 'SwiftShader' for a software adapter, else the GPU's name as adapter.info gives it. */
function adapterLabel(adapter) {
  if (!adapter) throw new Error('no WebGPU adapter');
  const info = adapterInfo(adapter);
  if (adapterKind(adapter) === 'software') return 'SwiftShader';
  return info.description || [info.vendor, info.device || info.architecture].filter(Boolean).join(' ') || 'GPU';
}

/** The column of one backend: WebGPU's names the adapter it ran on. */
const column = (name, result) => (result.adapter ? `${name} (${result.adapter})` : name);

/** What each case exercises, from its create() and load options. */
function features(c) {
  const o = c.create;
  const bias = Object.entries(o.bias).filter(([, on]) => on).map(([k]) => k);
  return [`'${c.load.layout}'`, o.numKvHeads < o.numHeads && `GQA ${o.numHeads}/${o.numKvHeads}`, bias.length && `bias ${bias.join(',')}`,
    o.scale && `scale ${+o.scale.toFixed(4)}`, o.softcap && `softcap ${o.softcap}`, o.sinks && 'sinks', o.qkNorm && 'qkNorm',
    o.rotary && `rotary dim ${o.rotary.dim}`].filter(Boolean).join(', ');
}

if (process.argv[2] === '--child') {
  await measure(process.argv[3]);
} else {
  const results = {};
  for (const [name, backend] of Object.entries(BACKENDS)) {
    try {
      const text = execFileSync(process.execPath, [...(backend.node ?? []), fileURLToPath(import.meta.url), '--child', name], {
        env: { ...process.env, ...backend.env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000,
      });
      results[name] = JSON.parse(text);
    } catch (e) {
      const why = String(e.stderr || e.message).split('\n').find((l) => /Error|failed/.test(l)) ?? e.message;
      console.error(`${name}: not measured here (${why.trim()})`);
    }
  }
  const names = Object.keys(results);
  const fmt = (x) => (x === 0 ? '0' : x.toExponential(1));
  console.log(`| case | what it exercises | max \\|out\\| | ${names.map((n) => `${column(n, results[n])} out / cache`).join(' | ')} |`);
  console.log(`|---|---|---:|${names.map(() => '---:').join('|')}|`);
  const largest = (t) => decodeTensor(t).data.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  for (const c of cases) {
    console.log(`| ${c.name} | ${features(c)} | ${largest(c.full).toFixed(1)} | ${names.map((n) => `${fmt(results[n][c.name].output)} / ${fmt(results[n][c.name].cache)}`).join(' | ')} |`);
  }
  console.log(`\nmodules: ${names.map((n) => `${column(n, results[n])}: ${results[n].module}`).join('; ')}; Node ${process.version}`);
}
