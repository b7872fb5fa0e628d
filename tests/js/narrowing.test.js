// float32 → F16 / BF16 rounding (web/src/storage/half_floats.js) and q8_0 quantisation (web/src/storage/q8_0.js),
// the conversions behind 16- and 8-bit storage: every tie, overflow boundary and subnormal of
// both formats checked against their definition and against PyTorch (SHA-256 of its bits), q8_0
// against NumPy (tests/fixtures/make_narrowing.py), NaNs and non-finite blocks by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { f32BitsToBf16, f32BitsToF16, firstNonFinite, halfOverflow, roundToHalf, widenHalf } from '../../web/src/storage/half_floats.js';
import { dequantizeQ8, quantizeQ8 } from '../../web/src/storage/q8_0.js';
import { stored } from '../contract/storage.mjs';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/narrowing/narrowing.json', import.meta.url), 'utf8'));
const FORMATS = {
  float16: { round: f32BitsToF16, infinity: 0x7c00, quiet: 0x200, pastLargest: 2 ** 16 },
  bfloat16: { round: f32BitsToBf16, infinity: 0x7f80, quiet: 0x40, pastLargest: 2 ** 128 },
};
const f32Of = (bits) => new Float32Array(new Uint32Array([bits]).buffer)[0];
const bitsOf = (value) => new Uint32Array(new Float32Array([value]).buffer)[0];

/**
 * make_narrowing.py's boundary_inputs(): for every finite non-negative pattern h, value(h), the
 * midpoint to value(h + 1) minus one float32 ulp, the midpoint, plus one ulp; then all of it
 * negated. Also returns what each must round to by definition: h, h, the even one of h and h + 1,
 * h + 1.
 */
function boundaryInputs(dtype) {
  const { infinity, pastLargest } = FORMATS[dtype];
  const widen = (h) => widenHalf(dtype, new Uint16Array([h]))[0];
  const inputs = [], expected = [];
  for (let h = 0; h < infinity; h++) {
    // Past the largest value: the power of two above it, so that the midpoint is where values
    // overflow to inf (F16: 65520).
    const next = h + 1 === infinity ? pastLargest : widen(h + 1);
    const mid = bitsOf((widen(h) + next) / 2);
    inputs.push(bitsOf(widen(h)), mid - 1, mid, mid + 1);
    expected.push(h, h, h % 2 === 0 ? h : h + 1, h + 1);
  }
  const negate = (list, bit) => list.concat(list.map((x) => (x | bit) >>> 0));
  return { inputs: Uint32Array.from(negate(inputs, 0x80000000)), expected: Uint16Array.from(negate(expected, 0x8000)) };
}

