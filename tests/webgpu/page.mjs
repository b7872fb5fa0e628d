// In-page half of tests/webgpu/browser.test.mjs, the Chromium WebGPU driver of the test contract
// (tests/contract/): every check runs here, against the package's browser entry, and its outcome
// goes to window.__webgpu = { adapter, cases: { name: result }, leftOut, done, error } for the
// Node side to assert on. A case result is { ok, detail, backend, ran }. adapter is { kind
// ('software' | 'hardware', adapter.mjs), packageSoftware (the package's own verdict), ...info }.
import * as api from '../../web/src/browser.js';
import { checkResult, compare, decodeFixtures, runCase } from '../contract/contract.mjs';
import { caseFlops, isSoftwareAdapter, webgpuCases, webgpuTestHooks as testHooks } from '../internals.mjs';
import { MAX_FIXTURE_FLOPS, adapterInfo, adapterKind, autoBackendForLargeCalls, requestTestAdapter } from './adapter.mjs';

const { BackendError, GpuBatch, GpuStep, MultiHeadAttention } = api;
const params = new URLSearchParams(location.search);
const state = { adapter: null, cases: {}, done: false, error: null };
window.__webgpu = state;
const log = (line) => { document.getElementById('log').textContent += `${line}\n`; };

const runs = [];
testHooks.onRun = (where) => runs.push(where);

/** The contract's check of a result against a case, as a list of problems. */
const check = (c, result) => {
  const r = checkResult(c, result);
  return r.ok ? [] : [r.detail];
};

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
/** backend 'wasm''s output for the 'auto' checks' call. */
async function autoReference() {
  const reference = await MultiHeadAttention.create({ embedDim: 256, numHeads: 4, backend: 'wasm' });
  try {
    reference.loadStateDict(autoWeights(reference));
    return (await reference.forward(autoInput, autoInput, autoInput)).output;
  } finally {
    reference.dispose();
  }
}

// ?mode=noadapter (a browser without WebGPU enabled, where navigator.gpu finds no adapter):
// 'auto' modules making large calls run them on WASM and probe for an adapter only once.
async function noAdapter() {
  await record('auto without an adapter: WASM, one probe', async () => {
    const expected = await autoReference();
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
  const adapter = navigator.gpu ? await requestTestAdapter(navigator.gpu) : null;
  const kind = adapter ? adapterKind(adapter) : null;
  state.adapter = adapter ? { kind, packageSoftware: isSoftwareAdapter(adapter), ...adapterInfo(adapter) } : null;
  // Both fixture files, as tests/js/fixtures.js reads them in Node (decode_parity.json has the
  // GQA and rotary 'mha' cases).
  const files = await Promise.all(['mha_parity.json', 'decode_parity.json']
    .map(async (name) => decodeFixtures(await (await fetch(`../fixtures/${name}`)).json())));
  const fixtures = webgpuCases(files.flat());
  const decodeCases = files.flat().filter((c) => c.kind === 'decode');
  state.leftOut = fixtures.filter((c) => caseFlops(c) > MAX_FIXTURE_FLOPS).map((c) => c.name);

  for (const c of fixtures.filter((f) => caseFlops(f) <= MAX_FIXTURE_FLOPS)) {
    await record(`parity ${c.name}`, async () => {
      const r = await runCase(api, c, { create: { backend: 'webgpu' } });
      return { problems: r.ok ? [] : [r.detail], backend: r.backend };
    });
  }
  // scaledDotProductAttention() and selfAttention() on the GPU (api/attention_engines.js).
  for (const c of files.flat().filter((f) => f.kind === 'sdpa' || f.kind === 'self')) {
    await record(`sdpa ${c.name}`, async () => {
      const r = await runCase(api, { ...c, options: { ...c.options, backend: 'webgpu' } });
      return { problems: r.ok ? [] : [r.detail] };
    });
  }
  // The KV cache on the GPU: each decode case's sequence in chunks, twice (run_decode.mjs).
  for (const c of decodeCases) {
    await record(`decode ${c.name}`, async () => {
      const r = await runCase(api, c, { create: { backend: 'webgpu' } });
      return { problems: r.ok ? [] : [r.detail], backend: r.backend };
    });
  }

  await record('device loss mid-sequence', () => deviceLossMidSequence(fixtures));
  await record("auto at the default threshold: this adapter's backend", () => autoAtDefaultThreshold(kind));
  await record('gpu tensors: a 2-layer chain and a cached step, buffer to buffer', () => gpuTensorChain({}));
  await record('gpu tensors, weights on the GPU only (hostWeights: false): the same chain and step', () => gpuTensorChain({ hostWeights: false }));

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

// device.destroy() while the 2nd of 3 calls is in flight, on a device the page owns.
async function deviceLossMidSequence(fixtures) {
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
}

// A call of 2^26+ FLOPs, the default threshold: 'auto' looks at the adapter; SwiftShader it
// leaves alone (WASM), a hardware GPU it uses. Either way backend 'wasm''s result.
async function autoAtDefaultThreshold(kind) {
  const expected = await autoReference();
  const mha = await MultiHeadAttention.create({ embedDim: 256, numHeads: 4, backend: 'auto' });
  try {
    mha.loadStateDict(autoWeights(mha));
    runs.length = 0;
    const { output } = await mha.forward(autoInput, autoInput, autoInput);
    const where = autoBackendForLargeCalls(kind);
    const problems = runs.join() === where ? [] : [`ran on ${runs.join()}, expected ${where} on a ${kind} adapter`];
    const diff = compare(output, expected);
    if (!diff.ok) problems.push(`vs backend 'wasm': ${diff.detail}`);
    return { problems, backend: mha.backend };
  } finally {
    mha.dispose();
  }
}

// Two modules (create() `options` added) on a device the page owns: a GPU input, output
// 'gpu-buffer' between them, read() once; then a decode step through both, each on its own cache,
// and one more batched into out (batchedIntoOut()). Bit for bit the host chain's.
async function gpuTensorChain(options) {
  const sameBits = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
  const device = await (await navigator.gpu.requestAdapter()).requestDevice();
  const E = 16;
  const layers = [];
  for (const seed of [1, 2]) {
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, backend: 'webgpu', gpu: device, ...options });
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, {
      data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i * seed) / 4), shape }])));
    layers.push(mha);
  }
  const upload = ({ data, shape }) => {
    const gpuBuffer = device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
    new Float32Array(gpuBuffer.getMappedRange()).set(data);
    gpuBuffer.unmap();
    return { gpuBuffer, shape, dtype: 'float32' };
  };
  const run = async (x, options = () => ({})) => {
    let t = x;
    for (const [i, m] of layers.entries()) t = (await m.forward(t, t, t, { ...options(i) })).output;
    return t;
  };
  const problems = [];
  try {
    const x = { data: Float32Array.from({ length: 6 * E }, (_, i) => Math.cos(i)), shape: [1, 6, E] };
    const expected = await run(x);
    const got = await run(upload(x), () => ({ output: 'gpu-buffer' }));
    if (!sameBits(await got.read(), expected.data)) problems.push('chain: not the host chain\'s values');
    const hostCaches = layers.map((m) => m.createCache({ maxLength: 8 }));
    const gpuCaches = layers.map((m) => m.createCache({ maxLength: 8 }));
    const row = { data: Float32Array.from({ length: E }, (_, i) => Math.sin(i + 1)), shape: [1, 1, E] };
    const stepExpected = await run(row, (i) => ({ cache: hostCaches[i] }));
    const stepGot = await run(upload(row), (i) => ({ cache: gpuCaches[i], output: 'gpu-buffer' }));
    if (!sameBits(await stepGot.read(), stepExpected.data)) problems.push('cached step: not the host stack\'s values');
    problems.push(...await batchedIntoOut(device, layers, hostCaches, gpuCaches, upload, run, E));
    if (runs.some((r) => r !== 'webgpu')) problems.push(`ran on ${runs.join()}`);
    return { problems, backend: layers[0].backend };
  } finally {
    for (const m of layers) m.dispose();
    device.destroy();
  }
}

