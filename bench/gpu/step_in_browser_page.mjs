// The page of bench/gpu/step_in_browser.mjs: a stack of `layers` cached layers (E `e`, 2 query
// heads over 1 KV head, RoPE) recorded once in a GpuStep on the browser's WebGPU adapter, then
// `tokens` replays, each followed by the read() of the last output. Leaves in window.__step
// { adapter, layers, tokens, record: [ms from replay() to its queue.submit()], token: [ms of a
// replay and its read()] }, or { error }.
import { GpuStep, MultiHeadAttention } from '../../web/src/browser.js';
import { filled, seededStateDict } from '../../tests/contract/random.mjs';

const query = new URLSearchParams(location.search);
const layerCount = Number(query.get('layers') ?? 24);
const E = Number(query.get('e') ?? 128);
const tokens = Number(query.get('tokens') ?? 40);

async function run() {
  const adapter = await navigator.gpu.requestAdapter();
  const device = await adapter.requestDevice();
  const onDevice = (data) => {
    const gpuBuffer = device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, mappedAtCreation: true });
    new Float32Array(gpuBuffer.getMappedRange()).set(data);
    gpuBuffer.unmap();
    return { gpuBuffer, shape: [1, 1, E], dtype: 'float32' };
  };
  const layers = [];
  for (let i = 0; i < layerCount; i++) {
    const m = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, numKvHeads: 1, rotary: {}, backend: 'webgpu', gpu: device, hostWeights: false });
    m.loadStateDict(seededStateDict(m.stateDictShapes, 5 + i));
    layers.push(m);
  }
  const caches = layers.map((m) => m.createCache({ maxLength: tokens + 8 }));
  const x = onDevice(filled(E, 9));
  const places = [onDevice(new Float32Array(E)), onDevice(new Float32Array(E))];
  const step = new GpuStep();
  let last = x;
  for (const [i, m] of layers.entries()) last = (await m.forward(last, last, last, { cache: caches[i], output: 'gpu-buffer', out: places[i % 2], batch: step })).output;
  await step.submit();
  // The replay's host time ends at its queue.submit().
  const submit = device.queue.submit.bind(device.queue);
  let submittedAt = 0;
  device.queue.submit = (buffers) => { submittedAt = performance.now(); return submit(buffers); };
  const record = [];
  const token = [];
  for (let t = 0; t < tokens; t++) {
    const t0 = performance.now();
    await step.replay();
    record.push(submittedAt - t0);
    await last.read();
    token.push(performance.now() - t0);
  }
  const info = adapter.info ?? {};
  return { adapter: [info.vendor, info.architecture, info.description].filter(Boolean).join(' '), layers: layerCount, tokens, record, token };
}

run().then((result) => { window.__step = result; }, (e) => { window.__step = { error: String(e?.stack ?? e) }; });
