// The claims of docs/attention-math.md §2, §5 and §6, checked through the public API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, selfAttention, OptionError } from '#webattention';
import { randomTensor, rng } from '../contract/contract.mjs';
import { singularValues as jsSingularValues } from '../../web/demo/bilinear_math.js';

async function moduleWithRandomWeights(options, next) {
  const mha = await MultiHeadAttention.create(options);
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)])));
  return mha;
}

test('§2: in plain self-attention each equal-norm token weighs itself most', async () => {
  const next = rng(2);
  for (const [L, C] of [[5, 3], [9, 8], [16, 4]]) {
    const x = randomTensor([L, C], next);
    for (let i = 0; i < L; i++) {  // scale every row to norm 2
      const row = x.data.subarray(i * C, (i + 1) * C);
      const norm = Math.hypot(...row);
      row.forEach((v, c) => { row[c] = (2 * v) / norm; });
    }
    const { attnWeights: w } = await selfAttention(x, { returnWeights: true });
    for (let i = 0; i < L; i++) {
      for (let j = 0; j < L; j++) assert.ok(w.data[i * L + j] <= w.data[i * L + i] * (1 + 1e-6), `L=${L} i=${i} j=${j}`);
    }
  }
});

test('§5: scores through each head\'s W_i equal the factored scores; rank and parameter counts', async () => {
  const next = rng(5);
  const E = 12, kdim = 7, H = 3, dk = 4, L = 4, S = 6;
  const mha = await moduleWithRandomWeights({ embedDim: E, numHeads: H, kdim, vdim: 5, bias: false }, next);
  const x = randomTensor([L, E], next), y = randomTensor([S, kdim], next), v = randomTensor([S, 5], next);
  const { attnWeights } = await mha.forward(x, y, v, { needWeights: true, averageAttnWeights: false });
  for (let h = 0; h < H; h++) {
    const form = mha.headBilinearForm(h);
    assert.deepEqual(form.matrix.shape, [E, kdim]);
    assert.equal(form.rank, dk);
    assert.equal(form.factoredParameters, (E + kdim) * dk);
    assert.equal(form.fullParameters, E * kdim);
    // The core's singular values (Eigen, from the factors) against the page's JS SVD of W_i.
    assert.ok(form.singularValues instanceof Float64Array && form.singularValues.length === dk);
    const sigma = jsSingularValues(form.matrix.data, E, kdim);
    form.singularValues.forEach((s, k) => assert.ok(Math.abs(s - sigma[k]) <= 1e-5 * sigma[0], `head ${h} σ_${k}: ${s} vs ${sigma[k]}`));
    for (let i = 0; i < L; i++) {
      const scores = Array.from({ length: S }, (_, j) => {
        let dot = 0;
        for (let r = 0; r < E; r++) for (let c = 0; c < kdim; c++) dot += x.data[i * E + r] * form.matrix.data[r * kdim + c] * y.data[j * kdim + c];
        return dot / Math.sqrt(dk);
      });
      const max = Math.max(...scores);
      const exp = scores.map((s) => Math.exp(s - max));
      const sum = exp.reduce((a, b) => a + b, 0);
      for (let j = 0; j < S; j++) {
        const actual = attnWeights.data[(h * L + i) * S + j];
        assert.ok(Math.abs(actual - exp[j] / sum) <= 1e-6 + 1e-4 * actual, `head ${h} (${i}, ${j})`);
      }
    }
  }
  assert.throws(() => mha.headBilinearForm(H), OptionError);
  mha.dispose();
});

// §6: 9 heads with zero query/key projections, each confined by its per-head mask to the pixel
// at offset Δ_k, identity value projections and W_O holding the kernel taps, are a 3×3 convolution.
const n = 5, C = 2, L = n * n;
const offsets = [];
for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) offsets.push([dy, dx]);

