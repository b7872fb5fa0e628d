// What one WASM module's glue costs a cold start, by step, in fresh processes alternated between
// the dist folders given: the .wasm's compile (off the main thread but on the machine), the glue's
// import, WebAssembly.instantiate, and the instantiation callback (receiveInstance: the static
// constructors, where Embind registers every type, class and function, each a call into the
// glue's JS; the older hand-written binding's build registers nothing there), then the same
// callback of a second instance in the same process (the glue imported again under another URL:
// its JS compiled again, the WASM functions the first one ran compiled already; the difference
// is their lazy compile); for an Embind build, the first WasmExecutor made on it (new Mha, the
// config's value_object, the spec list: each binding's first call, and the C++ constructor's own
// first run), a second (its storage grows the WASM memory) and a third (neither). Wall ms, medians.
// Usage: node bench/cold_start/embind_cost.mjs DIST... [--runs N] [--module STEM]
//   DIST          a folder with <stem>.wasm and <stem>.mjs (web/dist, or another build's)
//   --runs N      processes per folder (default 21)
//   --module STEM the module (default webattention_core: the SIMD module Node picks)
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseFlags } from '../lib/run_env.mjs';

const { values, positionals } = parseFlags(import.meta.url, process.argv.slice(2), {
  runs: { type: 'string', default: '21' }, module: { type: 'string', default: 'webattention_core' },
}, { allowPositionals: true });
const dists = positionals.map((d) => pathToFileURL(`${resolve(d)}/`).href);
const runs = Number(values.runs);
const ROOT_URL = new URL('../../', import.meta.url).href;

const child = `
import { readFileSync } from 'node:fs';
const [dist, stem, root] = process.argv.slice(1);
const out = {};
const time = async (key, f) => { const t = performance.now(); const r = await f(); out[key] = performance.now() - t; return r; };
const bytes = readFileSync(new URL(stem + '.wasm', dist));
const module = await time('compile', () => WebAssembly.compile(bytes));
const cores = [];
for (const [n, query] of [['', ''], ['2', '?again']]) {
  const create = await time('glue' + n, async () => (await import(new URL(stem + '.mjs' + query, dist))).default);
  cores.push(await new Promise((ok, fail) => create({ instantiateWasm(imports, receive) {
    time('instantiate' + n, () => WebAssembly.instantiate(module, imports))
      .then((instance) => time('register' + n, () => receive(instance, module)), fail);
    return {};
  } }).then(ok, fail)));
}
if (cores[0].Mha) {
  const { WasmExecutor } = await import(new URL('web/src/wasm/wasm_executor.js', root));
  const { coreConfig, resolveMhaConfig } = await import(new URL('web/src/checks/module_config.js', root));
  const config = resolveMhaConfig({ embedDim: 512, numHeads: 8 });
  for (const key of ['configure', 'configure2', 'configure3']) await time(key, () => new WasmExecutor(cores[0], config, coreConfig(config)).parameterSpecs());
}
console.log(JSON.stringify(out));`;

const KEYS = ['compile', 'glue', 'instantiate', 'register', 'glue2', 'register2', 'configure', 'configure2', 'configure3'];
const results = dists.map(() => []);
for (let i = 0; i < runs; i++) {
  dists.forEach((_, j) => {
    const d = (i + j) % dists.length;  // each folder first in turn
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', child, dists[d], values.module, ROOT_URL], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    results[d].push(JSON.parse(r.stdout));
  });
}
const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1];
dists.forEach((dist, d) => {
  const shown = KEYS.filter((k) => k in results[d][0]);
  console.log(`${dist}: ${shown.map((k) => `${k} ${median(results[d].map((r) => r[k])).toFixed(2)}`).join(', ')} ms (median of ${runs})`);
});
