// WGSL kernel: Y = X · Wᵀ + b with activations 'int8' for few rows (a decode step's one to four):
// the q8linear family's variant 'q8split8' (selection/kernel_config.js), a candidate for calls of
// at most DECODE_MAX_L rows. q8_linear.wgsl.js gives such a call one busy invocation in 16 of each
// workgroup, each reading a row of W alone; here the blocks of a column are split between 32
// invocations, as linear_rows.wgsl.js splits K.
//
// Shape (column_split.wgsl.js): a workgroup of 256 invocations owns 8 columns of Y and 4 rows,
// 32 invocations a column (terms: its [COLS][ROWS][LANES] scratch); per chunk of 32 blocks,
// invocation `lane` of a column forms block chunk·32 + lane's term for each row: the exact i32
// Σ (q_w − z)·q_x (its weight words read once for the 4 rows), then (s_w·d_x)·f32(dot), written
// to workgroup memory. Invocation r < 4 of the column then adds the chunk's 32 terms to its row's
// sum in block order. So each output takes q8_common.wgsl.js's f32 steps, block by block, in
// the same order as the other variants and the WASM core: the same bits (a term stored apart
// cannot be fused into the sum, as a GPU may fuse q8_linear.wgsl.js's). Grid ⌈N / 8⌉ × ⌈M / 4⌉:
// any M is right, only slow.
import { q8LinearHeader } from './q8_common.wgsl.js';
import { columnSplitHead } from './column_split.wgsl.js';

/** weights: 'int8' | 'int4'; dot: 'dot4' | 'loop'. */
export function q8SplitShader({ weights, dot }) {
  const int4 = weights === 'int4';
  return /* wgsl */ `
${q8LinearHeader({ weights, dot })}
${columnSplitHead('terms')}
  let blocks = (p.K + Q8_BLOCK - 1u) / Q8_BLOCK;
  let mine = lane < ROWS && n < p.N && m0 + lane < p.M;  // this invocation sums row m0 + lane
  var acc = 0.0;
  var nonFinite = false;
  for (var b0 = 0u; b0 < blocks; b0 += LANES) {
    let b = b0 + lane;
    if (n < p.N && b < blocks) {
      var codes: array<u32, WORDS>;  // the block's weight codes, four a word as i8 lanes
      let e = p.wOff + n * p.K + b * Q8_BLOCK;
      for (var t = 0u; t < WORDS; t++) { codes[t] = codes4(e + 4u * t); }
      let sb = p.sOff + n * blocks + b;
      for (var r = 0u; r < ROWS; r++) {
        if (m0 + r < p.M) {
          let at = ((m0 + r) * blocks + b) * WORDS;
          var sum = 0;${int4 ? '\n          var xsum = 0;' : ''}
          for (var t = 0u; t < WORDS; t++) {
            let xw = xq[at + t];
            sum += dot4(codes[t], xw);${int4 ? '\n            xsum += dot4(ONES, xw);' : ''}
          }${int4 ? '\n          sum -= zeroPoint(sb) * xsum;' : ''}
          let scale = scales[sb] * bitcast<f32>(xd[(m0 + r) * blocks + b]);
          terms[(c * ROWS + r) * LANES + lane] = scale * f32(sum);
        }
      }
    }
    workgroupBarrier();
    if (mine) {
      let m = m0 + lane;
      for (var j = 0u; j < min(LANES, blocks - b0); j++) {
        nonFinite = nonFinite || nonFiniteD(xd[m * blocks + b0 + j]);
        acc = acc + terms[(c * ROWS + lane) * LANES + j];
      }
    }
    workgroupBarrier();
  }
  if (mine) { y[p.yOff + (m0 + lane) * p.yStride + n] = outputBits(acc, n, nonFinite); }
}
`;
}