for (const dtype of Object.keys(FORMATS)) {
  test(`${dtype}: every finite value, tie and overflow boundary rounds to nearest-even, as PyTorch rounds it`, () => {
    const { inputs, expected } = boundaryInputs(dtype);
    const { count, sha256_of_bits: torchHash } = fixture.rounding[dtype];
    assert.equal(inputs.length, count);
    const got = roundToHalf(dtype, new Float32Array(inputs.buffer));
    for (let i = 0; i < got.length; i++) {
      if (got[i] !== expected[i]) assert.fail(`${dtype}: float32 bits 0x${inputs[i].toString(16)} → 0x${got[i].toString(16)}, expected 0x${expected[i].toString(16)}`);
    }
    assert.equal(createHash('sha256').update(new Uint8Array(got.buffer)).digest('hex'), torchHash);
  });

  test(`${dtype}: the contract reference's arithmetic rounding (storage.mjs) agrees on every boundary input`, () => {
    const { inputs, expected } = boundaryInputs(dtype);
    const values = new Float32Array(inputs.buffer);
    const got = stored(values, dtype, values.length);
    const want = widenHalf(dtype, expected);
    for (let i = 0; i < got.length; i++) {
      if (!Object.is(got[i], want[i])) assert.fail(`${dtype}: ${values[i]} → ${got[i]}, expected ${want[i]}`);
    }
  });

  test(`${dtype}: NaN stays NaN (sign and top payload bits kept, quieted); ±inf stays ±inf`, () => {
    const { round, infinity, quiet } = FORMATS[dtype];
    for (let h = infinity + 1; h < 2 * infinity && h <= 0x7fff; h++) {
      for (const sign of [0, 0x8000]) {
        const widened = widenHalf(dtype, new Uint16Array([sign | h]));
        assert.equal(roundToHalf(dtype, widened)[0], sign | h | quiet, `0x${(sign | h).toString(16)}`);
      }
    }
    assert.equal(round(0x7f800001), infinity | quiet, 'a signalling NaN whose payload is below the kept bits');
    assert.equal(round(0xffc00000), 0x8000 | infinity | quiet);
    assert.equal(round(bitsOf(Infinity)), infinity);
    assert.equal(round(bitsOf(-Infinity)), 0x8000 | infinity);
    assert.equal(round(bitsOf(3.4028234663852886e38)), infinity, 'float32 max');
  });

  test(`${dtype}: firstNonFinite tests the bits: every pattern is non-finite exactly when its widened value is`, () => {
    const all = Uint16Array.from({ length: 65536 }, (_, h) => h);
    const widened = widenHalf(dtype, all);
    let nonFinite = 0;
    for (let h = 0; h < all.length; h++) {
      const want = Number.isFinite(widened[h]) ? -1 : 2;
      if (want >= 0) nonFinite++;
      if (firstNonFinite(new Uint16Array([0x0001, 0x8000, h]), dtype) !== want) assert.fail(`0x${h.toString(16)}: expected ${want}`);
    }
    // ±inf and the NaNs: the sign times every mantissa of the all-ones exponent.
    assert.equal(nonFinite, 2 * (0x8000 - FORMATS[dtype].infinity));
    assert.equal(firstNonFinite(all.filter((h) => Number.isFinite(widened[h])), dtype), -1, 'every finite pattern at once');
  });

  test(`${dtype}: halfOverflow() is the least float32 magnitude the rounding takes to inf`, () => {
    const bound = halfOverflow(dtype);
    const { round, infinity } = FORMATS[dtype];
    assert.equal(round(bitsOf(bound)), infinity);
    assert.equal(round(bitsOf(-bound)), 0x8000 | infinity);
    assert.ok(round(bitsOf(bound) - 1) < infinity, 'the float32 below it stays finite');
  });
}

test('firstNonFinite of float32 values: the first NaN or ±inf, -1 for none', () => {
  assert.equal(firstNonFinite(new Float32Array([1, -0, 3.4028234663852886e38, -1e-45, NaN, Infinity])), 4);
  assert.equal(firstNonFinite(new Float32Array([0, -Infinity]), 'float32'), 1);
  assert.equal(firstNonFinite(new Float32Array([-3.4028234663852886e38, 2 ** -149])), -1);
  assert.equal(firstNonFinite(new Float32Array(0)), -1);
});

test('firstNonFinite of float32 values in long arrays (chunked sums), from a start: the plain loop\'s answer', () => {
  const plain = (data, start) => {
    for (let i = start; i < data.length; i++) if (!Number.isFinite(data[i])) return i;
    return -1;
  };
  let seed = 5;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  // Lengths about the chunk (256) and its multiples, tails of every size; large finite values whose
  // products with 0 are still 0, and -0.
  for (const n of [1, 255, 256, 257, 511, 512, 1000, 4099]) {
    for (const bad of [NaN, Infinity, -Infinity]) {
      for (let trial = 0; trial < 6; trial++) {
        const data = Float32Array.from({ length: n }, (_, i) => (i % 5 === 0 ? -0 : (next() - 0.5) * 3.4e38));
        const places = [Math.floor(next() * n), Math.floor(next() * n), n - 1].slice(0, 1 + (trial % 3));
        for (const at of places) data[at] = bad;
        for (const start of [0, Math.floor(next() * n), Math.min(...places), Math.min(...places) + 1]) {
          assert.equal(firstNonFinite(data, 'float32', start), plain(data, start), `n ${n}, ${bad} at ${places}, from ${start}`);
        }
      }
    }
  }
});

