// The SIMD128 and relaxed-SIMD modules side by side in one process: the same MHA forward
// (one thread, B = 1, self-attention) on each, alternating call by call, so a slow spell of the
// machine hits both alike. Prints GFLOP/s (best and median) and the median ratio.
// Usage: node --experimental-wasm-relaxed-simd bench/prefill/modules.mjs [--causal]   (Node 20 needs
// the flag for relaxed SIMD; Node 22 does not)
import { loadNodeCore } from '../../web/src/node_core.js';
import { coreConfig, resolveMhaConfig } from '../../web/src/checks/module_config.js';
import { resolveMhaForward } from '../../web/src/checks/plans.js';
import { WasmExecutor } from '../../web/src/wasm/wasm_executor.js';
import { parseFlags } from '../lib/run_env.mjs';
import { filled, flops, makeWeights, mhaShapes } from '../lib/suite.mjs';

const { causal } = parseFlags(import.meta.url, process.argv.slice(2), { causal: { type: 'boolean', default: false } }).values;
const modules = ['simd', 'relaxed'];
const cores = await Promise.all(modules.map(async (variant) => (await loadNodeCore(variant)).core));
const gflops = (L, E, ms) => flops(L, E) / ms / 1e6;
console.log(`shape (L, E, h)${causal ? ', causal' : ''}: GFLOP/s best / median, ${modules.join(' vs ')}`);
for (const [L, E, h] of mhaShapes('modules')) {
  const config = resolveMhaConfig({ embedDim: E, numHeads: h });
  const entries = Object.entries(makeWeights(E)).map(([name, data]) => ({ name, data }));
  const mhas = cores.map((core) => {
    const mha = new WasmExecutor(core, config, coreConfig(config));
    mha.threads = 1;
    mha.loadStateDict(entries);
    return mha;
  });
  const x = { data: filled(L * E, 2, 1), shape: [1, L, E] };
  const plan = resolveMhaForward(config, x, x, x, { isCausal: causal });
  const times = mhas.map(() => []);
  const runs = L >= 2048 ? 5 : L >= 1024 ? 8 : 20;
  for (let r = -2; r < runs; r++) {  // two warm-up rounds
    mhas.forEach((mha, k) => {
      const t0 = performance.now();
      mha.forward(plan);
      if (r >= 0) times[k].push(performance.now() - t0);
    });
  }
  const stats = times.map((t) => {
    t.sort((a, b) => a - b);
    return { best: gflops(L, E, t[0]), median: gflops(L, E, t[t.length >> 1]) };
  });
  console.log(`(${L}, ${E}, ${h})`.padEnd(16), stats.map((s) => `${s.best.toFixed(1)} / ${s.median.toFixed(1)}`).join('   '),
    `   ratio ${(stats[1].median / stats[0].median).toFixed(2)}`);
  mhas.forEach((mha) => mha.dispose());
}
