// Which kernel variants one forward runs and their pipelines. The choice
// (selection/kernel_selection.js) is per shape class: for the linear family the rows of the call
// (bucketed to a power of two) and the module's widths; for attention the head widths, batch ×
// heads, query rows and keys (bucketed) and causal. Everything is resolved before the call encodes anything.
import { attentionFamily, nanRuleInReduce, splitShape } from './selection/attention_path.js';
import { preferredVariant } from './selection/kernel_config.js';
import { chooseKernels, recordCompileFailure, selectionGeneration } from './selection/kernel_selection.js';
import { KERNELS, fittingVariants } from './programs.js';
import { programPipeline } from './pipelines.js';
import { packedKey } from './kernels/packed_values.wgsl.js';
import { deviceInputs, gpuResultDtype } from '../base/gpu_tensors.js';
import { projectionFamilies, q8Pipelines } from './q8_projection.js';
import { callTable } from './call_rows.js';
import { prepareInAppend } from './input_steps.js';
import { idOf, keptPer } from './kept_values.js';

const bucket = (n) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

// fittingVariants() kept per device and problem: a device's features and limits stay, and a
// call asks what the call before it asked (filtering the catalogues was about 4 % of a
// batched decode layer's host time on SwiftShader). A decode step's problem names its key count.
const fitted = keptPer(256);
const fittingOn = (device, family, problem) => fitted.get(device, `${family}${JSON.stringify(problem)}`, () => fittingVariants(family, device, problem));

/** The decisions of one call, in the order they are measured (selection/kernel_selection.js). */
export function callDecisions(plan, config, path, device) {
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
  // int8 activations: the projections are the q8linear and q8rows families' (q8_projection.js;
  // q8linear's tiled variants only for calls of many rows: their fits()).
  // gpuPrecision 'float16' offers more candidates: classes of their own, so that a float32 module
  // on the same device never takes their choice.
  const precision = config.gpuPrecision ?? 'float32';
  const tag = precision === 'float32' ? '' : `:${precision}`;
  const projections = `M${bucket(B * L)}:S${bucket(B * S)}:E${E}:${kdim}:${vdim}:${H}x${dk}x${dv}${weights}${tag}`;
  return [
    ...projectionFamilies(config).map((f) => decision(f, projections, fittingOn(device, f, { rows, precision }))),
    decision(family, `${dk}x${dv}:BH${bucket(B * H)}:L${bucket(L)}:T${bucket(T)}:${causal}${tag}`,
      fittingOn(device, family, { dk, dv, precision, ...(path === 'decode' ? splitShape(plan, config) : {}) })),
  ];
}

// A module's calls repeat: a decode step calls each layer as the step before did. Their kernels are
// kept per module (`owner`: its executor's) and given again to a call like one before it while the
// selection answers as it did (selectionGeneration()); choosing them again was about a sixth of a
// batched decode layer's host time on SwiftShader. Only a call that measures nothing is kept (a
// measured one records its time), and never one of given variants (a candidate's reference).
const keptKernels = keptPer(8);

// What callKernels() reads of a call, as a key (the module's config and device are the owner's),
// or null when its kernels are not kept (a test's own candidates).
function repeatKey({ plan, config, path, cache, problems, measuring }, timed) {
  const generation = selectionGeneration();
  if (generation === null) return null;
  const { B, L, S, T } = plan;
  const keys = path === 'decode' ? splitShape(plan, config).keys : 0;
  const { halfInputs, halfResults } = halfData(plan);
  return `${generation}|${idOf(problems)}|${measuring}|${timed}|${path}|${B}|${L}|${S}|${bucket(T)}|${keys}|${Boolean(plan.isCausal || plan.cache)}`
    + `|${cache?.dtype}|${plan.needWeights}|${Boolean(callTable(plan))}|${halfInputs}|${halfResults}`;
}

// Whether a call widens float16 GPU inputs and rounds its 'gpu-buffer' results to float16 (the
// widenHalf and narrowHalf kernels it needs).
function halfData(plan) {
  return {
    halfInputs: deviceInputs(plan).some((d) => d.dtype === 'float16'),
    halfResults: plan.output === 'gpu-buffer' && gpuResultDtype(plan) === 'float16',
  };
}

// A call's variant names, { family: name } (its result's `kernels`, the selection hooks' argument).
const variantNames = (variants) => Object.freeze(Object.fromEntries(Object.entries(variants).map(([family, v]) => [family, v.name])));

/**
 * Resolves to { variants, names (variantNames()), measured, pipelines } for one call: variants and measured as
 * chooseKernels() gives them (or `variants` as given, measuring nothing: a candidate's reference);
 * pipelines: { linear(problem), q8, attention, decodeReduce, rotary, append, weights, sinks, qkNorm,
 * nonFiniteRows, widenHalf, narrowHalf } (linear: the pipeline of a problem of `problems`,
 * linear_problems.js; q8: with int8 activations, q8_projection.js's pipelines of the q8linear
 * variant, in place of linear and the linear variant; append a cached call's K/V rows and their
 * flags, nonFiniteRows its NaN rule (null where the decode reduce applies it: nanRuleInReduce()); narrowHalf a float16 call's 'gpu-buffer' results rounded; widenHalf a
 * float16 GPU input's widening). A candidate on its first run (one with a reference) that does
 * not compile is dropped on the device (recordCompileFailure()) and the call chooses again.
 * owner: the module's executor, which kept kernels are kept under (repeatKey()), or null.
 */
