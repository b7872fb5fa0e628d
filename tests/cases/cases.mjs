// The kernel-level case list (kernel_cases.json; schema in README.md) for the JS runners: the
// WebGPU and WASM tests through the public API (test mode) and bench/ (perf mode). Checks the
// list once when loaded, so that a misspelt field or an unknown op fails every runner instead of
// being read as a default.
// Environment-free: Node reads the file, a page fetches it (bench/browser/ imports bench/lib/suite.mjs).

// Fields every case may have beside its op's (the op's fields, types and defaults are the list's
// own "ops" table, which the C++ generator reads too).
const COMMON = ['op', 'mode', 'name', 'benches', 'quick'];
const MASKS = ['none', 'bool', 'additive', 'additive-inf'];
const TYPE_AXES = ['weights', 'kv', 'io', 'act'];
const IS_TYPE = {
  int: Number.isInteger,
  float: Number.isFinite,
  bool: (v) => typeof v === 'boolean',
  string: (v) => typeof v === 'string',
  ints: (v) => Array.isArray(v) && v.every(Number.isInteger),
};

function fail(c, why) {
  throw new Error(`tests/cases/kernel_cases.json: ${c.op} case '${c.name ?? JSON.stringify(c)}': ${why}`);
}

/** Throws unless the case has its op's fields (of their types) and no others, and the rules hold. */
function checkCase(ops, c) {
  const fields = ops[c.op];
  if (!fields) fail(c, `unknown op (one of ${Object.keys(ops).join(', ')})`);
  if (c.mode !== 'test' && c.mode !== 'perf') fail(c, "mode must be 'test' or 'perf'");
  if (c.mode === 'test' && !c.name) fail(c, 'a test case needs a name');
  for (const [f, [type, fallback]] of Object.entries(fields)) {
    if (c[f] === undefined && fallback === null) fail(c, `missing '${f}'`);
    if (c[f] !== undefined && !IS_TYPE[type](c[f])) fail(c, `'${f}' must be of type ${type}`);
  }
  for (const f of Object.keys(c)) if (!COMMON.includes(f) && !(f in fields)) fail(c, `unknown field '${f}'`);
  if (c.kvHeads && c.heads % c.kvHeads !== 0) fail(c, 'kvHeads must divide heads');
  if (c.op === 'decode' && c.mode === 'test' && !(c.length > 0)) fail(c, "a test case needs 'length'");
  // Given positions name every row from 0, the cached ones (position0 of them) first.
  if (c.op === 'rotary' && c.positions?.length && (c.positions.length !== (c.position0 ?? 0) + c.rows
      || !c.positions.every((p) => p >= 0 && p <= 2 ** 31 - 1))) {
    fail(c, "'positions' must give position0 + rows integers in [0, 2^31 - 1]");
  }
  if (c.op !== 'flash') return;
  if (![c.keyPadding, c.attnMask].every((m) => m === undefined || MASKS.includes(m))) fail(c, `masks are ${MASKS.join(' | ')}`);
  // The public API reaches a query offset or a window only through a KV cache (causal, the new
  // rows last, no attention mask): every backend must be able to run every case.
  if ((c.queryOffset || c.window) && (!c.causal || c.S !== (c.queryOffset ?? 0) + c.L || (c.attnMask ?? 'none') !== 'none')) {
    fail(c, 'a query offset or window needs causal, S = queryOffset + L and no attnMask');
  }
  if (c.maskedRows?.length && c.attnMask !== 'bool') fail(c, "maskedRows needs attnMask 'bool'");
}

/** The case with every field its op has filled in (defaults from the "ops" table). */
const withDefaults = (ops, c) => ({
  benches: [], quick: [],
  ...Object.fromEntries(Object.entries(ops[c.op]).map(([f, [, fallback]]) => [f, fallback])),
  ...c,
});

/** Parses and checks the list's JSON text: { typeSets, cases } with defaults filled in. */
export function parseKernelCases(text) {
  const list = JSON.parse(text);
  if (!Array.isArray(list.typeSets) || !list.typeSets.length) throw new Error('kernel_cases.json: typeSets must be a non-empty array');
  for (const t of list.typeSets) {
    if (TYPE_AXES.some((axis) => typeof t[axis] !== 'string') || Object.keys(t).length !== TYPE_AXES.length) {
      throw new Error(`kernel_cases.json: a type set is { ${TYPE_AXES.join(', ')} }, got ${JSON.stringify(t)}`);
    }
  }
  for (const c of list.cases) checkCase(list.ops, c);
  return { typeSets: list.typeSets, cases: list.cases.map((c) => withDefaults(list.ops, c)) };
}

async function readListText() {
  const url = new URL('./kernel_cases.json', import.meta.url);
  if (url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return readFile(url, 'utf8');
  }
  return (await fetch(url)).text();
}

/** The list, checked (Node reads the file, a page fetches it). */
export const kernelCases = parseKernelCases(await readListText());

const typeText = (t) => TYPE_AXES.map((axis) => `${axis} ${t[axis]}`).join(', ');

/**
 * The test-mode cases of `ops`, one per (case, type set), each with `types` set. A runner names
 * the types it has kernels for (e.g. { weights: ['f32'], kv: ['f32'], io: ['f32'] }); a type set
 * it lacks throws, naming the case: a new type in the list fails every runner until each has
 * kernels for it, rather than being skipped.
 */
export function testCases(ops, supported, list = kernelCases) {
  const out = [];
  for (const c of list.cases.filter((x) => x.mode === 'test' && ops.includes(x.op))) {
    for (const types of list.typeSets) {
      const missing = TYPE_AXES.filter((axis) => !supported[axis]?.includes(types[axis]));
      if (missing.length) fail(c, `this runner has no kernel for ${typeText(types)} (axes ${missing.join(', ')})`);
      out.push({ ...c, types, title: `${c.op} ${c.name} [${typeText(types)}]` });
    }
  }
  return out;
}

/** The perf-mode cases of `op` that bench `bench` times (with `quick`: those its --quick keeps). */
export function perfCases(op, bench, { quick = false } = {}, list = kernelCases) {
  return list.cases.filter((c) => c.mode === 'perf' && c.op === op && c.benches.includes(bench)
    && (!quick || c.quick.includes(bench)));
}
