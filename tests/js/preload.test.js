// The Node entry starts loading its WASM module at import (runtime.js's preload()): an import never
// throws for it, a failed preload shows at the first create(), which loads again, and configure()'s
// settings stay open until a module is used, as before there was a preload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runNodeScript } from './child_node.js';

/** Runs `script` in a fresh Node process (child_node.js); its stdout lines. */
function run(script, env = {}) {
  const r = runNodeScript(script, { env });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split('\n');
}

test('a preload that fails (a bad WEBATTENTION_WASM) throws nothing at import; create() throws it, and loads again', () => {
  const lines = run(`
    const api = await import('#webattention');
    console.log('imported');
    await new Promise((resolve) => setTimeout(resolve, 50));  // the preload has failed by now
    try {
      await api.MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
      console.log('created');
    } catch (e) {
      console.log(e.name, e.argument, e.message);
    }
    process.env.WEBATTENTION_WASM = 'simd';
    const mha = await api.MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
    console.log('then', mha.config.embedDim);`, { WEBATTENTION_WASM: 'avx512' });
  assert.equal(lines[0], 'imported');
  assert.match(lines[1], /^OptionError WEBATTENTION_WASM WEBATTENTION_WASM: expected 'simd' or 'relaxed' or 'scalar' or 'mt' or 'mt-relaxed', got 'avx512'$/);
  assert.equal(lines[2], 'then 8');
});

test('the preload leaves configure() open until the first create()', () => {
  const lines = run(`
    const api = await import('#webattention');
    await new Promise((resolve) => setTimeout(resolve, 200));  // the preload is done by now
    api.configure({ wasmPaths: '/assets/' });
    console.log('configured');
    await api.MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
    try {
      api.configure({ wasmPaths: '/elsewhere/' });
      console.log('configured again');
    } catch (e) {
      console.log(e.name);
    }`);
  assert.deepEqual(lines, ['configured', 'OptionError']);
});
