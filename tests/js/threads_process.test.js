// The worker pool and the process: Node exits on its own whatever the pool's state (threads.test.js
// holds the pool's calls).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runNodeScript } from './child_node.js';

test('node exits on its own: after dispose(), without it, and with workers still starting', () => {
  const entry = new URL('../../web/src/node.js', import.meta.url).href;
  for (const [what, threads, forward, dispose, flags = []] of [
    ['disposed', 3, true, true], ['never disposed', 3, true, false],
    ['no forward, never disposed', 2, false, false], ['\'auto\', no forward', "'auto'", false, false],
    // Flags a Worker refuses (per process): the pool must still start (it once fell back silently).
    ['node --max-old-space-size=4096 --expose-gc', 3, true, true, ['--max-old-space-size=4096', '--expose-gc']],
  ]) {
    const script = `
      const { MultiHeadAttention } = await import(${JSON.stringify(entry)});
      const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, threads: ${threads} });
      mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
        [name, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.1)])));
      const x = { data: new Float32Array(2 * 5 * 16).fill(0.5), shape: [2, 5, 16] };
      ${forward ? 'const { output } = await mha.forward(x, x, x); console.log(mha.threads, output.data.length);' : ''}
      ${dispose ? 'mha.dispose();' : ''}`;
    const t0 = Date.now();
    const r = runNodeScript(script, { flags });
    assert.equal(r.signal, null, `${what}: killed after ${Date.now() - t0} ms (node did not exit)`);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), forward ? '3 160' : '', what);
  }
});

test("'auto': a process that ends after its first large call exits without starting a worker", () => {
  const entry = new URL('../../web/src/node.js', import.meta.url).href;
  const internals = new URL('../internals.mjs', import.meta.url).href;
  // The call is large enough for workers, so the pool is made after it (startSoon()); the worker
  // that would start then is never needed, and its start would keep the process alive meanwhile.
  const script = `
    const { MultiHeadAttention } = await import(${JSON.stringify(entry)});
    const { poolTestHooks } = await import(${JSON.stringify(internals)});
    poolTestHooks.spawnWorker = () => { console.log('spawned'); return new Promise(() => {}); };
    const mha = await MultiHeadAttention.create({ embedDim: 256, numHeads: 8, threads: 'auto' });
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
      [name, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01)])));
    const x = { data: new Float32Array(512 * 256).fill(0.5), shape: [1, 512, 256] };
    const { output } = await mha.forward(x, x, x);
    console.log(output.data.length);`;
  const r = runNodeScript(script);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '131072');
});
