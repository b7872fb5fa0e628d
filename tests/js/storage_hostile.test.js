// 16- and 8-bit storage against bad input: a Uint16Array that does not say which 16-bit floats it
// holds, mixed dtypes in one call, a 16-bit weight of the other kind than the module's, non-finite
// values in an int8 block, dtype options out of their lists, a dtype behind a getter; each a typed
// error naming the argument, the module usable afterwards. And loadSafetensors(bytes,
// { convert: false }): 16-bit tensors as such, views where aligned.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DTypeError, MultiHeadAttention, OptionError, StateDictError, loadSafetensors, scaledDotProductAttention, selfAttention,
} from '#webattention';
import { randomTensor, rng } from '../contract/contract.mjs';
import { roundToHalf } from '../../web/src/storage/half_floats.js';
import { validFile } from './safetensors_files.js';

const f16 = (t) => ({ data: roundToHalf('float16', t.data), shape: t.shape, dtype: 'float16' });

async function module(options = {}) {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, ...options });
  const next = rng(5);
  const stateDict = Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));
  return { mha, stateDict };
}

test('a Uint16Array without a dtype is a DTypeError naming the argument, in every call', async () => {
  const bits = { data: new Uint16Array(16), shape: [2, 8] };
  const x = randomTensor([2, 8], rng(1));
  const { mha, stateDict } = await module();
  try {
    await assert.rejects(mha.forward(bits, x, x), (e) => e instanceof DTypeError && e.argument === 'query'
      && /query\.dtype: Uint16Array data holds 16-bit floats; expected dtype 'float16' \| 'bfloat16' \| 'F16' \| 'BF16'.*got undefined/.test(e.message));
    await assert.rejects(scaledDotProductAttention(x, x, { ...bits, dtype: 'float8' }), (e) => e instanceof DTypeError && e.argument === 'v' && /got string "float8"/.test(e.message));
    await assert.rejects(selfAttention({ data: bits.data, dims: [2, 8] }), (e) => e instanceof DTypeError && /x\.type/.test(e.message));
    assert.throws(() => mha.loadStateDict({ ...stateDict, 'out_proj.weight': new Uint16Array(64) }),
      (e) => e instanceof DTypeError && e.argument === "stateDict['out_proj.weight']" && /bare Uint16Array/.test(e.message));
    assert.throws(() => mha.loadStateDict({ ...stateDict, 'out_proj.weight': { data: new Uint16Array(64), shape: [8, 8] } }),
      (e) => e instanceof DTypeError && e.argument === "stateDict['out_proj.weight']");
    mha.loadStateDict(stateDict);
    assert.equal((await mha.forward(x, x, x)).output.data.length, 16, 'usable afterwards');
  } finally {
    mha.dispose();
  }
});

test('mixed dtypes in one call are a DTypeError naming the first argument that differs', async () => {
  const x = randomTensor([3, 8], rng(2));
  const { mha, stateDict } = await module();
  try {
    mha.loadStateDict(stateDict);
    await assert.rejects(mha.forward(f16(x), x, x), (e) => e instanceof DTypeError && e.argument === 'key'
      && /expected float16 data as query has \(one dtype per call\), got float32/.test(e.message));
    const bf16 = { data: roundToHalf('bfloat16', x.data), shape: x.shape, dtype: 'BF16' };
    await assert.rejects(scaledDotProductAttention(f16(x), f16(x), bf16), (e) => e instanceof DTypeError && e.argument === 'v' && e.actual === 'bfloat16');
  } finally {
    mha.dispose();
  }
});

