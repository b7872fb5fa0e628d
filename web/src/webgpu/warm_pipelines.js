// Pipelines compiled at create(), before the first call: the head widths and projection shapes
// are known then, so the first large call does not wait 70–300 ms for the driver's compiler. The
// defaults are awaited by create(); where the device selects variants by measurement
// (selectsKernels()), every other candidate starts compiling in the background, so that the
// calls that try them find them ready or nearly so. A pinned variant (configure({ gpuKernels }))
// is compiled in place of its family's default.
import { LINEAR_LARGE_ROWS, preferredVariant } from './selection/kernel_config.js';
import { pinnedVariant } from './selection/gpu_kernel_pins.js';
import { selectsKernels } from './selection/kernel_selection.js';
import { KERNELS, VARIANTS, fittingVariants } from './programs.js';
import { linearProblems } from './linear_problems.js';
import { programPipeline } from './pipelines.js';
import { q8LinearProblem, runsFamily } from './q8_projection.js';
import { cachePipelineProblems } from './call_kernels.js';
import { prepareOf } from './kernels/append_prepare.wgsl.js';

// The linear problems a module can meet, whatever its inputs: self-attention, key = value, three
// arrays (their pipeline keys differ only by the vec4-load flavour; rows do not matter).
function moduleLinearProblems(config) {
  const one = new Float32Array(1);
  const plans = [
    { B: 1, L: 1, S: 1, query: one, key: one, value: one },
    { B: 1, L: 1, S: 1, query: new Float32Array(1), key: one, value: one },
    { B: 1, L: 1, S: 1, query: new Float32Array(1), key: new Float32Array(1), value: one },
  ];
  return plans.flatMap((plan) => {
    const { input, output } = linearProblems(plan, config);
    return [...input.map((p) => p.problem), ...(output ? [output.problem] : [])];
  });
}

/** Starts compiling the module's pipelines on `device`; resolves once the defaults are ready. */
export async function warmPipelines(device, config) {
  const { headDim: dk, valueHeadDim: dv } = config;
  const heads = { dk, dv };
  const linear = moduleLinearProblems(config);
  const compile = (family, variant) => {
    const made = family === 'linear' ? linear.map((problem) => programPipeline(device, variant, problem))
      : [programPipeline(device, variant, { q8linear: q8LinearProblem(device, config), q8rows: {} }[family] ?? heads)];
    if (family === 'decode') made.push(programPipeline(device, variant.reduce, { dv }));
    return made;
  };
  const defaults = [];
  // int8 activations: the q8rows and q8linear variants instead of the linear ones.
  for (const family of Object.keys(VARIANTS).filter((f) => runsFamily(config, f))) {
    const fitting = fittingVariants(family, device, { ...heads, precision: config.gpuPrecision });
    const pinned = pinnedVariant(family);
    const names = fitting.map((v) => v.name);
    // The defaults for small and for large calls (one and the same but for linear).
    const pinnedFits = Boolean(pinned) && names.includes(pinned);
    const wanted = pinnedFits ? [pinned]
      : [preferredVariant(family, 0, names), preferredVariant(family, LINEAR_LARGE_ROWS, names)];
    const first = fitting.filter((v) => wanted.includes(v.name));
    for (const v of first) defaults.push(...compile(family, v));
    // The other candidates only where they will be measured: a pinned family never is.
    if (selectsKernels(device) && !pinnedFits) {
      for (const v of fitting) if (!first.includes(v)) compile(family, v).forEach((p) => p.catch(() => {}));
    }
  }
  for (const kind of ['rotary', 'sinks', 'qkNorm']) if (config[kind]) defaults.push(programPipeline(device, KERNELS[kind]));
  await Promise.all(defaults);
}

/**
 * A new cache's own pipelines on `device` for a module of `config` and a cache of `dtype`, started
 * compiling rather than at the first cached call, which awaits them (a failed compile is tried
 * again there): the append (kernels/cache_append.wgsl.js), the NaN rule's
 * (nonfinite_rows.wgsl.js), and the default decode variant's reduce with the rule in it
 * (decode_reduce_nan.wgsl.js), which a step without weights or sinks takes, and with RoPE or a
 * qk-norm the append that takes them (input_steps.js's prepareInAppend()).
 */
export function warmCachePipelines(device, config, dtype) {
  const { append, nonFiniteRows } = cachePipelineProblems(config, dtype);
  const prepare = prepareOf(config);
  const decode = fittingVariants('decode', device, { precision: config.gpuPrecision });
  const reduce = decode.find((v) => v.name === (pinnedVariant('decode') ?? preferredVariant('decode', 0, decode.map((d) => d.name))));
  const kernels = [[KERNELS.cacheAppend, append], [KERNELS.nonFiniteRows, nonFiniteRows], ...(reduce ? [[reduce.reduceNan, nonFiniteRows]] : []),
    ...(prepare ? [[KERNELS.cacheAppend, { ...append, qHeads: config.numHeads, prepare }]] : [])];
  for (const [kernel, problem] of kernels) programPipeline(device, kernel, problem).catch(() => {});
}