function convolutionModuleWeights(kernel /* [9][C_out][C_in] */) {
  const H = 9;
  const vIdentity = new Float32Array(H * C * C);
  for (let k = 0; k < H; k++) for (let c = 0; c < C; c++) vIdentity[(k * C + c) * C + c] = 1;
  const out = new Float32Array(C * H * C);  // [E, h·d_v]: out[o][k·C + c] = kernel[k][o][c]
  for (let k = 0; k < H; k++) for (let o = 0; o < C; o++) for (let c = 0; c < C; c++) out[o * H * C + k * C + c] = kernel[k][o][c];
  return {
    q_proj_weight: new Float32Array(H * C),
    k_proj_weight: new Float32Array(H * C),
    v_proj_weight: vIdentity,
    'out_proj.weight': out,
  };
}

function directConvolution(image, kernel) {  // zero padding
  const y = new Float32Array(L * C);
  for (let py = 0; py < n; py++) for (let px = 0; px < n; px++) {
    offsets.forEach(([dy, dx], k) => {
      const qy = py + dy, qx = px + dx;
      if (qy < 0 || qy >= n || qx < 0 || qx >= n) return;
      for (let o = 0; o < C; o++) for (let c = 0; c < C; c++) y[(py * n + px) * C + o] += kernel[k][o][c] * image[(qy * n + qx) * C + c];
    });
  }
  return y;
}

async function setup() {
  const next = rng(6);
  const kernel = offsets.map(() => [[next(), next()], [next(), next()]]);
  const image = randomTensor([L, C], next, 2);
  const mha = await MultiHeadAttention.create({ embedDim: C, numHeads: 9, headDim: 1, valueHeadDim: C, bias: false });
  mha.loadStateDict(convolutionModuleWeights(kernel));
  return { mha, image, expected: directConvolution(image.data, kernel) };
}

test('§6: 9 heads with one-hot per-head masks equal a 3×3 convolution (zero padding included)', async () => {
  const { mha, image, expected } = await setup();
  const mask = new Uint8Array(9 * L * L).fill(1);
  offsets.forEach(([dy, dx], k) => {
    for (let py = 0; py < n; py++) for (let px = 0; px < n; px++) {
      const qy = py + dy, qx = px + dx;
      if (qy >= 0 && qy < n && qx >= 0 && qx < n) mask[(k * L + py * n + px) * L + qy * n + qx] = 0;
    }
  });
  const { output } = await mha.forward(image, image, image, { attnMask: { data: mask, shape: [9, L, L] } });
  output.data.forEach((v, i) => assert.ok(Math.abs(v - expected[i]) <= 1e-5, `element ${i}: ${v} vs ${expected[i]}`));
  mha.dispose();
});

test('§6: with a sharpening relative-position bias the layer converges to the convolution', async () => {
  const { mha, image, expected } = await setup();
  const errors = [];
  for (const sharpness of [1, 4, 16, 64]) {
    // bias_k(p, q) = -sharpness · |q - (p + Δ_k)|², peaking at offset Δ_k.
    const bias = new Float32Array(9 * L * L);
    offsets.forEach(([dy, dx], k) => {
      for (let p = 0; p < L; p++) for (let q = 0; q < L; q++) {
        const ey = Math.floor(q / n) - (Math.floor(p / n) + dy), ex = (q % n) - ((p % n) + dx);
        bias[(k * L + p) * L + q] = -sharpness * (ey * ey + ex * ex);
      }
    });
    const { output } = await mha.forward(image, image, image, { attnMask: { data: bias, shape: [9, L, L] } });
    let worst = 0;  // interior pixels: every offset lands inside the image
    for (let py = 1; py < n - 1; py++) for (let px = 1; px < n - 1; px++) {
      for (let o = 0; o < C; o++) worst = Math.max(worst, Math.abs(output.data[(py * n + px) * C + o] - expected[(py * n + px) * C + o]));
    }
    errors.push(worst);
  }
  for (let i = 1; i < errors.length; i++) assert.ok(errors[i] < errors[i - 1], `errors ${errors}`);
  assert.ok(errors[0] > 1e-2, `a soft bias should blur: ${errors}`);
  assert.ok(errors.at(-1) < 1e-5, `sharp bias should be exact: ${errors}`);
  mha.dispose();
});
