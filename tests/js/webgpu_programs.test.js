// The WebGPU program registry (web/src/webgpu/programs.js) and the flash-or-decode decision
// (selection/attention_path.js), without a GPU: every WGSL program is a descriptor of one shape,
// programPipeline() makes one pipeline per device and key, the kernels without variants keep the
// keys (and pipeline labels) they had, and attentionPath() takes decode up to DECODE_MAX_L rows
// where its scratch and grid fit the device.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KERNELS, VARIANTS } from '../../web/src/webgpu/programs.js';
import { pipelineCount, programPipeline } from '../../web/src/webgpu/pipelines.js';
import { attentionFamily, attentionPath, splitShape } from '../../web/src/webgpu/selection/attention_path.js';
import { DECODE_MAX_L } from '../../web/src/webgpu/selection/kernel_config.js';

const descriptors = () => [
  ...Object.values(VARIANTS).flatMap((family) => Object.values(family)),
  ...Object.values(VARIANTS.decode).map((v) => v.reduce),
  ...Object.values(KERNELS),
];

test('every program is a descriptor { name, fits, key, shader }', () => {
  const all = descriptors();
  assert.ok(all.length > 20, `${all.length} descriptors`);
  for (const d of all) {
    assert.equal(typeof d.name, 'string');
    for (const f of ['fits', 'key', 'shader']) assert.equal(typeof d[f], 'function', `${d.name}.${f}`);
  }
});

test('the kernels without variants: a key per name and dk, dv, dtype, heads given; all fit', () => {
  assert.deepEqual(Object.keys(KERNELS), ['rotary', 'cacheAppend', 'weights', 'sinks', 'qkNorm', 'nonFiniteRows', 'widenHalf', 'narrowHalf']);
  assert.equal(KERNELS.widenHalf.key(), 'widenHalf:');
  assert.equal(KERNELS.rotary.key(), 'rotary:');
  assert.equal(KERNELS.cacheAppend.key({ dk: 64, dv: 32, dtype: 'int8', heads: 8 }), 'cacheAppend:64:32:int8:8');
  assert.equal(KERNELS.weights.key({ dk: 64 }), 'weights:64');
  assert.equal(KERNELS.weights.key({ dk: 64, dtype: 'float16' }), 'weights:64:float16');
  assert.equal(KERNELS.nonFiniteRows.key({ dk: 64, dv: 32, dtype: 'float32', rows: true }), 'nonFiniteRows:64:32:float32:rows');
  assert.equal(VARIANTS.q8rows.tree32.key({}), 'q8Rows:');
  assert.equal(VARIANTS.q8rows.sg32.key({}), 'q8Rows:sg32');
  assert.equal(VARIANTS.q8linear.q8tile16.key({ dtype: 'int4', dot: 'dot4' }), 'q8Linear:int4:dot4');
  assert.equal(VARIANTS.q8linear.q8tile16.key({ dtype: 'int8', dot: 'loop' }), 'q8Linear:int8:loop');
  assert.equal(VARIANTS.q8linear.q8r64x64.key({ dtype: 'int8', dot: 'dot4' }), 'q8Linear:q8r64x64:int8:dot4');
  assert.equal(VARIANTS.decode.split256.reduce.key({ dv: 48 }), 'decodeReduce:split256:48');
  assert.equal(VARIANTS.decode.split64.reduceNan.key({ dk: 16, dv: 48, dtype: 'int8', rows: true }), 'decodeReduceNan:split64:16:48:int8:rows');
  assert.equal(VARIANTS.decode.split256sg.reduceNan.key({ dk: 16, dv: 48, dtype: 'float32' }), 'decodeReduceNan:split256:16:48:float32');
  for (const d of Object.values(KERNELS)) assert.equal(d.fits({}), true);
});

test('programPipeline(): one pipeline per device and key, labelled by its key, compiled from the descriptor\'s WGSL', async () => {
  const modules = [];
  const device = {
    createShaderModule: (d) => (modules.push(d), { label: d.label }),
    createComputePipelineAsync: (d) => Promise.resolve({ label: d.label }),
  };
  const a = programPipeline(device, KERNELS.weights, { dk: 64 });
  assert.equal(programPipeline(device, KERNELS.weights, { dk: 64 }), a, 'the same key: the same pipeline');
  programPipeline(device, KERNELS.weights, { dk: 32 });
  programPipeline(device, VARIANTS.decode.split256.reduce, { dv: 64 });
  assert.equal(pipelineCount(device), 3);
  assert.equal((await a).label, 'webattention weights:64');
  assert.equal(modules[0].code, KERNELS.weights.shader({ dk: 64 }));
  assert.equal(modules[2].code, VARIANTS.decode.split256.reduce.shader({ dv: 64 }));
});

test('attentionPath(): decode up to DECODE_MAX_L rows where its scratch and grid fit, else flash', () => {
  const config = { numHeads: 4, valueHeadDim: 64 };
  const limits = { maxStorageBufferBindingSize: 2 ** 27, maxBufferSize: 2 ** 28, maxComputeWorkgroupsPerDimension: 65535 };
  const plan = (L, T = 100, B = 1) => ({ B, L, T });
  assert.equal(attentionPath(plan(1), config, limits), 'decode');
  assert.equal(attentionPath(plan(DECODE_MAX_L), config, limits), 'decode');
  assert.equal(attentionPath(plan(DECODE_MAX_L + 1), config, limits), 'flash');
  // B·h·L·⌈T/256⌉·(d_v + 2) floats of partials: over the binding limit → flash.
  assert.equal(attentionPath(plan(1, 256 * 2000, 64), config, { ...limits, maxStorageBufferBindingSize: 2 ** 20 }), 'flash');
  assert.equal(attentionPath(plan(1, 256 * 10), config, { ...limits, maxComputeWorkgroupsPerDimension: 9 }), 'flash');
  assert.equal(attentionFamily('decode'), 'decode');
  assert.equal(attentionFamily('flash'), 'attention');
});

test('each decode variant fits a call by its own chunk\'s scratch and grid; without a call, any', () => {
  const config = { numHeads: 4, valueHeadDim: 64 };
  const limits = { maxStorageBufferBindingSize: 2 ** 27, maxBufferSize: 2 ** 28, maxComputeWorkgroupsPerDimension: 65535 };
  const names = (T, lim = limits) => Object.values(VARIANTS.decode)
    .filter((v) => v.fits(lim, splitShape({ B: 1, L: 1, T }, config))).map((v) => v.chunk);
  const chunks = Object.values(VARIANTS.decode).map((v) => v.chunk);
  assert.ok(chunks.includes(64) && chunks.includes(1024), chunks.join());
  assert.deepEqual(names(5000), chunks);
  // 5000 keys: 79 chunks of 64, 20 of 256, 5 of 1024; a grid of at most 20 leaves out 64.
  assert.deepEqual(names(5000, { ...limits, maxComputeWorkgroupsPerDimension: 20 }), chunks.filter((c) => c >= 256));
  // Scratch: 4 heads × ⌈T/chunk⌉ × 66 floats; 2^16 bytes hold 62 chunks of them: 64 is over.
  assert.deepEqual(names(5000, { ...limits, maxStorageBufferBindingSize: 2 ** 16 }), chunks.filter((c) => c >= 256));
  for (const v of Object.values(VARIANTS.decode)) assert.equal(v.fits(limits, { dk: 64, dv: 64 }), true, `${v.name} without a call`);
});
