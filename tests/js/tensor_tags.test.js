// A tensor's dtype under either key (issue 34): `dtype` (this API's) or `type` (onnxruntime-web's
// and transformers.js's), with `shape` or `dims`, wherever a dtype is taken; every name the error
// of a missing one lists is taken; a 16-bit name on float32 data is a DTypeError, not ignored.
// On 1aa1392 { data: Uint16Array, dims } listed 'F16' | 'BF16' then refused type 'F16', type
// beside shape was a DTypeError, and dtype 'float16' on Float32Array data was ignored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DTypeError, MultiHeadAttention, selfAttention } from '#webattention';

const F16_ONE = 0x3c00, BF16_ONE = 0x3f80;
const halves = (bits) => new Uint16Array([bits, 0, 0, bits]);

test('16-bit tensors: every dtype name the error lists is taken, under dtype or type, beside shape or dims', async () => {
  const missing = await selfAttention({ data: halves(F16_ONE), dims: [2, 2] }).catch((e) => e);
  assert.ok(missing instanceof DTypeError && missing.argument === 'x', String(missing));
  for (const name of missing.expected) {
    const bits = /b/i.test(name) ? BF16_ONE : F16_ONE;
    for (const [shapeKey, tagKey] of [['dims', 'type'], ['shape', 'type'], ['shape', 'dtype'], ['dims', 'dtype']]) {
      const { output } = await selfAttention({ data: halves(bits), [shapeKey]: [2, 2], [tagKey]: name });
      assert.equal(output.data.length, 4, `${name} as ${tagKey} beside ${shapeKey}`);
    }
  }
  const mha = await MultiHeadAttention.create({ embedDim: 2, numHeads: 1, bias: false });
  try {
    mha.loadStateDict({
      in_proj_weight: { data: new Uint16Array(12).fill(F16_ONE), shape: [6, 2], type: 'float16' },
      'out_proj.weight': { data: new Uint16Array(4).fill(F16_ONE), dims: [2, 2], type: 'F16' },
    });
  } finally {
    mha.dispose();
  }
});

test("float32 data named 'float16' or 'bfloat16', or a dtype and a type that disagree, is a DTypeError naming the tensor", async () => {
  const data = new Float32Array([1, 0, 0, 1]);
  for (const tensor of [{ data, shape: [2, 2], dtype: 'float16' }, { data, dims: [2, 2], type: 'bfloat16' },
    { data: halves(F16_ONE), shape: [2, 2], dtype: 'float16', type: 'bfloat16' }]) {
    await assert.rejects(() => selfAttention(tensor), (e) => e instanceof DTypeError && e.argument === 'x', JSON.stringify(tensor));
  }
});
