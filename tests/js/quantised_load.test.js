// Pre-quantised weights taken as stored by loadStateDict() (storage/quantised_tensors.js): GGUF
// Q4_0 / Q8_0 blocks (quantised here by llama.cpp's rules, tests/fixtures/make_gguf.mjs) into int4
// / int8 modules, and ORT MatMulNBits 4-bit initializers (blocks of 32 to 256, zero points or the
// default 8, f32 or f16 scales, K not a multiple of the block). Each is checked two ways against
// values this file computes from the codes and scales it wrote: the module's weights read back
// bit for bit (the WASM executor's readStateDict()), and forward() against the float64 reference
// of those weights. Then the hostile inputs: each a typed error naming the entry, after which the
// module computes exactly as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DTypeError, MultiHeadAttention, StateDictError } from '#webattention';
import { WasmExecutor, coreConfig, resolveMhaConfig, resolveModuleStateDict } from '../internals.mjs';
import { compare, randomTensor, rng } from '../contract/contract.mjs';
import { layerReference, torchWeights } from '../contract/layer_reference.mjs';
import { quantizeQ4_0, quantizeQ8_0 } from '../fixtures/make_gguf.mjs';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';
import { f32BitsToF16 } from '../../web/src/storage/half_floats.js';
import { halfValue } from '../fixtures/make_gguf.mjs';

const { core } = await loadNodeCore(pickVariant());
const gaussian = (next) => () => next() * 0.4;

/** A GGUF tensor of `type` ('q4_0' | 'q8_0') with shape [rows, cols] and its values. */
function ggufTensor(type, rows, cols, next) {
  const x = Float64Array.from({ length: rows * cols }, gaussian(next));
  const { data, values } = type === 'q4_0' ? quantizeQ4_0(x) : quantizeQ8_0(x);
  return { tensor: { dtype: type, data, shape: [rows, cols] }, values };
}

/**
 * A MatMulNBits tensor [N, K] with random codes, scales and (unless `zeros` is false) zero points,
 * laid out by the spec, with its values (code − zero) · scale; scales as f16 bits when `half`.
 */
function matMulNBits(N, K, blockSize, next, { zeros = true, half = false } = {}) {
  const blocks = Math.ceil(K / blockSize), blob = blockSize / 2;
  const data = new Uint8Array(N * blocks * blob);
  const codes = Uint8Array.from({ length: N * blocks * blockSize }, () => Math.floor((next() + 0.5) * 16) & 15);
  for (let i = 0; i < codes.length; i += 2) data[i / 2] = codes[i] | (codes[i + 1] << 4);
  const bits = Uint16Array.from({ length: N * blocks }, () => f32BitsToF16(new Uint32Array(new Float32Array([next() * 0.1]).buffer)[0]));
  const scales = Float32Array.from(bits, halfValue);
  const z = Uint8Array.from({ length: N * blocks }, () => (zeros ? Math.floor((next() + 0.5) * 16) & 15 : 8));
  const packedZeros = new Uint8Array(N * Math.ceil(blocks / 2));
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < blocks; b++) packedZeros[n * Math.ceil(blocks / 2) + (b >> 1)] |= z[n * blocks + b] << (4 * (b & 1));
  }
  const values = new Float64Array(N * K);
  for (let n = 0; n < N; n++) {
    for (let k = 0; k < K; k++) {
      const b = n * blocks + Math.floor(k / blockSize);
      values[n * K + k] = (codes[b * blockSize + (k % blockSize)] - z[b]) * scales[b];
    }
  }
  const tensor = { dtype: 'int4', data, scales: half ? { data: bits, dtype: 'float16' } : scales, blockSize, shape: [N, K] };
  if (zeros) tensor.zeroPoints = packedZeros;
  return { tensor, values };
}

/** A state dict of the module's entries, weights from `weight(name, [rows, cols])`, biases random. */
function stateDicts(shapes, weight, next) {
  const given = {}, values = {};
  for (const { name, shape } of shapes) {
    if (shape.length === 2) {
      const w = weight(name, shape);
      given[name] = w.tensor;
      values[name] = { data: Float32Array.from(w.values), shape };
    } else {
      given[name] = values[name] = randomTensor(shape, next);
    }
  }
  return { given, values };
}

/** The module's weights as the WASM core holds them, through its own executor. */
function storedWeights(create, given) {
  const config = resolveMhaConfig(create);
  const executor = new WasmExecutor(core, config, coreConfig(config));
  try {
    executor.loadStateDict(resolveModuleStateDict(executor.parameterSpecs(), given, undefined, config.weightsDtype));
    return Object.fromEntries(executor.readStateDict().map(({ name, data }) => [name, data]));
  } finally {
    executor.dispose();
  }
}

async function assertTakenAsStored(create, weight, seed) {
  const mha = await MultiHeadAttention.create(create);
  try {
    const next = rng(seed);
    const { given, values } = stateDicts(mha.stateDictShapes, weight, next);
    const stored = storedWeights(create, given);
    for (const [name, { data }] of Object.entries(values)) {
      assert.ok(stored[name].every((v, i) => Object.is(v, data[i])), `${name}: the stored weights are not the blocks' values bit for bit`);
    }
    mha.loadStateDict(given);
    const x = randomTensor([2, 5, create.embedDim], next);
    const { output } = await mha.forward(x, x, x);
    const expected = layerReference(create, torchWeights(values, create), x);
    const c = compare(output, { data: expected, shape: output.shape });
    assert.ok(c.ok, c.detail);
  } finally {
    mha.dispose();
  }
}

