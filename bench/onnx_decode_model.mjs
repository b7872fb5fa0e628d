// The ONNX graphs the decode benchmark (bench/decode.mjs) feeds to onnxruntime-web, written with
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
import { INT32, float, floatTensor, int64Tensor, model, node, transpose, valueInfo } from './onnx_model.mjs';

const OPSETS = [['', 17], ['com.microsoft', 1]];

/** MatMul(input, Wᵀ) + b → name: a [rows, cols] PyTorch weight as a [cols, rows] initializer. */
function linear(nodes, init, input, name, { w, b }, rows, cols) {
  init.push(floatTensor(`W${name}`, [cols, rows], transpose(w, rows, cols)));
  init.push(floatTensor(`b${name}`, [rows], b));
  nodes.push(node('MatMul', [input, `W${name}`], [`${name}_mm`]));
  nodes.push(node('Add', [`${name}_mm`, `b${name}`], [name]));
}

const kvDims = (numKvHeads, headDim, length) => [1, numKvHeads, length, headDim];

/** Serialized ModelProto of one GQA decode step (header comment). */
export function buildGqaStepModel({ E, numHeads, numKvHeads, headDim, weights }) {
  const nodes = [], init = [];
  linear(nodes, init, 'x', 'q', weights.q, numHeads * headDim, E);
  linear(nodes, init, 'x', 'k', weights.k, numKvHeads * headDim, E);
  linear(nodes, init, 'x', 'v', weights.v, numKvHeads * headDim, E);
  nodes.push(node('GroupQueryAttention',
    ['q', 'k', 'v', 'past_key', 'past_value', 'seqlens_k', 'total_sequence_length'],
    ['attn', 'present_key', 'present_value'],
    { num_heads: numHeads, kv_num_heads: numKvHeads, scale: float(1 / Math.sqrt(headDim)) }, 'com.microsoft'));
  linear(nodes, init, 'attn', 'y', weights.o, E, numHeads * headDim);
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
