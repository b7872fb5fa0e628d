// activations 'int8' on the GPU (docs/attention-math/storage.md §11): every projection of such a module
// is two dispatches, its input rows quantised (the q8rows family's variant: kernels/q8_rows.wgsl.js,
// the block max by a tree or by subgroups) and the integer product (the q8linear family's:
// kernels/q8_linear.wgsl.js or, for calls of many rows, the tiled kernels/q8_tiled.wgsl.js), both
// chosen by measurement as the other families are, in place of the linear variants, which the
// module's calls neither run nor measure. The codes and scales of each projection have buffers of
// their own role, so the projections of one call never share one.
import { Q8_BLOCK } from '../storage/storage_types.js';
import { packedDotProduct, Usage } from './device.js';
import { packParams } from './kernel_params.js';
import { programPipeline } from './pipelines.js';
import { linearUniforms } from './kernels/linear_common.wgsl.js';
import { Q8_ROWS_PARAMS, Q8_ROWS_PER_DIM } from './kernels/q8_rows.wgsl.js';
import { isAttentionOnly } from '../base/attention_only.js';

const cdiv = (a, b) => Math.ceil(a / b);

/** Whether the module's projections take int8 activations (create()'s activations). */
export const int8Activations = (config) => config.activations === 'int8';

/** The variant families of projections; those a module's calls run: projectionFamilies(). */
const PROJECTION_FAMILIES = ['linear', 'q8linear', 'q8rows'];

/**
 * The projection families the module's calls run: q8linear and q8rows with int8 activations, else
 * linear; none for an attention-only config (api/attention_engines.js: projections false).
 */
export const projectionFamilies = (config) => (isAttentionOnly(config) ? []
  : int8Activations(config) ? ['q8linear', 'q8rows'] : ['linear']);

/** Whether the module's calls run `family`'s variants. */
export const runsFamily = (config, family) => !PROJECTION_FAMILIES.includes(family) || projectionFamilies(config).includes(family);

/** A q8linear variant's pipeline problem on `device`: the weights' dtype, and dot4I8Packed where WGSL has it. */
export const q8LinearProblem = (device, config) => ({ dtype: config.weightsDtype, dot: packedDotProduct(device) ? 'dot4' : 'loop' });

/**
 * Resolves to { rows, linear, variant }: the two pipelines of the module's projections on `device`,
 * the quantiser's of `rowsVariant` (VARIANTS.q8rows) and the product's of `variant` (VARIANTS.q8linear).
 */
export async function q8Pipelines(device, config, variant, rowsVariant) {
  const [rows, linear] = await Promise.all([
    programPipeline(device, rowsVariant), programPipeline(device, variant, q8LinearProblem(device, config)),
  ]);
  return { rows, linear, variant };
}

/** The row quantiser's grid for X [M, K]: a block of each row per workgroup, rows over y and z. */
export function q8RowsGrid(M, K) {
  const rowsPerDim = Math.min(M, Q8_ROWS_PER_DIM);
  return [cdiv(K, Q8_BLOCK), rowsPerDim, cdiv(M, rowsPerDim)];
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
  ctx.dispatch(pipelines.rows, ctx.uniform(packParams(Q8_ROWS_PARAMS, { M, K, xOff: problem.xOff ?? 0, xStride: problem.xStride })),
    [x, codes, scales], q8RowsGrid(M, K));
  ctx.dispatch(pipelines.linear, ctx.uniform(linearUniforms(problem)), [codes, w, bias, y, scales, ...blocks],
    pipelines.variant.grid(problem));
}
