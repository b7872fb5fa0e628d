// The package apps' driver of the test contract, shared by the Node app and the Vite app that
// tests/package/run.mjs builds: copied into each temp app next to the contract (./contract/, a
// copy of tests/contract/), like a user's own code, and run against the installed `webattention`.
// Plain ESM with no Node or DOM APIs beyond atob, so it runs unchanged in both.
import { checkResult, decodeCase, runCase } from './contract/contract.mjs';

/**
 * The fixture cases (as in mha_parity.json) decoded; perturb (a number) is added to each first
 * expected output value, to prove that a mismatch is caught.
 */
function prepare(rawCases, perturb) {
  const cases = rawCases.map(decodeCase);
  if (perturb) for (const c of cases) c.expected.output.data[0] += perturb;
  return cases;
}

/**
 * A forward() whose query has embedDim - 1 columns must reject with a ShapeError (by name, and by
 * class when the package exports it); a valid forward() on the same module must still work after.
 * Resolves to { rejected, name, isInstance, message, recovered: <checkResult()> }.
 */
async function runBadCallCase(api, c) {
  const mha = await api.MultiHeadAttention.create(c.create);
  try {
    mha.loadStateDict(c.stateDict);
    const { query, key, value } = c.inputs;
    const shape = [...query.shape];
    shape[shape.length - 1] -= 1;
    const badQuery = { data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape };
    let outcome;
    try {
      await mha.forward(badQuery, key, value, c.options);
      outcome = { rejected: false };
    } catch (e) {
      outcome = {
        rejected: true,
        name: e?.name,
        isInstance: typeof api.ShapeError === 'function' ? e instanceof api.ShapeError : null,
        message: String(e?.message ?? e),
      };
    }
    outcome.recovered = checkResult(c, await mha.forward(query, key, value, c.options));
    return outcome;
  } finally {
    mha.dispose();
  }
}

/**
 * Everything a user app checks, in one report: the named import is the namespace's, the export
 * list, each fixture case (runCase(): { name, ok, output, attnWeights, detail, threads }), a bad
 * call followed by a good one, and the first case on the worker pool (threads: 2, whose workers
 * a bundler must have found and copied; `threads` is the module's after the call).
 */
export async function buildReport(api, MultiHeadAttention, rawCases, { perturb = 0 } = {}) {
  const cases = prepare(rawCases, perturb);
  const report = {
    namedImport: typeof MultiHeadAttention === 'function' && MultiHeadAttention === api.MultiHeadAttention,
    exports: Object.keys(api).sort(),
    cases: [],
  };
  for (const c of cases) report.cases.push(await runCase(api, c));
  // Which module loaded, and whether the page could have had the pthreads ones.
  report.capabilities = await api.capabilities();
  report.crossOriginIsolated = globalThis.crossOriginIsolated ?? null;
  report.badCall = await runBadCallCase(api, cases[0]);
  report.pooled = await runCase(api, cases[0], { create: { threads: 2 } });
  return report;
}
