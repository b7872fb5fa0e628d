// The ONNX graphs the decode benchmark (bench/decode/decode.mjs) feeds to onnxruntime-web, written with
// onnx_model.mjs's protobuf encoder. Weights in PyTorch's [out, in] layout (decode_suite.mjs's
// makeDecodeWeights): q [h·d, E], k and v [hkv·d, E], o [E, h·d], each with its bias.
//
// step graph: one decode step as a real ORT decode loop runs it, the same work as
//   MultiHeadAttention.forward(x, x, x, { cache }) with numKvHeads:
//     x [1, L, E] → q, k, v = MatMul(x, Wᵀ) + b
//     com.microsoft.GroupQueryAttention(q, k, v, past_key, past_value, seqlens_k,
//       total_sequence_length) → attn [1, L, h·d], present_key, present_value [1, hkv, T, d]
//     y = MatMul(attn, W_oᵀ) + b_o
//   past_* [1, hkv, past, d] (BNSH) are the previous step's present_*; seqlens_k [1] (int32) is
//   T − 1 and total_sequence_length (int32 scalar) is T = past + L (ORT's GQA contract). The CPU
//   kernel (the wasm EP's) is causal with the new rows at the end, ORT's fused decode attention.
// kv graph: x [1, n, E] → past_key, past_value [1, hkv, n, d], the K/V projections alone, to fill
//   ORT's past for n positions without an O(n²) prefill (ORT's CPU GQA materialises the n × n
//   scores per head: 8192² · 32 heads of float32 do not fit in wasm32 memory).
import { FLOAT, FLOAT16, INT32, float, float16Tensor, floatTensor, int64Tensor, model, node, transpose, uint8Tensor, valueInfo } from './onnx_model.mjs';
import { quantizeQ8 } from '../../web/src/storage/q8_0.js';
import { quantizeQ4 } from '../../web/src/storage/q4_0.js';
import { Q8_BLOCK } from '../../web/src/storage/storage_types.js';
import { roundToHalf } from '../../web/src/storage/half_floats.js';

const OPSETS = [['', 17], ['com.microsoft', 1]];

// The product x Wᵀ of a [rows, cols] PyTorch weight into `${name}_mm`, by how the weight is stored.

/** f32: MatMul with W as a [cols, rows] initializer. */
function matmulF32(nodes, init, input, name, w, rows, cols) {
  init.push(floatTensor(`W${name}`, [cols, rows], transpose(w, rows, cols)));
  nodes.push(node('MatMul', [input, `W${name}`], [`${name}_mm`]));
}

/** f16, as an f16 model runs: Cast the input to f16, MatMul on float16 W, Cast back. */
function matmulF16(nodes, init, input, name, w, rows, cols) {
  init.push(float16Tensor(`W${name}`, [cols, rows], roundToHalf('float16', transpose(w, rows, cols))));
  nodes.push(node('Cast', [input], [`${name}_in16`], { to: FLOAT16 }));
  nodes.push(node('MatMul', [`${name}_in16`, `W${name}`], [`${name}_mm16`]));
  nodes.push(node('Cast', [`${name}_mm16`], [`${name}_mm`], { to: FLOAT }));
}

/**
 * MatMulNBits (blocks of 32 along the input) holding the package's quantised values exactly:
 * B [rows, blocks, blob] of unsigned codes, scales one per block. accuracy_level 0: f32
 * arithmetic on the dequantised weights; 4: the input quantised to int8 too, ORT's integer path
 * (the counterpart of create({ activations: 'int8' })).
 */
function matmulNBits(nodes, init, input, name, { bits, codes, scales }, rows, cols, accuracyLevel) {
  init.push(uint8Tensor(`W${name}`, [rows, cols / Q8_BLOCK, Q8_BLOCK * bits / 8], codes));
  init.push(floatTensor(`s${name}`, [rows * (cols / Q8_BLOCK)], scales));
  nodes.push(node('MatMulNBits', [input, `W${name}`, `s${name}`], [`${name}_mm`],
    { K: cols, N: rows, bits, block_size: Q8_BLOCK, accuracy_level: accuracyLevel }, 'com.microsoft'));
}

/** 8 bits: q8_0 (web/src/storage/q8_0.js); ORT's default zero point for 8 bits is 128, so B = q + 128. */
function q8Blocks(w, cols) {
  const { q, scales } = quantizeQ8(w, cols);
  return { bits: 8, codes: Uint8Array.from(q, (v) => v + 128), scales };
}