test('float16 by hand: 65504 and 65519.996 stay, 65520 is inf; the smallest subnormal and its halves', () => {
  const f16 = (value) => f32BitsToF16(bitsOf(value));
  assert.equal(f16(65504), 0x7bff);
  assert.equal(f16(f32Of(bitsOf(65520) - 1)), 0x7bff);
  assert.equal(f16(65520), 0x7c00);
  assert.equal(f16(-65520), 0xfc00);
  assert.equal(f16(2 ** -24), 0x0001);
  assert.equal(f16(2 ** -25), 0x0000, 'a tie between 0 and the smallest subnormal: to 0 (even)');
  assert.equal(f16(f32Of(bitsOf(2 ** -25) + 1)), 0x0001);
  assert.equal(f16(3 * 2 ** -25), 0x0002, 'a tie between subnormals 1 and 2: to 2');
  assert.equal(f16(-(2 ** -149)), 0x8000, 'the smallest float32 subnormal: -0');
  assert.equal(f16(2 ** -14 - 2 ** -25), 0x0400, 'the tie below the smallest normal rounds up into it');
  assert.equal(f16(1 + 2 ** -11), 0x3c00, 'a tie at 1: to even');
  assert.equal(f16(1 + 3 * 2 ** -11), 0x3c02);
});

test('bfloat16 by hand: the top half of the float32, rounded; float32 max overflows to inf', () => {
  const bf16 = (bits) => f32BitsToBf16(bits);
  assert.equal(bf16(0x3f808000), 0x3f80, 'tie: to even');
  assert.equal(bf16(0x3f818000), 0x3f82, 'tie: to even');
  assert.equal(bf16(0x3f808001), 0x3f81);
  assert.equal(bf16(0x7f7fffff), 0x7f80);
  assert.equal(bf16(0x00000001), 0x0000, 'float32 subnormals round within bfloat16 subnormals');
  assert.equal(bf16(0x80018000), 0x8002);
});

test('q8_0: scales and int8 values as NumPy computes them (ties to even, all-zero blocks, short last blocks, subnormals)', () => {
  const { rowLength, values, q, scales } = fixture.q8_0;
  const b64 = (text, Type) => { const bytes = Buffer.from(text, 'base64'); return new Type(bytes.buffer, bytes.byteOffset, bytes.length / Type.BYTES_PER_ELEMENT); };
  const x = b64(values, Float32Array);
  const got = quantizeQ8(x, rowLength);
  assert.deepEqual([...got.q], [...b64(q, Int8Array)]);
  assert.deepEqual([...new Uint32Array(got.scales.buffer)], [...new Uint32Array(b64(scales, Float32Array).slice().buffer)]);
  assert.equal(got.nonFinite, -1);
  const back = dequantizeQ8(got, rowLength);
  assert.deepEqual([...stored(x, 'int8', rowLength)], [...back], 'the contract reference\'s q8_0 (storage.mjs)');
  for (let i = 0; i < x.length; i++) {
    const d = got.scales[Math.floor(i / rowLength) * 2 + Math.floor((i % rowLength) / 32)];
    // A block whose max / 127 underflows float32 has scale 0, like an all-zero one.
    const bound = d > 0 ? d / 2 * (1 + 1e-6) : 127 * 2 ** -149;
    assert.ok(Math.abs(back[i] - x[i]) <= bound, `value ${i}: ${back[i]} vs ${x[i]} (scale ${d})`);
  }
});

test('q8_0: a NaN or ±inf makes its block\'s scale NaN (the block dequantises to NaN) and is reported', () => {
  const x = new Float32Array(70).map((_, i) => i - 35);
  x[40] = Infinity;
  x[69] = NaN;
  const { q, scales, nonFinite } = quantizeQ8(x, 70);
  assert.equal(nonFinite, 40);
  assert.deepEqual([...scales].map((s) => Number.isNaN(s)), [false, true, true]);
  const back = dequantizeQ8({ q, scales }, 70);
  assert.ok(back.subarray(32).every(Number.isNaN));
  assert.ok(back.subarray(0, 32).every(Number.isFinite));
  assert.equal(scales[0], Math.fround(35 / 127));
  assert.equal(quantizeQ8(new Float32Array(8), 8, 8).scales[0], 0, 'all-zero row: scale 0');
});
