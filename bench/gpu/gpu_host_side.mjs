#!/usr/bin/env node
// The host's share of a WebGPU forward(): how long the caller's thread spends inside forward()
// before it returns its promise (the checks, the NaN scan, the copies of the inputs, the
// executor's synchronous start), and the whole call host to host. A/B over package roots: each
// round runs every root once per shape, alternated, so that both meet the same machine state.
//
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/gpu/gpu_host_side.mjs [ROOT ...] [--rounds N] [--shapes L/E/h,...] [--cross]
//
// ROOT: a checkout with web/dist built (default: this one). --cross: the query is 4 rows and the
// key and value L rows each (a cross-attention whose inputs are large and whose kernels are
// cheap, so that a software adapter still runs it quickly). Prints per shape and root the median
// ms of each, and each root's median ÷ the first root's.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchAdapter } from './gpu_adapter.mjs';
import { filled, makeWeights, median } from '../lib/suite.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const optionValues = new Set(['--rounds', '--shapes'].map((o) => option(o)).filter(Boolean));
const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const roots = args.filter((a) => !a.startsWith('--') && !optionValues.has(a)).map((r) => path.resolve(r));
if (roots.length === 0) roots.push(here);
const rounds = Number(option('--rounds', 7));
const shapes = option('--shapes', '1024/768/12,2048/768/12').split(',').map((s) => s.split('/').map(Number));
const cross = args.includes('--cross');

const { gpu } = await benchAdapter();
const packages = await Promise.all(roots.map((r) => import(pathToFileURL(path.join(r, 'web/src/node.js')).href)));

// One module per root and shape, warmed by two calls; returns a function timing one call.
async function caller(api, [L, E, h]) {
  const mha = await api.MultiHeadAttention.create({ embedDim: E, numHeads: h, backend: 'webgpu', gpu });
  mha.loadStateDict(makeWeights(E));
  const q = { data: filled((cross ? 4 : L) * E, 7), shape: [1, cross ? 4 : L, E] };
  const kv = cross ? { data: filled(L * E, 8), shape: [1, L, E] } : q;
  for (let i = 0; i < 2; i++) await mha.forward(q, kv, kv);
  return {
    async time() {
      const t0 = performance.now();
      const pending = mha.forward(q, kv, kv);
      const sync = performance.now() - t0;
      await pending;
      return { sync, whole: performance.now() - t0 };
    },
    dispose: () => mha.dispose(),
  };
}

for (const shape of shapes) {
  const callers = [];
  for (const api of packages) callers.push(await caller(api, shape));
  const times = callers.map(() => ({ sync: [], whole: [] }));
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < callers.length; i++) {
      const j = r % 2 ? callers.length - 1 - i : i;  // alternated order
      const t = await callers[j].time();
      times[j].sync.push(t.sync);
      times[j].whole.push(t.whole);
    }
  }
  callers.forEach((c) => c.dispose());
  const med = (xs) => median([...xs].sort((a, b) => a - b));
  const base = times[0];
  roots.forEach((root, i) => {
    const s = med(times[i].sync), w = med(times[i].whole);
    const ratio = i === 0 ? '' : `  (×${(s / med(base.sync)).toFixed(3)} in forward(), ×${(w / med(base.whole)).toFixed(3)} whole)`;
    console.log(`${cross ? 'cross ' : ''}(${shape.join(', ')}) ${path.relative(process.cwd(), root) || '.'}: in forward() ${s.toFixed(3)} ms, whole ${w.toFixed(1)} ms${ratio}`);
  });
}
process.exit(0);