test('a 16-bit weight of the other 16-bit kind than the module\'s is a DTypeError; biases and other modules widen it', async () => {
  const { mha, stateDict } = await module({ weightsDtype: 'float16' });
  const bf16 = (t) => ({ data: roundToHalf('bfloat16', t.data), shape: t.shape, dtype: 'bfloat16' });
  try {
    assert.throws(() => mha.loadStateDict({ ...stateDict, in_proj_weight: bf16(stateDict.in_proj_weight) }),
      (e) => e instanceof DTypeError && e.argument === "stateDict['in_proj_weight']" && e.expected === 'float16' && e.actual === 'bfloat16');
    mha.loadStateDict({ ...stateDict, in_proj_bias: bf16(stateDict.in_proj_bias) });
  } finally {
    mha.dispose();
  }
  for (const weightsDtype of ['float32', 'int8', 'bfloat16']) {
    const other = await module({ weightsDtype });
    try {
      other.mha.loadStateDict({ ...other.stateDict, in_proj_weight: f16(other.stateDict.in_proj_weight) });
    } catch (e) {
      assert.ok(weightsDtype === 'bfloat16' && e instanceof DTypeError, `${weightsDtype}: ${e}`);
    } finally {
      other.mha.dispose();
    }
  }
});

test('a NaN or ±inf in an int8 weight block is a StateDictError naming the entry; nothing is half-loaded', async () => {
  const x = randomTensor([2, 8], rng(3));
  const { mha, stateDict } = await module({ weightsDtype: 'int8' });
  try {
    mha.loadStateDict(stateDict);
    const before = (await mha.forward(x, x, x)).output.data;
    for (const bad of [NaN, Infinity, -Infinity]) {
      const w = { data: stateDict['out_proj.weight'].data.slice(), shape: [8, 8] };
      w.data[13] = bad;
      assert.throws(() => mha.loadStateDict({ ...stateDict, 'out_proj.weight': w }),
        (e) => e instanceof StateDictError && /out_proj\.weight/.test(`${e.argument} ${e.message}`), String(bad));
      assert.throws(() => mha.loadStateDict({ ...stateDict, 'out_proj.weight': f16({ data: w.data, shape: w.shape }) }), StateDictError);
    }
    mha.loadStateDict(stateDict);
    assert.deepEqual((await mha.forward(x, x, x)).output.data, before);
  } finally {
    mha.dispose();
  }
});

test('16-bit int8 weights are refused by their bits: each format\'s largest finite values load, its infinities and NaNs do not', async () => {
  const { mha, stateDict } = await module({ weightsDtype: 'int8' });
  // [dtype, largest finite bits (±), non-finite bits → the value the message names]
  const FORMATS = [
    ['float16', [0x7bff, 0xfbff], [[0x7c00, 'Infinity'], [0xfc00, '-Infinity'], [0x7c01, 'NaN'], [0xfe00, 'NaN']]],
    ['bfloat16', [0x7f7f, 0xff7f], [[0x7f80, 'Infinity'], [0xff80, '-Infinity'], [0x7f81, 'NaN'], [0xffc0, 'NaN']]],
  ];
  const HALF = { float16: 0x3800, bfloat16: 0x3f00 };  // 0.5
  const half = (dtype, shape, bits, at) => {
    const data = new Uint16Array(shape[0] * shape[1]).fill(HALF[dtype]);
    data[at] = bits;
    return { data, shape, dtype };
  };
  const rest = { ...stateDict };
  delete rest.in_proj_weight;
  try {
    for (const [dtype, largest, nonFinite] of FORMATS) {
      for (const bits of largest) mha.loadStateDict({ ...stateDict, 'out_proj.weight': half(dtype, [8, 8], bits, 9) });
      for (const [bits, value] of nonFinite) {
        assert.throws(() => mha.loadStateDict({ ...stateDict, 'out_proj.weight': half(dtype, [8, 8], bits, 9) }), (e) => e instanceof StateDictError
          && e.message === `stateDict['out_proj.weight']: int8 weights (create({ weightsDtype: 'int8' })) must be finite, got ${value} at [1, 1] (block 0 of row 1)`);
        // Separate q/k/v weights, stacked into in_proj_weight: the one given is named, not the stack.
        const separate = { ...rest, q_proj_weight: half(dtype, [8, 8], 0, 0), k_proj_weight: half(dtype, [8, 8], bits, 63), v_proj_weight: half(dtype, [8, 8], 0, 0) };
        assert.throws(() => mha.loadStateDict(separate), (e) => e instanceof StateDictError && e.argument === 'k_proj_weight'
          && e.message.endsWith(`got ${value} at [7, 7] (block 0 of row 7)`), `${dtype} 0x${bits.toString(16)}`);
      }
    }
    mha.loadStateDict({ ...rest, q_proj_weight: half('float16', [8, 8], 0x7bff, 0), k_proj_weight: half('float16', [8, 8], 0, 0), v_proj_weight: half('float16', [8, 8], 0xfbff, 63) });
  } finally {
    mha.dispose();
  }
});

