// Builds the ONNX models the benchmark feeds to onnxruntime-web, at run time, with a hand-written
// protobuf encoder (no python onnx, no protobuf package): just the ModelProto / GraphProto /
// NodeProto / AttributeProto / TensorProto / ValueInfoProto fields used here. Weights are
// initializers (raw_data, little-endian float32).
//
// Two graphs compute torch.nn.MultiheadAttention(batch_first=True) self-attention, x: [1, L, E]:
//   'contrib': Q/K/V = MatMul(x, Wᵀ) + b, com.microsoft.MultiHeadAttention(Q, K, V,
//              attention_bias = causal band or absent), out = MatMul(·, W_oᵀ) + b_o.
//   'plain'  : the same projections, then Reshape/Transpose to [1, h, L, d], MatMul(Q, Kᵀ),
//              Mul(1/√d), Add(mask), Softmax(-1), MatMul(·, V), Transpose/Reshape, out projection.
// (The contrib op's unidirectional=1 attribute gives the same output as the -inf band here, and
// was no faster in onnxruntime-web 1.30, so the mask is used, as for tfjs.)
// Both work in any environment (Node or browser): this file has no imports. The encoder's
// pieces (node, valueInfo, model, ...) are exported for onnx_decode_model.mjs's graphs.

// ---- protobuf wire format -------------------------------------------------------------------

