// activations 'int8' on the GPU (docs/attention-math.md §11): every projection of such a module
// is two dispatches, its input rows quantised (kernels/q8_rows.wgsl.js) and the integer product
// (kernels/q8_linear.wgsl.js), in place of the linear variants, which the module's calls neither
// run nor measure. The codes and scales of each projection have buffers of their own role, so
// the projections of one call never share one.
import { Q8_BLOCK } from '../storage/storage_types.js';
import { packedDotProduct, Usage } from './device.js';
import { packParams } from './kernel_params.js';
import { programPipeline } from './pipelines.js';
import { KERNELS } from './programs.js';
import { linearUniforms } from './kernels/linear_common.wgsl.js';
import { Q8_LINEAR_TILE } from './kernels/q8_linear.wgsl.js';
import { Q8_ROWS_PARAMS, Q8_ROWS_PER_DIM } from './kernels/q8_rows.wgsl.js';

const cdiv = (a, b) => Math.ceil(a / b);

/** Whether the module's projections take int8 activations (create()'s activations). */
export const int8Activations = (config) => config.activations === 'int8';

/** The q8Linear kernel's problem on `device`: the weights' dtype, and dot4I8Packed where WGSL has it. */
export const q8LinearProblem = (device, config) => ({ dtype: config.weightsDtype, dot: packedDotProduct(device) ? 'dot4' : 'loop' });

/** Resolves to { rows, linear }: the two pipelines of the module's projections on `device`. */
export async function q8Pipelines(device, config) {
  const [rows, linear] = await Promise.all([
    programPipeline(device, KERNELS.q8Rows), programPipeline(device, KERNELS.q8Linear, q8LinearProblem(device, config)),
  ]);
  return { rows, linear };
}

/**
 * Records Y = X·Wᵀ + b for `problem` (LINEAR_PARAMS values, linear_problems.js) through ctx
 * (forward_encode.js's), with `pipelines` from q8Pipelines(); bindings: [x, w, bias, y, scales,
 * zero points (int4)], as the linear variants take them; role: the projection's, naming its buffers.
 */
export function encodeQ8Linear(ctx, pipelines, problem, [x, w, bias, y, ...blocks], role) {
  const { M, N, K } = problem;
  if (M === 0 || N === 0) return;
  const perRow = cdiv(K, Q8_BLOCK);
  const codes = ctx.buffer(M * perRow * Q8_BLOCK / 4, Usage.STORAGE, `q8 codes ${role}`);
  const scales = ctx.buffer(M * perRow, Usage.STORAGE, `q8 scales ${role}`);
  const rowsPerDim = Math.min(M, Q8_ROWS_PER_DIM);
  ctx.dispatch(pipelines.rows, ctx.uniform(packParams(Q8_ROWS_PARAMS, { M, K, xOff: problem.xOff ?? 0, xStride: problem.xStride })),
    [x, codes, scales], [perRow, rowsPerDim, cdiv(M, rowsPerDim)]);
  ctx.dispatch(pipelines.linear, ctx.uniform(linearUniforms(problem)), [codes, w, bias, y, scales, ...blocks],
    [cdiv(N, Q8_LINEAR_TILE), cdiv(M, Q8_LINEAR_TILE), 1]);
}
