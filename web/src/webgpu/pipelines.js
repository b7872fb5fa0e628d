// Compute pipelines, made once per device and pipeline key and cached. A key names what the WGSL
// depends on: the kernel and variant, and the head widths or load flavour a variant compiles in
// (kernel_variants.js); sizes, strides, masks and causal are uniforms. The rotary, cache append,
// sinks and qk-norm kernels have one pipeline per device, the weights kernel one per DK (and narrow cache dtype), the NaN rule's
// two one per (DK, DV, cache dtype); the variants one per key.
// Pipelines are compiled with createComputePipelineAsync, so that create() can start (and await)
// the ones a module will use before its first call (warmPipelines()).
import { attentionSinksShader } from './kernels/attention_sinks.wgsl.js';
import { attentionWeightsShader } from './kernels/attention_weights.wgsl.js';
import { cacheAppendShader } from './kernels/cache_append.wgsl.js';
import { cacheAppendNarrowShader } from './kernels/cache_narrow.wgsl.js';
import { cacheFlagsShader, nonFiniteRowsShader } from './kernels/nonfinite_rows.wgsl.js';
import { qkNormShader } from './kernels/qk_norm.wgsl.js';
import { rotaryShader } from './kernels/rotary.wgsl.js';

const caches = new WeakMap();  // GPUDevice → Map(key → Promise<GPUComputePipeline>)

/** Resolves to the pipeline of `key`, compiling `code()` on first use of the key on `device`. */
export function pipelineFor(device, key, code) {
  let cache = caches.get(device);
  if (!cache) caches.set(device, (cache = new Map()));
  let pipeline = cache.get(key);
  if (!pipeline) {
    const module = device.createShaderModule({ code: code(), label: `webattention ${key}` });
    pipeline = device.createComputePipelineAsync({
      layout: 'auto', compute: { module, entryPoint: 'main' }, label: `webattention ${key}`,
    });
    pipeline.catch(() => cache.delete(key));  // a failed compile is not cached
    cache.set(key, pipeline);
  }
  return pipeline;
}

/** The pipeline of a variant descriptor (kernel_variants.js) for `problem`. */
export const variantPipeline = (device, variant, problem) => pipelineFor(device, variant.key(problem), () => variant.shader(problem));

const kinds = {
  rotary: () => rotaryShader(),
  cacheAppend: () => cacheAppendShader(),
  cacheAppendNarrow: ({ dtype }) => cacheAppendNarrowShader(dtype),
  weights: ({ dk, dtype }) => attentionWeightsShader({ dk, kv: dtype }),
  sinks: () => attentionSinksShader(),
  qkNorm: () => qkNormShader(),
  cacheFlags: (shape) => cacheFlagsShader(shape),
  nonFiniteRows: (shape) => nonFiniteRowsShader(shape),
};

/**
 * The pipeline of a kernel without variants: 'rotary', 'cacheAppend', 'sinks', 'qkNorm',
 * 'weights' ({ dk, dtype? }: a narrow cache's dtype K is read in), 'cacheAppendNarrow' ({ dtype }),
 * 'cacheFlags' and 'nonFiniteRows' ({ dk, dv, dtype }: a cached call's NaN rule).
 */
export function getPipeline(device, kind, shape = {}) {
  const key = [shape.dk, shape.dv, shape.dtype].filter((x) => x !== undefined).join(':');
  return pipelineFor(device, `${kind}:${key}`, () => kinds[kind](shape));
}

const layouts = new WeakMap();  // GPUComputePipeline → its bind group layout 0

/** Bind group layout 0 of `pipeline`, asked of the pipeline once (every dispatch needs it). */
export function bindGroupLayout(pipeline) {
  let layout = layouts.get(pipeline);
  if (!layout) layouts.set(pipeline, (layout = pipeline.getBindGroupLayout(0)));
  return layout;
}

/** Number of pipelines compiled (or compiling) on `device` so far (tests: they are cached). */
export function pipelineCount(device) {
  return caches.get(device)?.size ?? 0;
}
