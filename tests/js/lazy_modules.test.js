// What a cold start never runs stays out of its import (base/lazy_modules.js, lazy_exports.js):
// a plain import, create(), loadStateDict() and forward() parse none of the lazily loaded files,
// and each API that needs one loads it on its first call, synchronously where the API is. Each
// case runs in a fresh process that lists the scripts V8 parses (the inspector's
// Debugger.scriptParsed), on the source entry; tests/js/node_bundle.test.js checks the bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runNodeScript } from './child_node.js';

// The files loaded on first use, each by the API that needs it.
const LAZY = ['lazy_exports.js', 'storage/quantised_tensors.js', 'storage/gguf_types.js', 'storage/layout_resolution.js',
  'storage/safetensors.js', 'checks/gpu_tensor_checks.js', 'dispatch/device_calls.js', 'dispatch/keep_checks.js',
  'checks/encode_plans.js'];

/** The web/src files (of LAZY) parsed after `body` ran, its printed result too, in a fresh process. */
function parsedAfter(body) {
  const script = `
    const inspector = await import('node:inspector');
    const session = new inspector.Session();
    session.connect();
    const parsed = new Set();
    session.on('Debugger.scriptParsed', ({ params }) => parsed.add(params.url));
    session.post('Debugger.enable');
    const api = await import('#webattention');
    const { MultiHeadAttention } = api;
    const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, threads: 1 });
    const filled = (shape, f) => ({ data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => f(i)), shape });
    const sd = Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, filled(shape, (i) => Math.sin(i))]));
    const x = filled([1, 5, 16], (i) => Math.cos(i));
    const result = await (async () => { ${body} })();
    const lazy = ${JSON.stringify(LAZY)};
    console.log(JSON.stringify({ result, parsed: lazy.filter((f) => [...parsed].some((u) => u.endsWith('/web/src/' + f))) }));`;
  const r = runNodeScript(script);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

test('a plain import, create(), loadStateDict() and forward() parse none of the lazily loaded files', () => {
  const { result, parsed } = parsedAfter(`
    mha.loadStateDict(sd);
    const { output } = await mha.forward(x, x, x);
    const cache = mha.createCache({ maxLength: 8 });
    await mha.forward(x, x, x, { cache });
    return output.data.length;`);
  assert.equal(result, 80);
  assert.deepEqual(parsed, []);
});

// Each API, in a fresh process, with the files its first call loads (lazy_exports.js loads them all).
const CASES = [
  ['loadStateDict() of Q8_0 blocks', 'storage/quantised_tensors.js', `
    const q = await MultiHeadAttention.create({ embedDim: 32, numHeads: 4, threads: 1, weightsDtype: 'int8' });
    const blocks = (rows, cols) => { const data = new Uint8Array(rows * cols / 32 * 34); for (let b = 0; b < data.length; b += 34) data[b + 1] = 0x3c; return data; };
    q.loadStateDict(Object.fromEntries(q.stateDictShapes.map(({ name, shape }) => [name, shape.length === 2
      ? { dtype: 'q8_0', data: blocks(...shape), shape } : filled(shape, () => 0)])));
    return 'loaded';`, 'loaded'],
  ["loadStateDict(sd, { layout: 'hf' })", 'storage/layout_resolution.js', `
    const m = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, threads: 1, bias: false });
    const hf = Object.fromEntries(['q_proj', 'k_proj', 'v_proj', 'o_proj'].map((p) => [p + '.weight', filled([16, 16], (i) => Math.sin(i))]));
    m.loadStateDict(hf, { layout: 'hf' });
    return 'loaded';`, 'loaded'],
  ['loadSafetensors()', 'storage/safetensors.js', `
    return [...api.loadSafetensors(api.saveSafetensors({ x: { data: new Float32Array(2), shape: [2] } })).keys()];`, ['x']],
  ['cache.keep()', 'dispatch/keep_checks.js', `
    mha.loadStateDict(sd);
    const cache = mha.createCache({ maxLength: 8 });
    await mha.forward(x, x, x, { cache });
    cache.keep([0, 2]);
    return cache.length;`, 2],
  ['encode()', 'checks/encode_plans.js', `
    mha.loadStateDict(sd);
    return (await mha.encode(x, x)).length;`, 5],
  // Checked, then refused: this module computes on WASM.
  ['forward() of a GPU tensor', 'checks/gpu_tensor_checks.js', `
    mha.loadStateDict(sd);
    const gpuBuffer = { size: 320, usage: 0x80, mapState: 'unmapped', destroy() {}, mapAsync() {} };
    return mha.forward({ gpuBuffer, shape: [1, 5, 16] }, x, x).then(() => 'computed', (e) => e.name);`, 'OptionError'],
];

for (const [name, file, body, expected] of CASES) {
  test(`${name} loads ${file} on its first call`, () => {
    const { result, parsed } = parsedAfter(body);
    assert.deepEqual(result, expected);
    assert.ok(parsed.includes('lazy_exports.js') && parsed.includes(file), `parsed: ${parsed.join(', ')}`);
  });
}
