// Compute pipelines, made once per device and pipeline key and cached. Every WGSL program is a
// descriptor of programs.js, and programPipeline() makes its pipeline: the key names what the
// WGSL depends on (the kernel and variant, the head widths, load flavour or narrow dtype it
// compiles in); sizes, strides, masks and causal are uniforms. The rotary, cache append, sinks
// and qk-norm kernels have one pipeline per device, the weights kernel one per DK (and narrow
// cache dtype), the NaN rule's two one per (DK, DV, cache dtype); the variants one per key.
// Pipelines are compiled with createComputePipelineAsync, so that create() can start (and await)
// the ones a module will use before its first call (warmPipelines()).

const caches = new WeakMap();  // GPUDevice → Map(key → Promise<GPUComputePipeline>)

/** Resolves to the pipeline of `key`, compiling `code()` on first use of the key on `device`. */
function pipelineFor(device, key, code) {
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

/**
 * The pipeline of `program` (a descriptor of programs.js: a variant, a decode variant's reduce, a
 * kernel of KERNELS) for `problem`: one per device and program.key(problem).
 */
export const programPipeline = (device, program, problem = {}) => pipelineFor(device, program.key(problem), () => program.shader(problem));

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