class Writer {
  constructor() {
    this.parts = [];
    this.length = 0;
  }
  bytes(u8) {
    this.parts.push(u8);
    this.length += u8.length;
    return this;
  }
  varint(v) {
    // v: non-negative integer below 2^53 or a BigInt (int64; negatives as two's complement).
    let b = BigInt.asUintN(64, BigInt(v));
    const out = [];
    do {
      let byte = Number(b & 0x7fn);
      b >>= 7n;
      if (b) byte |= 0x80;
      out.push(byte);
    } while (b);
    return this.bytes(Uint8Array.from(out));
  }
  tag(field, wire) {
    return this.varint((field << 3) | wire);
  }
  finish() {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

const utf8 = new TextEncoder();
/** One message = list of [fieldNumber, kind, value]; kinds: int (varint), str, bytes, msg, f32. */
function encode(fields) {
  const w = new Writer();
  for (const [field, kind, value] of fields) {
    if (value === undefined || value === null) continue;
    switch (kind) {
      case 'int': w.tag(field, 0).varint(value); break;
      case 'f32': {
        const b = new Uint8Array(4);
        new DataView(b.buffer).setFloat32(0, value, true);
        w.tag(field, 5).bytes(b);
        break;
      }
      case 'str': case 'bytes': case 'msg': {
        const b = kind === 'str' ? utf8.encode(value) : value;
        w.tag(field, 2).varint(b.length).bytes(b);
        break;
      }
      default: throw new Error(`onnx_model: unknown field kind ${kind}`);
    }
  }
  return w.finish();
}

// ---- ONNX messages (field numbers from onnx/onnx.proto) ---------------------------------------

export const FLOAT = 1, UINT8 = 2, INT32 = 6, INT64 = 7, FLOAT16 = 10;   // TensorProto.DataType
const ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_INTS = 7;  // AttributeProto.AttributeType

function tensorProto(name, dims, dataType, raw) {
  return encode([
    ...dims.map((d) => [1, 'int', d]),           // dims (repeated int64, unpacked is valid)
    [2, 'int', dataType],                        // data_type
    [8, 'str', name],                            // name
    [9, 'bytes', new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength)],  // raw_data
  ]);
}
export const floatTensor = (name, dims, f32) => tensorProto(name, dims, FLOAT, f32);
export const uint8Tensor = (name, dims, u8) => tensorProto(name, dims, UINT8, u8);
/** f16 bits (a Uint16Array) as a FLOAT16 tensor. */
export const float16Tensor = (name, dims, bits) => tensorProto(name, dims, FLOAT16, bits);
export const int64Tensor = (name, values) => tensorProto(name, [values.length], INT64, BigInt64Array.from(values.map(BigInt)));

/** Attribute: an integer → INT, an array of integers → INTS, float(x) → FLOAT. */
function attribute(name, value) {
  if (Array.isArray(value)) {
    return encode([[1, 'str', name], ...value.map((v) => [8, 'int', v]), [20, 'int', ATTR_INTS]]);
  }
  if (typeof value === 'object') {
    return encode([[1, 'str', name], [2, 'f32', value.float], [20, 'int', ATTR_FLOAT]]);
  }
  if (!Number.isInteger(value)) throw new Error(`onnx_model: attribute ${name}: use float() for ${value}`);
  return encode([[1, 'str', name], [3, 'int', value], [20, 'int', ATTR_INT]]);
}
/** Marks a number as a FLOAT attribute. */
export const float = (value) => ({ float: value });

export function node(opType, inputs, outputs, attrs = {}, domain = '') {
  return encode([
    ...inputs.map((i) => [1, 'str', i]),
    ...outputs.map((o) => [2, 'str', o]),
    [3, 'str', `${opType}_${outputs[0]}`],
    [4, 'str', opType],
    ...Object.entries(attrs).map(([k, v]) => [5, 'msg', attribute(k, v)]),
    [7, 'str', domain || undefined],
  ]);
}

/** A graph input or output: dims are numbers (dim_value) or names (dim_param: sized at run time). */
export function valueInfo(name, dims, elemType = FLOAT) {
  const dim = (d) => encode([typeof d === 'string' ? [2, 'str', d] : [1, 'int', d]]);
  const shape = encode(dims.map((d) => [1, 'msg', dim(d)]));
  const tensorType = encode([[1, 'int', elemType], [2, 'msg', shape]]);        // elem_type, shape
  return encode([[1, 'str', name], [2, 'msg', encode([[1, 'msg', tensorType]])]]);
}

export function model(nodes, initializers, inputs, outputs, opsets) {
  const graph = encode([
    ...nodes.map((n) => [1, 'msg', n]),
    [2, 'str', 'mha'],
    ...initializers.map((t) => [5, 'msg', t]),
    ...inputs.map((v) => [11, 'msg', v]),
    ...outputs.map((v) => [12, 'msg', v]),
  ]);
  return encode([
    [1, 'int', 8],                               // ir_version 8 (ONNX 1.10+, opset <= 17 fine)
    [2, 'str', 'webattention-bench'],            // producer_name
    [7, 'msg', graph],
    ...opsets.map(([domain, version]) => [8, 'msg', encode([[1, 'str', domain || undefined], [2, 'int', version]])]),
  ]);
}

// ---- the MHA graphs -------------------------------------------------------------------------

/** Row-major [rows, cols] → its transpose [cols, rows]. */
export function transpose(a, rows, cols) {
  const t = new Float32Array(a.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = a[r * cols + c];
  return t;
}

/** Additive causal mask [L, L]: 0 on and below the diagonal, -inf above. */
export function causalMask(L) {
  const m = new Float32Array(L * L);
  for (let i = 0; i < L; i++) m.fill(-Infinity, i * L + i + 1, (i + 1) * L);
  return m;
}

/**
 * weights: PyTorch state dict { in_proj_weight [3E, E], in_proj_bias [3E], 'out_proj.weight'
 * [E, E], 'out_proj.bias' [E] } as Float32Arrays. Returns the serialized ModelProto
 * (Uint8Array) with input 'x' [1, L, E] and output 'y' [1, L, E].
 */
export function buildMhaModel({ L, E, numHeads, weights, causal, graph = 'contrib' }) {
  const d = E / numHeads;
  const W = weights.in_proj_weight, b = weights.in_proj_bias;
  const init = [];
  const nodes = [];
  for (const [i, n] of ['q', 'k', 'v'].entries()) {
    init.push(floatTensor(`W${n}`, [E, E], transpose(W.subarray(i * E * E, (i + 1) * E * E), E, E)));
    init.push(floatTensor(`b${n}`, [E], b.slice(i * E, (i + 1) * E)));
    nodes.push(node('MatMul', ['x', `W${n}`], [`${n}_mm`]));
    nodes.push(node('Add', [`${n}_mm`, `b${n}`], [n]));            // [1, L, E]
  }
  init.push(floatTensor('Wo', [E, E], transpose(weights['out_proj.weight'], E, E)));
  init.push(floatTensor('bo', [E], weights['out_proj.bias']));
  if (causal) init.push(floatTensor('mask', graph === 'contrib' ? [1, 1, L, L] : [L, L], causalMask(L)));

  const opsets = [['', 17]];
  if (graph === 'contrib') {
    // com.microsoft.MultiHeadAttention(query, key, value, bias, key_padding_mask, attention_bias)
    nodes.push(node('MultiHeadAttention', ['q', 'k', 'v', '', '', ...(causal ? ['mask'] : [])], ['attn'],
      { num_heads: numHeads }, 'com.microsoft'));
    opsets.push(['com.microsoft', 1]);
  } else if (graph === 'plain') {
    init.push(int64Tensor('shape_heads', [1, L, numHeads, d]));
    init.push(int64Tensor('shape_out', [1, L, E]));
    init.push(floatTensor('scale', [], Float32Array.of(1 / Math.sqrt(d))));
    for (const n of ['q', 'k', 'v']) nodes.push(node('Reshape', [n, 'shape_heads'], [`${n}4`]));  // [1, L, h, d]
    nodes.push(node('Transpose', ['q4'], ['qh'], { perm: [0, 2, 1, 3] }));   // [1, h, L, d]
    nodes.push(node('Transpose', ['k4'], ['khT'], { perm: [0, 2, 3, 1] }));  // [1, h, d, L]
    nodes.push(node('Transpose', ['v4'], ['vh'], { perm: [0, 2, 1, 3] }));   // [1, h, L, d]
    nodes.push(node('MatMul', ['qh', 'khT'], ['s_raw']));                    // [1, h, L, L]
    nodes.push(node('Mul', ['s_raw', 'scale'], [causal ? 's_scaled' : 's']));
    if (causal) nodes.push(node('Add', ['s_scaled', 'mask'], ['s']));
    nodes.push(node('Softmax', ['s'], ['p'], { axis: -1 }));
    nodes.push(node('MatMul', ['p', 'vh'], ['oh']));                         // [1, h, L, d]
    nodes.push(node('Transpose', ['oh'], ['o4'], { perm: [0, 2, 1, 3] }));   // [1, L, h, d]
    nodes.push(node('Reshape', ['o4', 'shape_out'], ['attn']));              // [1, L, E]
  } else {
    throw new Error(`onnx_model: graph must be 'contrib' or 'plain', got '${graph}'`);
  }
  nodes.push(node('MatMul', ['attn', 'Wo'], ['y_mm']));
  nodes.push(node('Add', ['y_mm', 'bo'], ['y']));
  return model(nodes, init, [valueInfo('x', [1, L, E])], [valueInfo('y', [1, L, E])], opsets);
}
