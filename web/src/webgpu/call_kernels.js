// Which kernel variants one forward runs and their pipelines. The choice (kernel_selection.js)
// is per shape class: for the linear family the rows of the call (bucketed to a power of two) and
// the module's widths; for attention the head widths, batch × heads, query rows and keys
// (bucketed) and causal. Everything is resolved before the call encodes anything.
import { preferredVariant } from './kernel_config.js';
import { chooseKernels } from './kernel_selection.js';
import { fittingVariants } from './kernel_variants.js';
import { getPipeline, variantPipeline } from './pipelines.js';
import { packedKey } from './kernels/packed_values.wgsl.js';

const bucket = (n) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/** The attention family of a path: 'decode' or 'attention' (flash). */
export const attentionFamily = (path) => (path === 'decode' ? 'decode' : 'attention');

/** The decisions of one call, in the order they are measured (kernel_selection.js). */
export function callDecisions(plan, config, path, limits) {
  const { B, L, S, T } = plan;
  const { embedDim: E, kdim, vdim, numHeads: H, headDim: dk, valueHeadDim: dv } = config;
  const family = attentionFamily(path);
  const causal = plan.isCausal || plan.cache ? 'causal' : 'full';
  const rows = B * Math.max(L, S);  // the largest projection's
  // Narrow weights are other kernels (their own timings); float32's classes stay as they were.
  const weights = packedKey(config.weightsDtype);
  const decision = (f, shapeClass, candidates) => ({
    family: f, shapeClass, candidates, preferred: preferredVariant(f, rows, candidates.map((v) => v.name)),
  });
  return [
    decision('linear', `M${bucket(B * L)}:S${bucket(B * S)}:E${E}:${kdim}:${vdim}:${H}x${dk}x${dv}${weights}`, fittingVariants('linear', limits, {})),
    decision(family, `${dk}x${dv}:BH${bucket(B * H)}:L${bucket(L)}:T${bucket(T)}:${causal}`, fittingVariants(family, limits, { dk, dv })),
  ];
}

/**
 * Resolves to { variants, measured, pipelines } for one call: variants and measured as
 * chooseKernels() gives them; pipelines: { linear(problem), attention, decodeReduce, rotary,
 * append, weights, sinks, qkNorm, cacheFlags, nonFiniteRows } (linear: the pipeline of a problem of
 * `problems`, linear_problems.js; the last two a cached call's NaN rule).
 */
export async function callKernels(device, { plan, config, path, cache, problems, measuring }) {
  const { variants, measured } = chooseKernels(device, callDecisions(plan, config, path, device.limits), measuring);
  const { headDim: dk, valueHeadDim: dv } = config;
  const linear = variants.linear;
  const linearProblems = [...problems.input.map((p) => p.problem), problems.output.problem];
  const attention = variants[attentionFamily(path)];
  // A narrow cache (float16, int8): its own append, and every attention kernel (flash, decode,
  // weights) reads K and V where they are stored, in their dtype (kv_reads.wgsl.js).
  const narrowCache = cache && cache.dtype !== 'float32' ? { dtype: cache.dtype } : null;
  const heads = narrowCache ? { dk, dv, kv: narrowCache.dtype } : { dk, dv };
  const nanRule = cache ? { dk, dv, dtype: cache.dtype } : null;
  const [linearPipelines, attentionPipeline, decodeReduce, rotary, append, weights, sinks, qkNorm, cacheFlags, nonFiniteRows] = await Promise.all([
    Promise.all(linearProblems.map((problem) => variantPipeline(device, linear, problem))),
    variantPipeline(device, attention, heads),
    path === 'decode' ? variantPipeline(device, { key: attention.reduceKey, shader: attention.reduceShader }, { dv }) : null,
    config.rotary ? getPipeline(device, 'rotary') : null,
    cache ? getPipeline(device, narrowCache ? 'cacheAppendNarrow' : 'cacheAppend', narrowCache ?? {}) : null,
    plan.needWeights ? getPipeline(device, 'weights', narrowCache ? { dk, dtype: narrowCache.dtype } : { dk }) : null,
    config.sinks ? getPipeline(device, 'sinks') : null,
    config.qkNorm ? getPipeline(device, 'qkNorm') : null,
    nanRule && getPipeline(device, 'cacheFlags', nanRule),
    nanRule && getPipeline(device, 'nonFiniteRows', nanRule),
  ]);
  const byProblem = new Map(linearProblems.map((problem, i) => [problem, linearPipelines[i]]));
  return {
    variants, measured,
    pipelines: {
      linear: (problem) => byProblem.get(problem), attention: attentionPipeline, decodeReduce, rotary, append, weights, sinks, qkNorm,
      cacheFlags, nonFiniteRows,
    },
  };
}