for (const [type, weightsDtype] of [['q4_0', 'int4'], ['q8_0', 'int8']]) {
  test(`GGUF ${type} blocks load into a weightsDtype '${weightsDtype}' module as stored (packed in_proj_weight and GQA's separate ones)`, async () => {
    for (const create of [{ embedDim: 64, numHeads: 4 }, { embedDim: 64, numHeads: 4, numKvHeads: 2, bias: false }]) {
      const next = rng(11);
      await assertTakenAsStored({ ...create, weightsDtype }, (name, [rows, cols]) => ggufTensor(type, rows, cols, next), 3);
    }
  });
}

test('MatMulNBits 4-bit initializers load as stored: blocks of 32 to 256, zero points or 8, f32 or f16 scales, K past the last whole block', async () => {
  for (const [blockSize, E, options] of [[32, 64, {}], [64, 80, { half: true }], [128, 64, { zeros: false }], [256, 96, {}], [64, 64, { zeros: false, half: true }]]) {
    const next = rng(blockSize + E);
    await assertTakenAsStored({ embedDim: E, numHeads: 4, weightsDtype: 'int4' }, (name, [N, K]) => matMulNBits(N, K, blockSize, next, options), 5);
  }
});

test('hostile quantised tensors: typed errors naming the entry, and the module computes as before', async () => {
  const E = 64;
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, weightsDtype: 'int4' });
  const f32 = await MultiHeadAttention.create({ embedDim: E, numHeads: 4 });
  try {
    const next = rng(21);
    const { given } = stateDicts(mha.stateDictShapes, (name, [rows, cols]) => ggufTensor('q4_0', rows, cols, next), next);
    mha.loadStateDict(given);
    const x = randomTensor([1, 3, E], next);
    const before = (await mha.forward(x, x, x)).output.data;
    const q4 = ggufTensor('q4_0', E, E, next).tensor;
    const q8 = ggufTensor('q8_0', E, E, next).tensor;
    const nbits = matMulNBits(E, E, 64, next).tensor;
    const nanScale = q8.data.slice();
    nanScale.set([0x00, 0x7e], 34 * 5);  // block 5: row 2, block 1; an f16 NaN
    const infScale = { ...nbits, scales: nbits.scales.map((s, i) => (i === 7 ? Infinity : s)) };
    const cases = [
      [mha, { dtype: 'q8_0', data: q8.data, shape: [E, E] }, DTypeError, /q8_0 blocks load as stored into a module with weightsDtype 'int8'/],
      [f32, q4, DTypeError, /weightsDtype 'int4' \(create\(\{ weightsDtype: 'int4' \}\)\), this one stores float32/],
      [mha, { ...q4, data: q4.data.subarray(0, q4.data.length - 18) }, StateDictError, /data holds 2286 bytes, expected 2304 \(128 blocks of 18 bytes/],
      [mha, { ...q4, shape: [E / 2, 2 * E] }, StateDictError, /expected shape \[64, 64\], got \[32, 128\]/],
      [mha, { ...q4, data: Array.from(q4.data) }, DTypeError, /data: expected a Uint8Array/],
      [mha, { ...nbits, blockSize: 48 }, StateDictError, /blockSize: expected one of 32, 64, 128, 256, got 48/],
      [mha, { ...nbits, scales: nbits.scales.subarray(1) }, StateDictError, /scales holds 63 scales, expected 64/],
      [mha, { ...nbits, zeroPoints: nbits.zeroPoints.subarray(1) }, StateDictError, /zeroPoints holds 63 bytes, expected 64/],
      [mha, { ...nbits, zeroPoints: Float32Array.from(nbits.zeroPoints) }, DTypeError, /zeroPoints: expected a Uint8Array/],
      [mha, { ...nbits, scales: { data: nbits.scales, dtype: 'bfloat16' } }, DTypeError, /scales: expected a Float32Array or/],
      [mha, infScale, StateDictError, /scales must be finite, got Infinity at block 0 of row 7/],
    ];
    for (const [module, bad, Type, message] of cases) {
      const sd = module === mha ? { ...given, 'out_proj.weight': bad } : { ...stateDicts(f32.stateDictShapes, (name, shape) => ({ tensor: randomTensor(shape, next), values: [] }), next).given, 'out_proj.weight': bad };
      assert.throws(() => module.loadStateDict(sd), (e) => {
        assert.ok(e instanceof Type, `${e.name}: ${e.message}`);
        assert.match(e.message, /out_proj\.weight/);
        assert.match(e.message, message);
        return true;
      });
    }
    const int8 = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, weightsDtype: 'int8' });
    try {
      const { given: g8 } = stateDicts(int8.stateDictShapes, (name, [rows, cols]) => ggufTensor('q8_0', rows, cols, next), next);
      assert.throws(() => int8.loadStateDict({ ...g8, 'out_proj.weight': { ...q8, data: nanScale } }),
        { name: 'StateDictError', argument: 'out_proj.weight', message: /scales must be finite, got NaN at block 1 of row 2/ });
    } finally {
      int8.dispose();
    }
    // Quantised blocks are weight matrices' only; stacked with float ones they cannot be one entry.
    assert.throws(() => mha.loadStateDict({ ...given, in_proj_bias: { dtype: 'q4_0', data: new Uint8Array(18 * 6), shape: [3 * E] } }),
      { name: 'StateDictError', argument: 'in_proj_bias', message: /weight matrices only/ });
    const { in_proj_weight: packed, ...rest } = given;
    assert.throws(() => mha.loadStateDict({ ...rest, q_proj_weight: q4, k_proj_weight: q4, v_proj_weight: randomTensor([E, E], next) }),
      { name: 'StateDictError', argument: 'v_proj_weight', message: /must be of one kind/ });
    assert.ok(packed);
    assert.deepEqual((await mha.forward(x, x, x)).output.data, before, 'a refused load changed the weights');
  } finally {
    mha.dispose();
    f32.dispose();
  }
});
