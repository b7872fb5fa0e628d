// WGSL kernel: Y = X · Wᵀ + b for few rows of X (a decode step's one to four), where the tiled
// kernels (linear.wgsl.js, linear_tiled.wgsl.js) leave most of a 64-row tile idle and give the
// GPU one workgroup per 64 columns: a projection of 3072 columns is 48 workgroups, too few to keep
// a large GPU's memory busy, and a decode step's projections only stream W. Variant 'rows8'
// (programs.js), a candidate for calls of at most DECODE_MAX_L rows (kernel_config.js).
//
// Shape (column_split.wgsl.js): a workgroup of 256 invocations owns 8 columns of Y and 4 rows; the
// 32 invocations of a column split K between them (invocation `lane` takes k = lane, lane + 32, …,
// or vec4s of k where vec4Aligned()), so that a column's 32 invocations read 128 (or 512)
// consecutive bytes of W's row at a time, each value once. Their partial sums then meet in a
// tree over workgroup memory (5 barriers). Grid: ⌈N / 8⌉ × ⌈M / 4⌉: any M is right, only slow.
//
// Narrow weights whose rows start on a word (rowWords(): K and W's offset multiples of the values
// per u32 word) are read a word per lane: lane j of a column takes words j, j + 32, …, and each
// word's 2, 4 or 8 values (one block scale and zero point a word: a q8_0 block is whole words),
// where a lane reading value k through weight(n, k) loads the word, the scale and the zero point
// again for each value, and 8 lanes load the same int4 word. Their X values are read as vec4s
// where vec4Aligned() (float16: two words a step, so 4 values).
//
// Exactness: each output is a sum of the same K products as the other kernels' in another order
// (32 strided partial sums, then the tree), so it agrees with them to rounding: the selection's
// default tolerance (kernel_config.js DEFAULT_TOLERANCE) holds with room. Each weight is the same
// float32 as weight(n, k)'s (packed_values.wgsl.js's wordValue(), times its scale as one product).
// Uniforms and bindings: linear_common.wgsl.js.
import { blockTerms, dequantised, linearBindings, vec4Aligned } from './linear_common.wgsl.js';
import { VALUES_PER_WORD, isPacked, wordValue } from './packed_values.wgsl.js';
import { SPLIT_TILE, columnSplitHead } from './column_split.wgsl.js';
import { ENABLE_SUBGROUPS, rowGroupsWgsl } from './subgroup_reduce.wgsl.js';

/** Whether a problem's narrow W rows start on a u32 word: K and wOff multiples of the values per word. */
export const rowWords = ({ K, wOff = 0, weights }) => isPacked(weights) && (K | wOff) % VALUES_PER_WORD[weights] === 0;

/**
 * How the kernel reads a problem (linearRowsShader()'s flags, and their part of the pipeline key):
 * a narrow W by words where rowWords(), else a value at a time; X (and a float32 W) as vec4s where
 * vec4Aligned(), except beside a narrow W read a value at a time.
 */
export function rowsFlavour(problem) {
  const words = rowWords(problem);
  const vec4 = vec4Aligned(problem) && (words || !isPacked(problem.weights));
  return { words, vec4, key: `${words ? 'words:' : ''}${vec4 ? 'vec4' : 'f32'}` };
}

/** acc[r] += (X[m0 + r, k] for the `width` values from k) · w, for each row in range. */
const rowsStep = (width, x, w) => `for (var r = 0u; r < ROWS; r++) {
        if (m0 + r < p.M) { acc[r] += ${width === 4 ? 'dot' : ''}(${x} ${width === 4 ? ',' : '*'} ${w}); }
      }`;

/** One step of a lane's loop that reads a float32 W (vec4s where `vec4`: float32 only) or a narrow one by weight(n, k). */
function elementStep(vec4, weights) {
  if (vec4) {
    return `for (var k4 = lane; k4 < p.K / 4u; k4 += LANES) {
      let wv = w[(p.wOff + n * p.K) / 4u + k4];
      ${rowsStep(4, 'x[(p.xOff + (m0 + r) * p.xStride) / 4u + k4]', 'wv')}
    }`;
  }
  return `for (var k = lane; k < p.K; k += LANES) {
      let wv = ${isPacked(weights) ? 'weight(n, k)' : 'w[p.wOff + n * p.K + k]'};
      ${rowsStep(1, 'x[p.xOff + (m0 + r) * p.xStride + k]', 'wv')}
    }`;
}

