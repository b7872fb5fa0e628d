// A module's weights on the GPU as its weightsDtype stores them (docs/attention-math.md): the
// weight matrices float32, or 16-bit two per u32 (rounded to nearest-even from float32, 16-bit
// tensors of the module's kind kept as given), or int8 four per u32 (llama.cpp's q8_0) with a
// float32 scale buffer per matrix buffer; biases float32 always. The buffers and offsets are
// parameter_layout.js's, counted in elements; the linear kernels read them through weight(n, k)
// (kernels/linear_common.wgsl.js).
import { asFloat32, roundToHalf } from '../half_floats.js';
import { parameterLayout } from '../parameter_layout.js';
import { blocksPerRow, quantizeQ8 } from '../q8_0.js';
import { MASK_SENTINEL } from './kernels/attention_common.wgsl.js';

/** Bytes per weight element of each weightsDtype. */
const ELEMENT_BYTES = { float32: 4, float16: 2, bfloat16: 2, int8: 1 };

/** The weight matrix buffers (the others, biases, are float32). */
const MATRICES = ['win', 'wout'];

/**
 * Where each weight matrix's int8 scales start in its buffer's scale buffer (swin, swout), in
 * floats: W_q, W_k and W_v stacked as their rows are (one scale per 32 values of a row), and how
 * many each scale buffer holds. The linear problems read q, k, v (linear_problems.js).
 */
export function scaleOffsets({ embedDim: E, numHeads: H, numKvHeads: G, kdim, vdim, headDim: dk, valueHeadDim: dv }) {
  const k = H * dk * blocksPerRow(E);
  const v = k + G * dk * blocksPerRow(kdim);
  return { q: 0, k, v, swin: v + G * dv * blocksPerRow(vdim), swout: E * blocksPerRow(H * dv) };
}

// The buffers of options a module may not have: made only when it has them (nothing binds them else).
const OPTIONAL = { sinks: (c) => Boolean(c.sinks), qNorm: (c) => Boolean(c.qkNorm), kNorm: (c) => Boolean(c.qkNorm) };

/**
 * The module's GPU buffers, name → bytes (a multiple of 4, at least 4): win, bin, wout, bout, for
 * int8 weights swin and swout (their scales), and sinks, qNorm, kNorm when configured.
 */
export function parameterBufferBytes(config) {
  const dtype = config.weightsDtype ?? 'float32';
  const buffers = Object.entries(parameterLayout(config).buffers).filter(([name]) => OPTIONAL[name]?.(config) ?? true);
  const bytes = Object.fromEntries(buffers.map(([name, elements]) =>
    [name, (MATRICES.includes(name) ? elements * ELEMENT_BYTES[dtype] : elements * 4)]));
  if (dtype === 'int8') {
    const { swin, swout } = scaleOffsets(config);
    Object.assign(bytes, { swin: swin * 4, swout: swout * 4 });
  }
  return Object.fromEntries(Object.entries(bytes).map(([name, b]) => [name, Math.max(4, Math.ceil(b / 4) * 4)]));
}

// The rows' length (the input dimension) of each weight entry: its q8_0 blocks run along it.
function inputWidth(name, { embedDim: E, kdim, vdim, numHeads: H, valueHeadDim: dv }) {
  return { in_proj_weight: E, q_proj_weight: E, k_proj_weight: kdim, v_proj_weight: vdim, 'out_proj.weight': H * dv }[name];
}

const asFloats = ({ data, dtype }) => asFloat32(data, dtype);

/**
 * Every parameter buffer's bytes (name → Uint8Array of parameterBufferBytes() bytes) from the
 * state-dict entries ([{ name, data, dtype }], checked and complete, as loadStateDict() gives
 * them: state_dict.js has refused non-finite int8 weights already, before anything was loaded).
 */
export function packParameters(config, entries) {
  const dtype = config.weightsDtype ?? 'float32';
  const layout = parameterLayout(config).entries;
  const scales = scaleOffsets(config);
  const bytes = Object.fromEntries(Object.entries(parameterBufferBytes(config)).map(([name, n]) => [name, new Uint8Array(n)]));
  const view = (Type, name) => new Type(bytes[name].buffer, 0, bytes[name].byteLength / Type.BYTES_PER_ELEMENT);
  for (const entry of entries) {
    const [buffer, at] = layout[entry.name];
    if (buffer === 'sinks') {
      // A -Inf sink (no sink) goes up as the masks' finite sentinel, so that no infinity enters
      // the shaders (WGSL lets a GPU assume none): e^(sentinel − m) is 0 all the same.
      view(Float32Array, buffer).set(asFloats(entry).map((x) => (x === -Infinity ? MASK_SENTINEL : x)), at);
    } else if (!MATRICES.includes(buffer) || dtype === 'float32') {
      view(Float32Array, buffer).set(asFloats(entry), at);
    } else if (dtype === 'int8') {
      const { q, scales: s } = quantizeQ8(asFloats(entry), inputWidth(entry.name, config));
      view(Int8Array, buffer).set(q, at);
      const first = buffer === 'wout' ? 0 : { 0: scales.q, [layout.k_proj_weight[1]]: scales.k, [layout.v_proj_weight[1]]: scales.v }[at];
      view(Float32Array, `s${buffer}`).set(s, first);
    } else {
      view(Uint16Array, buffer).set(entry.dtype === dtype ? entry.data : roundToHalf(dtype, asFloats(entry)), at);
    }
  }
  return bytes;
}
