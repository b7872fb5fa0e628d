// Shared by the Node app and the Vite/browser app that tests/package/run.mjs builds: runs fixture
// cases from tests/fixtures/mha_parity.json through the installed `webattention` package. Plain
// ESM with no Node or DOM APIs beyond atob, so it runs unchanged in both (it is copied into each
// temp app, like a user's own code would be).

export const RTOL = 1e-4;
export const ATOL = 1e-4;

function decode(t) {
  const bin = atob(t.b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; ++i) bytes[i] = bin.charCodeAt(i);
  if (t.dtype === 'uint8') return { data: bytes, shape: t.shape };
  if (t.dtype === 'float32') return { data: new Float32Array(bytes.buffer), shape: t.shape };
  throw new Error(`unknown fixture dtype ${t.dtype}`);
}

const isEncoded = (v) => v !== null && typeof v === 'object' && 'b64' in v;
const decodeAll = (obj) =>
  Object.fromEntries(Object.entries(obj ?? {}).map(([k, v]) => [k, isEncoded(v) ? decode(v) : v]));

/** { ok, maxAbs, worst, detail }: ok when every |a-b| <= ATOL + RTOL*|b| (and shapes match). */
export function compare(name, actual, expected) {
  if (!actual) return { ok: false, detail: `${name}: missing (got ${actual})` };
  const shapeOk = JSON.stringify(actual.shape) === JSON.stringify(expected.shape);
  if (!shapeOk || actual.data.length !== expected.data.length) {
    return { ok: false, detail: `${name}: shape ${JSON.stringify(actual.shape)}, expected ${JSON.stringify(expected.shape)}` };
  }
  let maxAbs = 0;
  let worst = -1;  // index of the largest violation, or of the largest error
  let worstExcess = -Infinity;
  for (let i = 0; i < expected.data.length; ++i) {
    const a = actual.data[i];
    const b = expected.data[i];
    const err = Math.abs(a - b);
    const excess = Number.isNaN(err) ? Infinity : err - (ATOL + RTOL * Math.abs(b));
    if (!(err <= maxAbs)) maxAbs = Number.isNaN(err) ? NaN : Math.max(maxAbs, err);
    if (excess > worstExcess) { worstExcess = excess; worst = i; }
  }
  const ok = worstExcess <= 0;
  const at = worst >= 0 ? ` (worst at [${worst}]: got ${actual.data[worst]}, expected ${expected.data[worst]})` : '';
  return { ok, maxAbs, detail: `${name}: max |err| ${maxAbs.toExponential(2)}${ok ? '' : at}` };
}

function prepare(fixtureCase, perturb) {
  if (fixtureCase.kind !== 'mha') throw new Error(`case ${fixtureCase.name}: kind ${fixtureCase.kind} is not 'mha'`);
  const expected = decodeAll(fixtureCase.expected);
  if (perturb) expected.output.data[0] += perturb;
  return {
    inputs: decodeAll(fixtureCase.inputs),
    options: decodeAll(fixtureCase.options),
    stateDict: decodeAll(fixtureCase.stateDict),
    expected,
  };
}

async function forwardAndCompare(mha, name, { inputs, options, expected }) {
  const result = await mha.forward(inputs.query, inputs.key, inputs.value, options);
  const output = compare('output', result.output, expected.output);
  const attnWeights = expected.attnWeights
    ? compare('attnWeights', result.attnWeights, expected.attnWeights)
    : { ok: result.attnWeights === null, detail: `attnWeights: ${result.attnWeights === null ? 'null as expected' : 'expected null'}` };
  return { name, ok: output.ok && attnWeights.ok, output, attnWeights, detail: `${output.detail}; ${attnWeights.detail}` };
}

/**
 * Runs one "mha" fixture case through api.MultiHeadAttention; perturb (a number) is added to the
 * first expected output value, to prove that a mismatch is caught. threads (optional) is passed
 * to create() (2: the worker pool, whose workers a bundler must have found and copied).
 * Resolves to { name, ok, output, attnWeights, detail, threads: mha.threads after the call }.
 */
export async function runMhaCase(api, fixtureCase, { perturb = 0, threads } = {}) {
  const c = prepare(fixtureCase, perturb);
  const mha = await api.MultiHeadAttention.create(threads === undefined ? fixtureCase.create : { ...fixtureCase.create, threads });
  try {
    mha.loadStateDict(c.stateDict);
    return { ...(await forwardAndCompare(mha, fixtureCase.name, c)), threads: mha.threads };
  } finally {
    mha.dispose();
  }
}

/**
 * A forward() whose query has embedDim - 1 columns must reject with a ShapeError (by name, and by
 * class when the package exports it); a valid forward() on the same module must still work after.
 * Resolves to { rejected, name, isInstance, message, recovered: <runMhaCase-like result> }.
 */
export async function runBadCallCase(api, fixtureCase, { perturb = 0 } = {}) {
  const c = prepare(fixtureCase, perturb);
  const mha = await api.MultiHeadAttention.create(fixtureCase.create);
  try {
    mha.loadStateDict(c.stateDict);
    const shape = [...c.inputs.query.shape];
    shape[shape.length - 1] -= 1;
    const badQuery = { data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape };
    let outcome;
    try {
      await mha.forward(badQuery, c.inputs.key, c.inputs.value, c.options);
      outcome = { rejected: false };
    } catch (e) {
      outcome = {
        rejected: true,
        name: e?.name,
        isInstance: typeof api.ShapeError === 'function' ? e instanceof api.ShapeError : null,
        message: String(e?.message ?? e),
      };
    }
    outcome.recovered = await forwardAndCompare(mha, fixtureCase.name, c);
    return outcome;
  } finally {
    mha.dispose();
  }
}

/**
 * Everything a user app checks, in one report: the named import is the namespace's, the export
 * list, each fixture case, a bad call followed by a good one, and a case on the worker pool.
 */
export async function buildReport(api, MultiHeadAttention, cases, { perturb = 0 } = {}) {
  const report = {
    namedImport: typeof MultiHeadAttention === 'function' && MultiHeadAttention === api.MultiHeadAttention,
    exports: Object.keys(api).sort(),
    cases: [],
  };
  for (const c of cases) report.cases.push(await runMhaCase(api, c, { perturb }));
  report.badCall = await runBadCallCase(api, cases[0], { perturb });
  report.pooled = await runMhaCase(api, cases[0], { perturb, threads: 2 });
  return report;
}
