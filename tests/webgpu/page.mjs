// In-page half of tests/webgpu/browser.test.mjs: every check runs here, against the package's
// browser entry, and its outcome goes to window.__webgpu = { adapter, cases: { name: result },
// done, error } for the Node side to assert on. A case result is { ok, detail, backend, ran }.
import { BackendError, MultiHeadAttention } from '../../web/src/browser.js';
import { forwardFlops, testHooks } from '../../web/src/dispatch.js';
import { resolveMhaConfig, resolveMhaForward } from '../../web/src/shapes.js';

const params = new URLSearchParams(location.search);
const MAX_FLOPS = Number(params.get('maxFlops') ?? 2e8);
const state = { adapter: null, cases: {}, done: false, error: null };
window.__webgpu = state;
const log = (line) => { document.getElementById('log').textContent += `${line}\n`; };

const runs = [];
testHooks.onRun = (where) => runs.push(where);

const dtypes = { float32: Float32Array, uint8: Uint8Array };
function decode({ dtype, shape, b64 }) {
  const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
  const Type = dtypes[dtype];
  return { data: new Type(bytes.buffer, 0, bytes.length / Type.BYTES_PER_ELEMENT), shape };
}
const decodeAll = (obj) => Object.fromEntries(Object.entries(obj ?? {}).map(([k, v]) =>
  [k, v && typeof v === 'object' && 'b64' in v ? decode(v) : v]));

// Same rule as tests/js/fixtures.js: |a − b| <= 1e-4 + 1e-4·|b| everywhere.
function mismatch(actual, expected) {
  if (!actual) return 'missing';
  if (JSON.stringify(actual.shape) !== JSON.stringify(expected.shape)) return `shape ${actual.shape} vs ${expected.shape}`;
  let worst = 0;
  for (let i = 0; i < expected.data.length; i++) {
    const err = Math.abs(actual.data[i] - expected.data[i]);
    if (!(err <= 1e-4 + 1e-4 * Math.abs(expected.data[i]))) return `index ${i}: ${actual.data[i]} vs ${expected.data[i]}`;
    worst = Math.max(worst, err);
  }
  return null;
}
function check(c, result) {
  const problems = [];
  const out = mismatch(result.output, c.expected.output);
  if (out) problems.push(`output ${out}`);
  if (c.expected.attnWeights) {
    const w = mismatch(result.attnWeights, c.expected.attnWeights);
    if (w) problems.push(`attnWeights ${w}`);
  } else if (result.attnWeights) problems.push('attnWeights returned but not requested');
  return problems;
}

async function record(name, fn) {
  runs.length = 0;
  try {
    const { problems = [], backend } = (await fn()) ?? {};
    state.cases[name] = { ok: problems.length === 0, detail: problems.join('; '), backend, ran: [...runs] };
  } catch (e) {
    state.cases[name] = { ok: false, detail: `${e.name}: ${e.message}`, ran: [...runs] };
  }
  log(`${state.cases[name].ok ? 'ok  ' : 'FAIL'} ${name} ${state.cases[name].detail}`);
}

// The 'auto' checks' weights and input (embedDim 256, 4 heads): a call of 2^26+ FLOPs, the
// default threshold, so that 'auto' considers WebGPU at all.
const autoWeights = (mha) => Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => {
  const n = shape.reduce((a, b) => a * b, 1);
  return [name, { data: Float32Array.from({ length: n }, (_, i) => Math.sin(i) / 16), shape }];
}));
const autoInput = {
  data: Float32Array.from({ length: 128 * 256 }, (_, i) => Math.cos(i)), shape: [1, 128, 256],
};

// ?mode=noadapter (a browser without WebGPU enabled, where navigator.gpu finds no adapter):
// 'auto' modules making large calls run them on WASM and probe for an adapter only once.
async function noAdapter() {
  await record('auto without an adapter: WASM, one probe', async () => {
    const reference = await MultiHeadAttention.create({ embedDim: 256, numHeads: 4, backend: 'wasm' });
    reference.loadStateDict(autoWeights(reference));
    const expected = (await reference.forward(autoInput, autoInput, autoInput)).output;
    reference.dispose();
    runs.length = 0;
    const problems = [];
    const backends = [];
    for (let m = 0; m < 2; m++) {
      const mha = await MultiHeadAttention.create({ embedDim: 256, numHeads: 4 });
      mha.loadStateDict(autoWeights(mha));
      for (let call = 0; call < 2; call++) {
        const out = (await mha.forward(autoInput, autoInput, autoInput)).output;
        if (out.data.some((v, i) => v !== expected.data[i])) problems.push(`module ${m} call ${call}: differs from backend 'wasm'`);
      }
      backends.push(mha.backend);
      mha.dispose();
    }
    if (runs.join() !== 'wasm,wasm,wasm,wasm') problems.push(`ran on ${runs.join()}`);
    return { problems, backend: [...new Set(backends)].join() };
  });
}

