// The Node entry takes worker_threads from process.getBuiltinModule (Node >= 20.16) and imports it
// where that is missing (older Node): the pool starts either way, with the same results. So does
// lazy_exports.js (required on first use, or imported with the entry): saveSafetensors() answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runNodeScript } from './child_node.js';

const script = `
  const { MultiHeadAttention, saveSafetensors } = await import('#webattention');
  const saved = saveSafetensors({ x: { data: new Float32Array([1, 2]), shape: [2] } });
  const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, threads: 2 });
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
    [name, Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i))])));
  const x = { data: Float32Array.from({ length: 2 * 5 * 16 }, (_, i) => Math.cos(i)), shape: [2, 5, 16] };
  const { output } = await mha.forward(x, x, x);
  console.log(typeof process.getBuiltinModule, mha.threads, Array.from(output.data.slice(0, 4)).join(','), saved.length);
  mha.dispose();`;

/** Runs the script in a fresh Node process, with process.getBuiltinModule removed first when asked. */
function run(withoutGetBuiltinModule) {
  const remove = withoutGetBuiltinModule ? ['--import', 'data:text/javascript,delete process.getBuiltinModule'] : [];
  const r = runNodeScript(script, { flags: remove });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split(' ');
}

test('workers start with and without process.getBuiltinModule, to the same results', () => {
  const [withType, withThreads, withOutput, withSaved] = run(false);
  const [withoutType, withoutThreads, withoutOutput, withoutSaved] = run(true);
  assert.equal(withoutSaved, withSaved);
  assert.equal(withSaved, '72');
  assert.equal(withoutType, 'undefined');  // the older Node's path was taken
  assert.equal(withThreads, '2');
  assert.equal(withoutThreads, '2');
  assert.equal(withoutOutput, withOutput);
  if (typeof process.getBuiltinModule === 'function') assert.equal(withType, 'function');
});
