// Runs one decoded fixture case through a given API object (the package's exports, whichever
// entry and environment loaded them), the way a user calls it.
import { checkResult } from './compare.mjs';
import { runDecode } from './run_decode.mjs';

/**
 * The kinds of case: 'mha' (MultiHeadAttention.create(c.create), loadStateDict, forward),
 * 'decode' (the same with a KV cache, fed in chunks: run_decode.mjs), 'sdpa'
 * (scaledDotProductAttention) and 'self' (selfAttention). Resolves to the call's result.
 * `create` is merged over c.create (mha only): { threads, backend, gpu, webgpuMinFlops, ... }.
 * `onModule(mha)`, if given, sees the module after forward() and before dispose().
 */
export async function runCall(api, c, { create = {}, onModule } = {}) {
  const { query, key, value, x } = c.inputs;
  if (c.kind === 'sdpa') return api.scaledDotProductAttention(query, key, value, c.options);
  if (c.kind === 'self') return api.selfAttention(x, c.options);
  if (c.kind === 'decode') return runDecode(api, c, { create, onModule });
  if (c.kind !== 'mha') throw new Error(`case ${c.name}: unknown kind ${c.kind}`);
  const mha = await api.MultiHeadAttention.create({ ...c.create, ...create });
  try {
    mha.loadStateDict(c.stateDict);
    const result = await mha.forward(query, key, value, c.options);
    onModule?.(mha);
    return result;
  } finally {
    mha.dispose();
  }
}

/**
 * runCall() and checkResult(): resolves to { name, kind, ok, output, attnWeights, ratio, detail,
 * backend, threads } (the last two: the mha module's, read after its forward(); undefined for
 * the other kinds). A throw from the package rejects (a test fails with the package's error).
 */
export async function runCase(api, c, { create } = {}) {
  let backend;
  let threads;
  const result = await runCall(api, c, { create, onModule: (mha) => ({ backend, threads } = mha) });
  return { name: c.name, kind: c.kind, ...checkResult(c, result), backend, threads };
}