async function main() {
  if (params.get('mode') === 'noadapter') return noAdapter();
  const adapter = await navigator.gpu?.requestAdapter();
  state.adapter = adapter ? { ...Object.fromEntries(['vendor', 'architecture', 'device', 'description'].map((k) => [k, adapter.info[k]])) } : null;
  const json = await (await fetch('../fixtures/mha_parity.json')).json();
  const fixtures = json.cases.filter((c) => c.kind === 'mha').map((c) => ({
    ...c, stateDict: decodeAll(c.stateDict), inputs: decodeAll(c.inputs), options: decodeAll(c.options), expected: decodeAll(c.expected),
  }));
  const flops = (c) => {
    const config = resolveMhaConfig(c.create);
    return forwardFlops(resolveMhaForward(config, c.inputs.query, c.inputs.key, c.inputs.value, c.options), config);
  };
  state.leftOut = fixtures.filter((c) => flops(c) > MAX_FLOPS).map((c) => c.name);

  for (const c of fixtures.filter((f) => flops(f) <= MAX_FLOPS)) {
    await record(`parity ${c.name}`, async () => {
      const mha = await MultiHeadAttention.create({ ...c.create, backend: 'webgpu' });
      try {
        mha.loadStateDict(c.stateDict);
        const result = await mha.forward(c.inputs.query, c.inputs.key, c.inputs.value, c.options);
        return { problems: check(c, result), backend: mha.backend };
      } finally {
        mha.dispose();
      }
    });
  }

  // device.destroy() while the 2nd of 3 calls is in flight, on a device the page owns.
  await record('device loss mid-sequence', async () => {
    const c = fixtures.find((f) => f.name === 'kpm_bool_attn_float');
    const device = await (await navigator.gpu.requestAdapter()).requestDevice();
    const mha = await MultiHeadAttention.create({ ...c.create, backend: 'webgpu', gpu: device });
    const warnings = [];
    const warn = console.warn;
    console.warn = (...args) => warnings.push(args.join(' '));
    try {
      mha.loadStateDict(c.stateDict);
      const { query, key, value } = c.inputs;
      const results = [await mha.forward(query, key, value, c.options)];
      const inFlight = mha.forward(query, key, value, c.options);
      device.destroy();
      results.push(await inFlight, await mha.forward(query, key, value, c.options));
      const problems = results.flatMap((r, i) => check(c, r).map((p) => `call ${i + 1}: ${p}`));
      if (runs.join() !== 'webgpu,wasm,wasm') problems.push(`ran on ${runs.join()}`);
      if (warnings.length !== 1 || !/device was lost/.test(warnings[0])) problems.push(`warnings: ${JSON.stringify(warnings)}`);
      return { problems, backend: mha.backend };
    } finally {
      console.warn = warn;
      mha.dispose();
    }
  });

  // A call of 2^26+ FLOPs, the default threshold: 'auto' looks at the adapter, finds SwiftShader
  // and stays on WASM.
  await record('auto on a software adapter stays on WASM', async () => {
    const mha = await MultiHeadAttention.create({ embedDim: 256, numHeads: 4, backend: 'auto' });
    try {
      mha.loadStateDict(autoWeights(mha));
      await mha.forward(autoInput, autoInput, autoInput);
      const problems = runs.join() === 'wasm' ? [] : [`ran on ${runs.join()}`];
      return { problems, backend: mha.backend };
    } finally {
      mha.dispose();
    }
  });

  await record('webgpu without an adapter: BackendError', async () => {
    const noAdapter = { requestAdapter: async () => null };
    try {
      await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'webgpu', gpu: noAdapter });
      return { problems: ['create() resolved'] };
    } catch (e) {
      return { problems: e instanceof BackendError && e.name === 'BackendError' ? [] : [`${e.name}: ${e.message}`] };
    }
  });
}

main().catch((e) => { state.error = `${e.name}: ${e.message}\n${e.stack}`; }).finally(() => {
  testHooks.onRun = null;
  state.done = true;
  log(state.error ?? 'done');
});