/**
 * 4 bits: q4_0 (web/src/storage/q4_0.js: codes 0–15, zero point 8, ORT's default for 4 bits),
 * two codes a byte, the first in the low nibble (MatMulNBits' packing).
 */
function q4Blocks(w, cols) {
  const { data, scales } = quantizeQ4(w, cols);
  const codes = new Uint8Array(data.length / 2);
  for (let i = 0; i < codes.length; i++) codes[i] = data[2 * i] | (data[2 * i + 1] << 4);
  return { bits: 4, codes, scales };
}

const nBits = (blocks, accuracyLevel) => (nodes, init, input, name, w, rows, cols) =>
  matmulNBits(nodes, init, input, name, blocks(w, cols), rows, cols, accuracyLevel);

/** The step graph's projections by the weights' storage (decode_dtypes.mjs names them). */
export const ORT_WEIGHTS = {
  f32: matmulF32, f16: matmulF16,
  q8: nBits(q8Blocks, 0), q8a8: nBits(q8Blocks, 4), q4: nBits(q4Blocks, 0), q4a8: nBits(q4Blocks, 4),
};

/** x Wᵀ + b → name, W stored as ORT_WEIGHTS[storage] says. */
function linear(nodes, init, input, name, { w, b }, rows, cols, storage = 'f32') {
  ORT_WEIGHTS[storage](nodes, init, input, name, w, rows, cols);
  init.push(floatTensor(`b${name}`, [rows], b));
  nodes.push(node('Add', [`${name}_mm`, `b${name}`], [name]));
}

const kvDims = (numKvHeads, headDim, length) => [1, numKvHeads, length, headDim];

/** Serialized ModelProto of one GQA decode step (header comment), projections as ORT_WEIGHTS names. */
export function buildGqaStepModel({ E, numHeads, numKvHeads, headDim, weights, projections = 'f32' }) {
  const nodes = [], init = [];
  linear(nodes, init, 'x', 'q', weights.q, numHeads * headDim, E, projections);
  linear(nodes, init, 'x', 'k', weights.k, numKvHeads * headDim, E, projections);
  linear(nodes, init, 'x', 'v', weights.v, numKvHeads * headDim, E, projections);
  nodes.push(node('GroupQueryAttention',
    ['q', 'k', 'v', 'past_key', 'past_value', 'seqlens_k', 'total_sequence_length'],
    ['attn', 'present_key', 'present_value'],
    { num_heads: numHeads, kv_num_heads: numKvHeads, scale: float(1 / Math.sqrt(headDim)) }, 'com.microsoft'));
  linear(nodes, init, 'attn', 'y', weights.o, E, numHeads * headDim, projections);
  return model(nodes, init, [
    valueInfo('x', [1, 'L', E]),
    valueInfo('past_key', kvDims(numKvHeads, headDim, 'past')),
    valueInfo('past_value', kvDims(numKvHeads, headDim, 'past')),
    valueInfo('seqlens_k', [1], INT32),
    valueInfo('total_sequence_length', [], INT32),
  ], [
    valueInfo('y', [1, 'L', E]),
    valueInfo('present_key', kvDims(numKvHeads, headDim, 'total')),
    valueInfo('present_value', kvDims(numKvHeads, headDim, 'total')),
  ], OPSETS);
}

/** Serialized ModelProto of the K/V projections into ORT's past layout (header comment). */
export function buildKvProjectionModel({ E, numKvHeads, headDim, weights }) {
  const nodes = [], init = [int64Tensor('heads', [0, 0, numKvHeads, headDim])];  // 0: keep B, n
  for (const [name, out] of [['k', 'past_key'], ['v', 'past_value']]) {
    linear(nodes, init, 'x', name, weights[name], numKvHeads * headDim, E);
    nodes.push(node('Reshape', [name, 'heads'], [`${name}4`]));                 // [1, n, hkv, d]
    nodes.push(node('Transpose', [`${name}4`], [out], { perm: [0, 2, 1, 3] })); // [1, hkv, n, d]
  }
  return model(nodes, init, [valueInfo('x', [1, 'n', E])], [
    valueInfo('past_key', kvDims(numKvHeads, headDim, 'n')),
    valueInfo('past_value', kvDims(numKvHeads, headDim, 'n')),
  ], OPSETS);
}
