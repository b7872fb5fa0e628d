// Compute pipelines, made once per device and shape class and cached: the linear, rotary and
// cache append kernels have one pipeline per device; flash attention and the decode path's partial kernel one per head-width
// pair (DK, DV); the weights kernel one per DK; the decode reduce kernel one per DV. Everything
// else (sizes, strides, masks, causal) is a uniform, so a module that sees many sequence lengths
// still compiles at most seven shaders.
import { attentionWeightsShader } from './kernels/attention_weights.wgsl.js';
import { cacheAppendShader } from './kernels/cache_append.wgsl.js';
import { decodePartialShader } from './kernels/decode_partial.wgsl.js';
import { decodeReduceShader } from './kernels/decode_reduce.wgsl.js';
import { flashAttentionShader } from './kernels/flash_attention.wgsl.js';
import { linearShader } from './kernels/linear.wgsl.js';
import { rotaryShader } from './kernels/rotary.wgsl.js';

const caches = new WeakMap();  // GPUDevice → Map(key → Promise<GPUComputePipeline>)

const kinds = {
  linear: () => linearShader(),
  rotary: () => rotaryShader(),
  cacheAppend: () => cacheAppendShader(),
  flash: ({ dk, dv }) => flashAttentionShader({ dk, dv }),
  weights: ({ dk }) => attentionWeightsShader({ dk }),
  decodePartial: ({ dk, dv }) => decodePartialShader({ dk, dv }),
  decodeReduce: ({ dv }) => decodeReduceShader({ dv }),
};

/** Resolves to the pipeline of kernel `kind` for `shape` ({ dk, dv }), compiling it on first use. */
export function getPipeline(device, kind, shape = {}) {
  let cache = caches.get(device);
  if (!cache) caches.set(device, (cache = new Map()));
  const key = `${kind}:${shape.dk ?? ''}:${shape.dv ?? ''}`;
  let pipeline = cache.get(key);
  if (!pipeline) {
    const code = kinds[kind](shape);
    const module = device.createShaderModule({ code, label: `webattention ${key}` });
    pipeline = device.createComputePipelineAsync({
      layout: 'auto', compute: { module, entryPoint: 'main' }, label: `webattention ${key}`,
    });
    pipeline.catch(() => cache.delete(key));  // a failed compile is not cached
    cache.set(key, pipeline);
  }
  return pipeline;
}

const layouts = new WeakMap();  // GPUComputePipeline → its bind group layout 0

/** Bind group layout 0 of `pipeline`, asked of the pipeline once (every dispatch needs it). */
export function bindGroupLayout(pipeline) {
  let layout = layouts.get(pipeline);
  if (!layout) layouts.set(pipeline, (layout = pipeline.getBindGroupLayout(0)));
  return layout;
}

/** Number of pipelines compiled on `device` so far (tests: they are cached). */
export function pipelineCount(device) {
  return caches.get(device)?.size ?? 0;
}
