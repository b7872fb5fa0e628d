// The model's non-attention arithmetic as WGSL kernels (README.md, "Architecture"), for
// CharGptGpu (char_gpt_gpu.js), whose activations stay on the GPU: the token's embedding row,
// LayerNorm, linear layers (with the exact GELU or a residual add folded in) and a residual add.
// Over the rows a dispatch is given (the grid's second dimension: one a decode step, a prompt's
// chunk at its prefill), row r of each operand at r times its width, float32. The sizes are the
// model's and are written into each kernel as constants; every operand is a storage buffer bound
// once (prepare()), so that a step only sets pipelines and bind groups and dispatches, as the
// package's own replays do.
//
// Float32 arithmetic in a fixed order: the results are within the golden tolerance of the float64
// runner (char_gpt.js), not equal to it (tests/webgpu/node_char_gpt_gpu.test.mjs).

const WORKGROUP = 64;
const STORAGE = 0x80;

// erf(x) in float32 by the Chebyshev fit of erfc (Numerical Recipes' erfcc: fractional error
// below 1.2e-7 everywhere), for GELU(z) = z · ½ (1 + erf(z / √2)).
const GELU_WGSL = /* wgsl */ `
fn erfc_abs(a: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.5 * a);
  let poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-a * a + poly);
}
fn gelu(z: f32) -> f32 {
  let a = abs(z) * 0.7071067811865476;
  let e = 1.0 - erfc_abs(a);
  return 0.5 * z * (1.0 + select(-e, e, z >= 0.0));
}`;

// Each kernel's WGSL of the sizes `s` ({ width, eps, inWidth, outWidth, gelu, add }) and its grid.
const KERNELS = {
  // Row r of x = embedding row token[r].
  embed: (s) => ({
    grid: Math.ceil(s.width / WORKGROUP),
    code: `@group(0) @binding(0) var<storage, read> token: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(${WORKGROUP}) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < ${s.width}u) { x[g.y * ${s.width}u + g.x] = table[token[g.y] * ${s.width}u + g.x]; }
}`,
  }),
  // x += y.
  add: (s) => ({
    grid: Math.ceil(s.width / WORKGROUP),
    code: `@group(0) @binding(0) var<storage, read> y: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(${WORKGROUP}) fn main(@builtin(global_invocation_id) g: vec3u) {
  let at = g.y * ${s.width}u + g.x;
  if (g.x < ${s.width}u) { x[at] += y[at]; }
}`,
  }),
  // out = (x − mean) / √(biased variance + eps) · weight + bias: one workgroup a row, sums by a tree.
  layerNorm: (s) => ({
    grid: 1,
    code: `@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
var<workgroup> sums: array<f32, ${WORKGROUP}>;
fn total(t: u32, value: f32) -> f32 {
  sums[t] = value;
  workgroupBarrier();
  for (var half = ${WORKGROUP / 2}u; half > 0u; half /= 2u) {
    if (t < half) { sums[t] += sums[t + half]; }
    workgroupBarrier();
  }
  let all = sums[0];
  workgroupBarrier();
  return all;
}
@compute @workgroup_size(${WORKGROUP}) fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  let row = wg.y * ${s.width}u;
  var s = 0.0;
  for (var i = t; i < ${s.width}u; i += ${WORKGROUP}u) { s += x[row + i]; }
  let mean = total(t, s) / ${s.width}.0;
  var v = 0.0;
  for (var i = t; i < ${s.width}u; i += ${WORKGROUP}u) { let d = x[row + i] - mean; v += d * d; }
  let scale = inverseSqrt(total(t, v) / ${s.width}.0 + ${s.eps});
  for (var i = t; i < ${s.width}u; i += ${WORKGROUP}u) { out[row + i] = (x[row + i] - mean) * scale * weight[i] + bias[i]; }
}`,
  }),
  // out[o] (= or +=) f(bias[o] + Σ_i x[i] · weight[o, i]), f the GELU or none: an invocation an output.
  linear: (s) => ({
    grid: Math.ceil(s.outWidth / WORKGROUP),
    code: `@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
${s.gelu ? GELU_WGSL : ''}
@compute @workgroup_size(${WORKGROUP}) fn main(@builtin(global_invocation_id) g: vec3u) {
  let o = g.x;
  if (o >= ${s.outWidth}u) { return; }
  let row = g.y * ${s.inWidth}u;
  var sum = 0.0;
  for (var i = 0u; i < ${s.inWidth}u; i++) { sum += x[row + i] * weight[o * ${s.inWidth}u + i]; }
  let y = ${s.gelu ? 'gelu(bias[o] + sum)' : 'bias[o] + sum'};
  out[g.y * ${s.outWidth}u + o] ${s.add ? '+=' : '='} y;
}`,
  }),
};

/**
 * The kernels on `device`: prepare(kernel, sizes, buffers) makes the pipeline (once per kernel and
 * sizes) and its bind group over `buffers` (in binding order) and returns the dispatch
 * { pipeline, group, grid }; run(encoder, dispatches, rows) encodes them over `rows` rows (1: a
 * decode step's) into one compute pass.
 */
export function modelOps(device) {
  const pipelines = new Map();
  const pipelineOf = (kernel, sizes) => {
    const key = `${kernel} ${JSON.stringify(sizes)}`;
    if (!pipelines.has(key)) {
      const { code, grid } = KERNELS[kernel](sizes);
      const module = device.createShaderModule({ code, label: `char-gpt ${kernel}` });
      pipelines.set(key, { pipeline: device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } }), grid });
    }
    return pipelines.get(key);
  };
  return {
    prepare(kernel, sizes, buffers) {
      const { pipeline, grid } = pipelineOf(kernel, sizes);
      const entries = buffers.map((buffer, binding) => ({ binding, resource: { buffer } }));
      return { pipeline, group: device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }), grid };
    },
    run(encoder, dispatches, rows = 1) {
      const pass = encoder.beginComputePass();
      for (const { pipeline, group, grid } of dispatches) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(grid, rows);
      }
      pass.end();
    },
  };
}

/** A storage buffer of `floats` (Float32Array, uploaded) or of that many zero floats. */
export function storageBuffer(device, floats, usage = 0) {
  const data = typeof floats === 'number' ? null : floats;
  const size = Math.max(4, (data ? data.length : floats) * 4);
  const buffer = device.createBuffer({ size, usage: STORAGE | usage, mappedAtCreation: data !== null });
  if (data) {
    new Float32Array(buffer.getMappedRange()).set(data);
    buffer.unmap();
  }
  return buffer;
}
