// The package's Node entry as users load it: web/dist/node.js, which scripts/bundle_node.mjs makes
// of web/src/node.js: a small entry that imports node_early.js (the WASM module's load, started
// first) and then the bundle node_main.js, with its one shared chunk beside it (node_chunk.js,
// imported), node_webgpu_executor.js (imported only when there is a GPU) and lazy_exports.js
// (required on first use), and
// web/dist/node_worker.js, its pool worker's. Bundled
// afresh here from the working tree, so that this checks the bundling, not a past build: the same
// exports as the source entry, no import of any other package file, and the same results, worker
// pool included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as source from '#webattention';
import { bundleNode } from '../../scripts/bundle_node.mjs';
import { DIST, readManifest } from '../../scripts/gen_modules.mjs';
import { randomTensor, rng } from '../contract/contract.mjs';

/** Bundles into a fresh <tmp>/dist/ beside links to the built single-threaded modules. */
async function freshBundle() {
  const root = mkdtempSync(join(tmpdir(), 'webattention-bundle-'));
  const dist = join(root, 'dist');
  await bundleNode(dist);
  for (const m of readManifest().filter((m) => !m.threads)) {
    for (const ext of ['.mjs', '.wasm']) symlinkSync(join(DIST, m.stem + ext), join(dist, m.stem + ext));
  }
  return { dist, remove: () => rmSync(root, { recursive: true, force: true }) };
}