export async function callKernels(device, args, owner = null) {
  const { plan, config, path, measuring, timed = true, variants: given } = args;
  const key = owner && !given ? repeatKey(args, timed) : null;
  const kept = key && keptKernels.find(owner, key);
  if (kept) return kept;
  for (;;) {
    const { variants, measured } = given ? { variants: given, measured: null }
      : chooseKernels(device, callDecisions(plan, config, path, device), measuring, timed);
    const own = variantPipelines(device, args, variants);
    const failure = measured?.reference ? await compileFailure(own, measured.family) : null;
    if (failure) {
      recordCompileFailure(device, measured, failure);
      for (const pending of [...own.linear, own.q8, own.attention, own.decodeReduce]) pending?.catch(() => {});  // not awaited now
      continue;
    }
    const kernels = { variants, names: variantNames(variants), measured, pipelines: await callPipelines(device, args, own) };
    if (key && !measured) keptKernels.keep(owner, key, kernels);
    return kernels;
  }
}

// The pipelines of the call's variants, compiling: { linear: [per problem], linearProblems, q8,
// attention, decodeReduce } (promises).
function variantPipelines(device, args, variants) {
  const { plan, config, path, cache, problems } = args;
  const linear = variants.linear;
  const linearProblems = linear ? [...problems.input.map((p) => p.problem), problems.output.problem] : [];
  const attention = variants[attentionFamily(path)];
  // The reduce, or with the call's NaN rule in it the rule's problem (nanRuleInReduce()).
  const reduce = nanRuleInReduce(args)
    ? [attention.reduceNan, cachePipelineProblems(config, cache.dtype, Boolean(callTable(plan))).nonFiniteRows]
    : [attention.reduce, { dv: config.valueHeadDim }];
  return {
    linearProblems,
    linear: linearProblems.map((problem) => programPipeline(device, linear, problem)),
    q8: variants.q8linear ? q8Pipelines(device, config, variants.q8linear, variants.q8rows) : null,
    attention: programPipeline(device, attention, callHeads(config, cache)),
    decodeReduce: path === 'decode' ? programPipeline(device, ...reduce) : null,
  };
}

// A narrow cache's dtype (float16, int8), else null: every attention kernel
// (flash, decode, weights) reads K and V where they are stored, in their dtype (kv_reads.wgsl.js).
const narrowCacheDtype = (cache) => (cache && cache.dtype !== 'float32' ? cache.dtype : null);

// What the attention kernels compile in: the head widths, and a narrow cache's dtype.
function callHeads({ headDim: dk, valueHeadDim: dv }, cache) {
  const kv = narrowCacheDtype(cache);
  return kv ? { dk, dv, kv } : { dk, dv };
}

// The error of `family`'s pipelines among `own` (variantPipelines()'s), or null once they compiled.
async function compileFailure(own, family) {
  const of = { linear: own.linear, q8linear: [own.q8], q8rows: [own.q8], attention: [own.attention], decode: [own.attention, own.decodeReduce] };
  try {
    await Promise.all(of[family]);
    return null;
  } catch (error) {
    return error ?? new Error('a pipeline did not compile');
  }
}

/**
 * The problems of a cache's own pipelines for a module of `config` and a cache of `dtype`: the
 * append (its K/V heads) and the NaN rule's rows (the query's heads; `rows`: the call reads the row
 * table). One place for the call (callPipelines()) and createCache()'s early compile.
 */
export function cachePipelineProblems({ headDim: dk, valueHeadDim: dv, numKvHeads, numHeads }, dtype, rows = false) {
  return { append: { dk, dv, dtype, heads: numKvHeads }, nonFiniteRows: { dk, dv, dtype, heads: numHeads, rows } };
}

// Every pipeline of the call: the variants' (`own`) and the kernels the call needs.
async function callPipelines(device, args, own) {
  const { plan, config, cache } = args;
  const prepare = prepareInAppend(args);  // steps the append takes: no pipelines of their own
  const { headDim: dk } = config;
  const narrow = narrowCacheDtype(cache);
  const cacheOwn = cache ? cachePipelineProblems(config, cache.dtype, Boolean(callTable(plan))) : null;
  const { halfInputs, halfResults } = halfData(plan);
  const [linearPipelines, q8, attention, decodeReduce, rotary, append, weights, sinks, qkNorm, nonFiniteRows, widenHalf, narrowHalf] = await Promise.all([
    Promise.all(own.linear), own.q8, own.attention, own.decodeReduce,
    config.rotary && !prepare ? programPipeline(device, KERNELS.rotary) : null,
    cacheOwn && programPipeline(device, KERNELS.cacheAppend, prepare ? { ...cacheOwn.append, qHeads: config.numHeads, prepare } : cacheOwn.append),
    plan.needWeights ? programPipeline(device, KERNELS.weights, narrow ? { dk, dtype: narrow } : { dk }) : null,
    config.sinks ? programPipeline(device, KERNELS.sinks) : null,
    config.qkNorm && !prepare ? programPipeline(device, KERNELS.qkNorm) : null,
    cacheOwn && !nanRuleInReduce(args) ? programPipeline(device, KERNELS.nonFiniteRows, cacheOwn.nonFiniteRows) : null,
    halfInputs ? programPipeline(device, KERNELS.widenHalf) : null,
    halfResults ? programPipeline(device, KERNELS.narrowHalf) : null,
  ]);
  const byProblem = new Map(own.linearProblems.map((problem, i) => [problem, linearPipelines[i]]));
  return {
    linear: (problem) => byProblem.get(problem), q8, attention, decodeReduce, rotary, append, weights, sinks, qkNorm,
    nonFiniteRows, widenHalf, narrowHalf,
  };
}