// A step into a GpuBatch, each layer's output into a place of the page's buffers (`out`), the
// page's own copy between the layers (batch.encode()): one submit, the host stack's step bit for
// bit; then a GpuStep recorded and replayed for a next token, the host stack's next step.
async function batchedIntoOut(device, layers, hostCaches, gpuCaches, upload, run, E) {
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const row = { data: Float32Array.from({ length: E }, (_, i) => Math.cos(i + 2)), shape: [1, 1, E] };
  const expected = await run(row, (i) => ({ cache: hostCaches[i] }));
  const places = [0, 1].map(() => ({ gpuBuffer: device.createBuffer({ size: 256 + E * 4, usage }), byteOffset: 256 }));
  const moved = device.createBuffer({ size: E * 4, usage });
  const batch = new GpuBatch();
  const x = upload(row);
  await layers[0].forward(x, x, x, { cache: gpuCaches[0], output: 'gpu-buffer', out: places[0], batch });
  const y = batch.encode(device, (encoder) => {
    encoder.copyBufferToBuffer(places[0].gpuBuffer, 256, moved, 0, E * 4);
    return { gpuBuffer: moved, shape: [1, 1, E] };
  });
  const { output } = await layers[1].forward(y, y, y, { cache: gpuCaches[1], output: 'gpu-buffer', out: places[1], batch });
  await batch.submit();
  const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
  const problems = same(await output.read(), expected.data) && output.gpuBuffer === places[1].gpuBuffer
    ? [] : ['batched step into out with a copy of the page\'s between the layers: not the host stack\'s values'];
  // The same two calls recorded in a GpuStep, then replayed for the next token: the host's next step.
  const step = new GpuStep();
  const input = device.createBuffer({ size: E * 4, usage });
  const next = { data: Float32Array.from({ length: E }, (_, i) => Math.sin(i + 3)), shape: [1, 1, E] };
  device.queue.writeBuffer(input, 0, row.data);
  const caches = layers.map((m) => m.createCache({ maxLength: 8 }));
  const fresh = layers.map((m) => m.createCache({ maxLength: 8 }));
  let t = { gpuBuffer: input, shape: [1, 1, E] };
  for (const [i, m] of layers.entries()) t = (await m.forward(t, t, t, { cache: caches[i], output: 'gpu-buffer', out: places[i], batch: step })).output;
  await step.submit();
  await run(row, (i) => ({ cache: fresh[i] }));
  const want = await run(next, (i) => ({ cache: fresh[i] }));
  device.queue.writeBuffer(input, 0, next.data);
  await step.replay();
  if (!same(await t.read(), want.data)) problems.push('a GpuStep replayed: not the host stack\'s next step');
  return problems;
}

main().catch((e) => { state.error = `${e.name}: ${e.message}\n${e.stack}`; }).finally(() => {
  testHooks.onRun = null;
  state.done = true;
  log(state.error ?? 'done');
});