test('the bundled Node entry: the source entry\'s exports, its own chunks only, the same results on one thread and on the pool', async () => {
  const { dist, remove } = await freshBundle();
  try {
    // Static import statements (bare ones too) wherever they stand: the bundle is minified (statements share lines).
    const staticImports = (file) => [...readFileSync(join(dist, file), 'utf8').matchAll(/(?:^|[;}])\s*import\b(?:[^;"'()]*?from)?\s*"([^"]+)"/gm)].map((m) => m[1]);
    const dynamicImports = (file) => [...readFileSync(join(dist, file), 'utf8').matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1]);
    const packageFiles = (list) => list.filter((s) => !s.startsWith('node:'));
    // The entry starts the WASM module's load (node_early.js) before Node parses the bundle.
    assert.deepEqual(packageFiles(staticImports('node.js')), ['./node_early.js'], 'node.js: the early load first');
    assert.deepEqual(packageFiles(dynamicImports('node.js')), ['./node_main.js'], 'node.js: then the bundle');
    // One chunk: each file a cold start loads costs its import more than the bytes it holds.
    assert.deepEqual(readdirSync(dist).filter((f) => /^node_chunk/.test(f)), ['node_chunk.js'], 'one shared chunk');
    assert.deepEqual(packageFiles(staticImports('node_main.js')).sort(), ['./node_chunk.js', './node_early.js'], 'node_main.js: node: builtins, the early load and its shared chunk');
    assert.deepEqual(packageFiles(dynamicImports('node_main.js')).sort(), ['./lazy_exports.js', './node_threads.js', './node_webgpu_executor.js'],
      'node_main.js: the WebGPU executor, the pthreads modules\' loader and, on a Node without require(esm), lazy_exports.js, lazily');
    for (const file of ['node_chunk.js', 'node_worker.js', 'node_early.js']) {
      assert.deepEqual(packageFiles(staticImports(file)), [], `${file} imports only node: builtins`);
    }
    for (const file of ['node_webgpu_executor.js', 'lazy_exports.js', 'node_threads.js']) assert.deepEqual(packageFiles(staticImports(file)), ['./node_chunk.js'], file);
    // What a cold start never runs is not in what its import loads.
    const coldPath = ['node_main.js', 'node_chunk.js'].map((f) => readFileSync(join(dist, f), 'utf8')).join('\n');
    // (base/lazy_modules.js's internals too: quantised loading, other namings, GPU inputs, encode(), keep()).
    for (const name of ['function readPreamble(', 'function checkedMetadata(', 'function attentionOptionsFromGguf(', 'FAMILIES',
      'function parseHeader(', 'function quantisedEntry(', 'function resolveLayout(', 'function checkGpuTensor(',
      'function forwardOnDevice(', 'function resolveEncode(', 'function checkKeep(']) {
      assert.ok(!coldPath.includes(name), `${name} is in lazy_exports.js only`);
    }
    const bundled = await import(pathToFileURL(join(dist, 'node.js')).href);
    assert.deepEqual(Object.keys(bundled).sort(), Object.keys(source).sort());
    for (const name of Object.keys(source)) assert.equal(typeof bundled[name], typeof source[name], name);

    const options = { embedDim: 16, numHeads: 4 };
    const reference = await source.MultiHeadAttention.create({ ...options, threads: 1 });
    const next = rng(11);
    const sd = Object.fromEntries(reference.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));
    const x = randomTensor([2, 6, 16], next);
    reference.loadStateDict(sd);
    const expected = (await reference.forward(x, x, x)).output.data;
    reference.dispose();
    for (const threads of [1, 2]) {
      const mha = await bundled.MultiHeadAttention.create({ ...options, threads });
      try {
        mha.loadStateDict(sd);
        assert.deepEqual((await mha.forward(x, x, x)).output.data, expected, `threads: ${threads}`);
        assert.equal(mha.threads, threads);
        // Its errors are its own export's classes (one copy of errors.js in the bundle).
        await assert.rejects(() => mha.forward({ data: new Float32Array(3), shape: [3] }, x, x), bundled.ShapeError);
      } finally {
        mha.dispose();
      }
    }
  } finally {
    remove();
  }
});

// The early load is the one the first create() uses: one read and one compile of the .wasm per
// process, the read started before Node has parsed the bundle (node_early.js). With
// WEBATTENTION_WASM set, node.js loads on its own, once too.
test('the bundled entry reads and compiles its WASM module once, from the early load', async () => {
  const { dist, remove } = await freshBundle();
  try {
    const script = `
      const compiled = [], reads = [];
      const compile = WebAssembly.compile;
      WebAssembly.compile = (bytes) => { compiled.push(bytes.byteLength); return compile(bytes); };
      const fs = await import('node:fs/promises');
      const readFile = fs.default.readFile;
      fs.default.readFile = (file, ...rest) => { reads.push(String(file)); return readFile(file, ...rest); };
      (await import('node:module')).syncBuiltinESMExports();  // the named export too
      const { MultiHeadAttention } = await import(process.argv[1]);
      const wasmReadsAtImport = reads.filter((f) => f.endsWith('.wasm')).length;
      const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 1 });
      mha.dispose();
      console.log(JSON.stringify({ compiled: compiled.length, wasmReadsAtImport, wasmReads: reads.filter((f) => f.endsWith('.wasm')).length }));`;
    const { spawnSync } = await import('node:child_process');
    for (const forced of [undefined, 'scalar']) {
      const env = { ...process.env };
      if (forced) env.WEBATTENTION_WASM = forced; else delete env.WEBATTENTION_WASM;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, pathToFileURL(join(dist, 'node.js')).href], { env, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const seen = JSON.parse(r.stdout.trim().split('\n').pop());
      // Read at import either way (the runtime's preload where the early load did not start).
      assert.deepEqual(seen, { compiled: 1, wasmReadsAtImport: 1, wasmReads: 1 }, `WEBATTENTION_WASM=${forced}`);
    }
  } finally {
    remove();
  }
});

// What a cold start never runs is loaded on first use (base/lazy_modules.js): the bundle's
// lazy_exports.js is not parsed by an import, create(), loadStateDict() and forward(), and is by a
// first cache.keep(), which stays synchronous (tests/js/lazy_modules.test.js: each API, on the source).
test('the bundled entry parses lazy_exports.js at the first call that needs it, not in a cold start', async () => {
  const { dist, remove } = await freshBundle();
  try {
    const script = `
      const inspector = await import('node:inspector');
      const session = new inspector.Session();
      session.connect();
      const parsed = [];
      session.on('Debugger.scriptParsed', ({ params }) => parsed.push(params.url.split('/').pop()));
      session.post('Debugger.enable');
      const { MultiHeadAttention } = await import(process.argv[1]);
      const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, threads: 1 });
      const filled = (shape) => ({ data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i)), shape });
      mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, filled(shape)])));
      const cache = mha.createCache({ maxLength: 8 });
      await mha.forward(filled([1, 5, 16]), filled([1, 5, 16]), filled([1, 5, 16]), { cache });
      const cold = parsed.includes('lazy_exports.js');
      const kept = cache.keep([0, 3]);
      console.log(JSON.stringify({ cold, kept: kept === undefined && cache.length, later: parsed.includes('lazy_exports.js') }));`;
    const { spawnSync } = await import('node:child_process');
    // The module the entry picks itself: a WEBATTENTION_WASM of the suite's run (relaxed: a Node
    // flag the child has not) would not load, and a forced module skips the early load.
    const env = { ...process.env };
    delete env.WEBATTENTION_WASM;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, pathToFileURL(join(dist, 'node.js')).href], { env, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim().split('\n').pop()), { cold: false, kept: 2, later: true });
  } finally {
    remove();
  }
});

// The tests run the source (web/src through package.json's "imports" '#webattention'): a test that
// imported 'webattention' would run the last build's bundle instead, stale after any web/src edit,
// with its own copies of the modules the tests' internals (tests/internals.mjs) reach into.
test('the JS and WebGPU tests import the package source as #webattention, never the built entry', async () => {
  const { readdirSync } = await import('node:fs');
  const root = new URL('../', import.meta.url);
  const offenders = [];
  for (const dir of ['js', 'webgpu', 'browser', 'contract', 'fuzz']) {
    for (const file of readdirSync(new URL(`${dir}/`, root))) {
      if (!/\.(m?js)$/.test(file)) continue;
      const text = readFileSync(new URL(`${dir}/${file}`, root), 'utf8');
      if (/from\s+['"]webattention['"]|import\(\s*['"]webattention['"]\s*\)/.test(text)) offenders.push(`${dir}/${file}`);
    }
  }
  assert.deepEqual(offenders, []);
});