/**
 * A lane's loop over whole words of a narrow W row (rowWords()): a step takes `unit` values (one
 * word, or two float16 / bfloat16 words where X is read as vec4s), with the block's scale and
 * zero point once; each value is the float32 weight(n, k) gives.
 */
function wordStep(vec4, weights) {
  const per = VALUES_PER_WORD[weights];
  const unit = vec4 ? Math.max(per, 4) : per;
  const first = unit === per ? 'j' : `j * ${unit / per}u`;  // the step's first word in the row
  const lines = [];
  for (let t = 0; t < unit / per; t++) lines.push(`let w${t} = w[(p.wOff + n * p.K) / ${per}u + ${first}${t ? ` + ${t}u` : ''}];`);
  lines.push(...blockTerms(weights, 'k0'));
  const value = (i) => dequantised(weights, wordValue(weights, `w${Math.floor(i / per)}`, `${i % per}u`));
  for (let i = 0; i < unit; i++) lines.push(`let v${i} = ${value(i)};`);
  if (vec4) {
    for (let g = 0; g < unit / 4; g++) {
      lines.push(rowsStep(4, `x[(p.xOff + (m0 + r) * p.xStride + k0) / 4u + ${g}u]`, `vec4f(v${4 * g}, v${4 * g + 1}, v${4 * g + 2}, v${4 * g + 3})`));
    }
  } else {
    for (let i = 0; i < unit; i++) lines.push(rowsStep(1, `x[p.xOff + (m0 + r) * p.xStride + k0 + ${i}u]`, `v${i}`));
  }
  return `for (var j = lane; j < p.K / ${unit}u; j += LANES) {
      let k0 = j * ${unit}u;
      ${lines.join('\n      ')}
    }`;
}

// The lanes' partial sums of each row met in a tree over workgroup memory (5 barriers); lane r
// of the column then holds row r's sum at partial[(c · ROWS + r) · LANES].
const treeSum = /* wgsl */ `for (var r = 0u; r < ROWS; r++) { partial[(c * ROWS + r) * LANES + lane] = acc[r]; }
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      for (var r = 0u; r < ROWS; r++) {
        let i = (c * ROWS + r) * LANES + lane;
        partial[i] += partial[i + s];
      }
    }
    workgroupBarrier();
  }`;

// Lane r writes row m0 + r of column n: `sum` its row's sum.
const store = (sum) => `if (lane < ROWS && n < p.N && m0 + lane < p.M) {
    y[p.yOff + (m0 + lane) * p.yStride + n] = ${sum} + bias[p.bOff + n];
  }`;

/**
 * The column's sums and their store. subgroups (variant 'rows8sg'): the 4 rows' sums as one vec4f
 * met by subgroup shuffles (subgroup_reduce.wgsl.js's rowGroupAdd over the column's 32 lanes: no
 * barrier on a device whose subgroups hold 32, one for the slots), where the workgroup's subgroups
 * are aligned runs of local indices; elsewhere the tree.
 */
function columnSums(subgroups) {
  const tree = `${treeSum}
  ${store('partial[(c * ROWS + lane) * LANES]')}`;
  if (!subgroups) return tree;
  if (SPLIT_TILE.rows !== 4) throw new Error('rows8sg sums a column\'s rows as one vec4f');
  return `if (groups.aligned) {
    let sums = rowGroupAdd(vec4f(acc[0], acc[1], acc[2], acc[3]), lt, groups);
    ${store('sums[lane]').replaceAll('\n', '\n  ')}
  } else {
    ${tree.replaceAll('\n', '\n  ')}
  }`;
}

/**
 * words, vec4: rowsFlavour()'s flags for the problem; weights: the module's weightsDtype;
 * subgroups: the column's sums by subgroup operations (columnSums()).
 */
export function linearRowsShader({ vec4 = false, words = false, weights = 'float32', subgroups = false } = {}) {
  const step = words ? wordStep(vec4, weights) : elementStep(vec4, weights);
  return /* wgsl */ `${subgroups ? `${ENABLE_SUBGROUPS}\n${rowGroupsWgsl({ groups: SPLIT_TILE.cols, width: SPLIT_TILE.lanes, op: 'add' })}` : ''}
${linearBindings(vec4 ? 'vec4f' : 'f32', weights)}
${columnSplitHead('partial', { subgroups })}${subgroups ? '\n  let groups = rowGroupsOf(lt, sgLane, sgSize);' : ''}
  var acc: array<f32, ROWS>;
  if (n < p.N) {
    ${step}
  }
  ${columnSums(subgroups)}
}
`;
}
