// WGSL of what a cache append does to its row before storing it, where Q, K and V are one
// projection's rows (input_steps.js's prepareInAppend()): the qk-norm of every query and key
// head (qk_norm.wgsl.js's arithmetic), then RoPE (rotary.wgsl.js's), in place in the projection.
// Why in the append: one workgroup already holds each new row (cache_append.wgsl.js), and each of
// these steps was a dispatch of its own, a pipeline, a bind group and a dispatch for the host and
// a barrier for the GPU, per layer and token. The projection is then one read-write binding
// (`src`): WebGPU lets a dispatch write a buffer through one binding only.
import { ROTARY_PARAMS, ROTATION_FIELDS, ROTATION_WGSL } from './rotary.wgsl.js';

/** The steps an append may take first, in their order. */
export const PREPARE_STEPS = ['norm', 'rope'];

/** The uniforms the steps add to the append's (cache_append.wgsl.js's PREPARED_APPEND_PARAMS). */
export const PREPARE_PARAMS = [
  ['qOff', 'u32', 'query row (b, i) at src[qOff + (b·count + i)·kStride]: Q, K and V rows of one projection'],
  ...ROTARY_PARAMS.filter(([name]) => ROTATION_FIELDS.includes(name)),  // rope's, as the rotary kernel's
  ['eps', 'f32', 'norm: x ← x / sqrt(mean(x²) + eps) · w'],
];

/** What a module of `config` prepares ('norm', 'rope', 'norm+rope', or '': nothing). */
export const prepareOf = (config) => [config.qkNorm && 'norm', config.rotary && 'rope'].filter(Boolean).join('+');

/** The steps of a problem's `prepare` ('norm', 'rope', 'norm+rope'). */
export const prepareSteps = (prepare) => PREPARE_STEPS.filter((step) => prepare.split('+').includes(step));

/**
 * The bindings the steps read, from `first` on: the rotary table (rope), the query and key heads'
 * norm weights (norm), in the order input_steps.js binds them.
 */
export function prepareBindingsWgsl(steps, first) {
  let at = first;
  let code = '';
  if (steps.includes('rope')) code += `@group(0) @binding(${at++}) var<storage, read> table: array<f32>;  // [positions, half, 2]: (cos, sin)\n`;
  if (steps.includes('norm')) {
    code += `@group(0) @binding(${at++}) var<storage, read> qNorm: array<f32>;  // [DK]\n`;
    code += `@group(0) @binding(${at++}) var<storage, read> kNorm: array<f32>;\n`;
  }
  return code;
}

// The first value of head h (the query's qHeads, then the key's G) of new row (b, i) in src.
const HEAD_AT = /* wgsl */ `
fn headAt(b: u32, i: u32, h: u32) -> u32 {
  let row = (b * p.count + i) * p.kStride;
  if (h < QH) { return p.qOff + row + h * DK; }
  return p.kOff + row + (h - QH) * DK;
}
`;

// One invocation per head: its RMSNorm, the sum in the qk-norm kernel's order.
const NORM = /* wgsl */ `
fn normRow(b: u32, i: u32, t: u32) {
  for (var h = t; h < QH + G; h += WG) {
    let at = headAt(b, i, h);
    var squares = 0.0;
    for (var c = 0u; c < DK; c++) { squares += bitcast<f32>(src[at + c]) * bitcast<f32>(src[at + c]); }
    let inv = inverseSqrt(squares / f32(DK) + p.eps);
    for (var c = 0u; c < DK; c++) {
      var w = kNorm[c];
      if (h < QH) { w = qNorm[c]; }
      src[at + c] = bitcast<u32>(bitcast<f32>(src[at + c]) * inv * w);
    }
  }
}
`;

// One invocation per (head, pair): the rotary kernel's rotation (ROTATION_WGSL).
const ROPE = /* wgsl */ `${ROTATION_WGSL}
fn ropeRow(b: u32, i: u32, t: u32) {
  for (var e = t; e < (QH + G) * p.half; e += WG) {
    let at = headAt(b, i, e / p.half);
    let j = e % p.half;
    let pair = pairAt(j);
    let r = rotated(vec2f(bitcast<f32>(src[at + pair.x]), bitcast<f32>(src[at + pair.y])), b, i, j);
    src[at + pair.x] = bitcast<u32>(r.x);
    src[at + pair.y] = bitcast<u32>(r.y);
  }
}
`;

/**
 * WGSL of prepareRow(b, i, t), the steps over new row (b, i)'s qHeads query and G key heads by
 * invocation t of WG, each step's writes visible to the next and to the stores after it.
 */
export function prepareRowWgsl(steps, qHeads) {
  const calls = steps.map((step) => `  ${step}Row(b, i, t);\n  storageBarrier();`).join('\n');
  return `const QH = ${qHeads}u;
${HEAD_AT}${steps.includes('norm') ? NORM : ''}${steps.includes('rope') ? ROPE : ''}
fn prepareRow(b: u32, i: u32, t: u32) {
${calls}
}
`;
}