test('weightsDtype and the cache dtype outside their lists are OptionErrors naming the option', async () => {
  await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'fp16' }),
    (e) => e instanceof OptionError && e.argument === 'weightsDtype' && /'float32' \| 'float16' \| 'bfloat16' \| 'int8'/.test(e.message));
  const { mha } = await module();
  try {
    assert.throws(() => mha.createCache({ maxLength: 4, dtype: 'bfloat16' }),
      (e) => e instanceof OptionError && e.argument === 'dtype' && /'float32' \| 'float16' \| 'int8', got string "bfloat16"/.test(e.message));
  } finally {
    mha.dispose();
  }
});

test('a 16-bit tensor\'s dtype is read once (a getter cannot answer the check one kind and the call another)', async () => {
  const x = randomTensor([2, 8], rng(4));
  const bits = roundToHalf('float16', x.data);
  let reads = 0;
  const tricky = { data: bits, shape: [2, 8], get dtype() { reads++; return reads === 1 ? 'float16' : 'bfloat16'; } };
  const { output } = await selfAttention(tricky);
  assert.equal(output.dtype, 'float16');
  assert.equal(reads, 1);
  const proxy = new Proxy({ data: bits, shape: [2, 8], dtype: 'float16' }, { get: (t, k) => { if (k === 'dtype') reads++; return t[k]; } });
  reads = 0;
  await scaledDotProductAttention(proxy, proxy, proxy);
  assert.equal(reads, 1, 'one object passed as q, k and v is read once, as forward() reads it');
});

test('loadSafetensors(bytes, { convert: false }): F16 / BF16 as 16-bit tensors with the file\'s dtype, views where aligned', () => {
  const bytes = validFile();
  const kept = loadSafetensors(bytes, { convert: false });
  const converted = loadSafetensors(bytes);
  assert.ok(kept.get('a').data instanceof Float32Array);
  for (const name of ['b', 'c', 'd']) {
    const t = kept.get(name);
    assert.ok(t.data instanceof Uint16Array, name);
    assert.equal(t.dtype, converted.get(name).dtype, name);
    assert.deepEqual(t.shape, converted.get(name).shape, name);
  }
  assert.deepEqual([...kept.get('b').data], [0x3c00, 0xc000, 0x0001]);
  assert.deepEqual([...kept.get('c').data], [0x3f80, 0x7f80]);
  // The data starts at a multiple of 8: every 16-bit tensor here is 2-byte aligned, so a view.
  for (const name of ['b', 'c', 'd']) assert.equal(kept.get(name).data.buffer, bytes.buffer, `${name} is a view`);
  // One byte further in, the same file's 16-bit tensors are copies with the same bits.
  const shifted = new Uint8Array(bytes.length + 1);
  shifted.set(bytes, 1);
  const copy = loadSafetensors(shifted.subarray(1), { convert: false });
  assert.notEqual(copy.get('b').data.buffer, shifted.buffer);
  assert.deepEqual([...copy.get('d').data], [...kept.get('d').data]);
  assert.throws(() => loadSafetensors(bytes, { convert: 'no' }), (e) => e instanceof OptionError && e.argument === 'convert');
  assert.throws(() => loadSafetensors(bytes, { conver: false }), OptionError);
});
