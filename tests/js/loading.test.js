// What a user sees when the package's files cannot be had: HTML served in place of the .wasm (a
// LoadError naming the fixes, not "expected magic word"), a missing file, and worker pool
// failures (one console warning, then mha.threads === 1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { LoadError, MultiHeadAttention, WorkerError } from '#webattention';
import { poolTestHooks as testHooks } from '../internals.mjs';
import { fetchWasmModule } from '../../web/src/wasm/wasm_fetch.js';

/** Runs body with globalThis.fetch answering `response` (a function of the URL). */
async function withFetch(response, body) {
  const saved = globalThis.fetch;
  globalThis.fetch = async (url) => response(url);
  try {
    return await body();
  } finally {
    globalThis.fetch = saved;
  }
}

const WASM_URL = 'http://localhost:5173/node_modules/.vite/deps/webattention_core.wasm';

test('HTML served for the .wasm is a LoadError naming the URL, what came, optimizeDeps.exclude and wasmPaths', async () => {
  const html = () => new Response('<!doctype html>\n<html><head>', { headers: { 'content-type': 'text/html' } });
  await withFetch(html, () => assert.rejects(() => fetchWasmModule(WASM_URL), (e) => {
    assert.ok(e instanceof LoadError, `${e?.name}: ${e?.message}`);
    assert.equal(e.name, 'LoadError');
    assert.equal(e.argument, 'wasmPaths');
    assert.match(e.message, /deps\/webattention_core\.wasm is not a WebAssembly module: it starts with 3c 21 64 6f \("<!doctype html> ", an HTML page; content-type text\/html\), not 00 61 73 6d/);
    assert.match(e.message, /add optimizeDeps: \{ exclude: \['webattention'\] \} to vite\.config\.js/);
    assert.match(e.message, /configure\(\{ wasmPaths \}\)/);
    return true;
  }));
  const notFound = () => new Response('not found', { status: 404 });
  await withFetch(notFound, () => assert.rejects(() => fetchWasmModule(WASM_URL),
    (e) => e instanceof LoadError && /could not be fetched \(HTTP 404\)\. Under the Vite dev server/.test(e.message)));
});

test('the real .wasm compiles, streamed (application/wasm) or from its bytes (any other type)', async () => {
  const bytes = await readFile(new URL('../../web/dist/webattention_core.wasm', import.meta.url));
  for (const type of ['application/wasm', 'application/octet-stream']) {
    const module = await withFetch(() => new Response(bytes, { headers: { 'content-type': type } }), () => fetchWasmModule(WASM_URL));
    assert.ok(module instanceof WebAssembly.Module, type);
  }
});

test('a worker pool that fails says so once (console.warn) and the modules carry on with threads === 1', async () => {
  const seen = [];
  const saved = console.warn;
  console.warn = (message) => seen.push(String(message));
  const x = { data: new Float32Array(2 * 4 * 8).fill(0.5), shape: [2, 4, 8] };
  try {
    for (let round = 0; round < 2; round++) {
      const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 2 });
      mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
        [name, { data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.1), shape }])));
      Object.assign(testHooks, { beforeRun: (pool, worker) => worker.terminate() });
      await assert.rejects(() => mha.forward(x, x, x), WorkerError);
      testHooks.beforeRun = null;
      assert.equal(mha.threads, 1);
      assert.equal((await mha.forward(x, x, x)).output.data.length, x.data.length);
      mha.dispose();
    }
  } finally {
    console.warn = saved;
    testHooks.beforeRun = null;
  }
  const said = seen.filter((m) => /^webattention: worker 1 of 1 .*threads = 1\)\. Check that the pool worker script/.test(m));
  assert.equal(said.length, 1, seen.join('\n'));
});
