// The KV-cache append kernel of an int8 cache (kernels/cache_append.wgsl.js, cache_narrow.wgsl.js)
// run alone on rows a model's projections seldom give: per new row one workgroup finds each head's
// scale and writes the heads' words, K and V, so heads wider than the workgroup (d 300: several
// values and words per invocation) are checked beside narrow ones, and heads that are all zero,
// whose scale underflows, or that hold a NaN or an infinity (anywhere: first value, last value,
// every value). Each stored head against q8_0.js's rule with one block per head, the WASM core's
// cache rule (docs/attention-math/storage.md §11): a non-finite head stores scale NaN (0x7fc00000,
// the core's NAN) and q 0; and each row's flag of the NaN rule is 1 exactly where its K or V row
// holds a non-finite value. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  APPEND_PARAMS, Usage, cacheAppendGrid, cacheAppendShader, cacheHeadWords, packParams, quantizeQ8,
} from '../internals.mjs';
import { filled } from '../contract/random.mjs';
import { device } from './node_setup.mjs';

const G = 3;  // heads per row
const NAN_BITS = 0x7fc00000;

// Rows of G heads: [what, values of head g for width d].
const scaled = (d, seed, s) => filled(d, seed, s);
const ROWS = [
  ['finite, three magnitudes', (g, d) => scaled(d, 10 + g, [1, 1e-3, 1e3][g])],
  ['all zero; scale underflows to 0; finite with a -0', (g, d) => [new Float32Array(d), new Float32Array(d).fill(1e-44), Float32Array.from(scaled(d, 20, 1), (x, i) => (i === 0 ? -0 : x))][g]],
  ['NaN last; +Infinity first; -Infinity in the middle', (g, d) => {
    const x = scaled(d, 30 + g, 1);
    x[[d - 1, 0, d >> 1][g]] = [NaN, Infinity, -Infinity][g];
    return x;
  }],
  ['NaN throughout; finite; Infinity throughout', (g, d) => (g === 1 ? scaled(d, 40, 2) : new Float32Array(d).fill(g === 0 ? NaN : Infinity))],
];

// V's row i is ROWS' row i + 1 (mod 4): a finite pair, a row non-finite in V alone, in both, in K alone.
const V_ROW = (i) => (i + 1) % ROWS.length;
const rowsOf = (d, order) => {
  const src = new Float32Array(ROWS.length * G * d);
  ROWS.forEach((_, i) => { for (let g = 0; g < G; g++) src.set(ROWS[order(i)][1](g, d), (i * G + g) * d); });
  return src;
};

/**
 * Runs the kernel on ROWS (K) and their V rows for heads of d values; returns the K and V caches'
 * words, each row's flag and the source rows.
 */
async function appended(d) {
  const count = ROWS.length, headWords = cacheHeadWords('int8', d);
  const srcK = rowsOf(d, (i) => i), srcV = rowsOf(d, V_ROW);
  const rowsBytes = count * G * headWords * 4;
  const make = (size, usage) => device.createBuffer({ size, usage });
  const [inK, inV] = [srcK, srcV].map((src) => make(src.byteLength, Usage.STORAGE | Usage.COPY_DST));
  const cacheK = make(rowsBytes + count * 4, Usage.STORAGE | Usage.COPY_SRC);  // the flags after the rows
  const cacheV = make(rowsBytes, Usage.STORAGE | Usage.COPY_SRC);
  const uniforms = make(APPEND_PARAMS.length * 4, Usage.UNIFORM | Usage.COPY_DST);
  const readback = make(cacheK.size + cacheV.size, Usage.MAP_READ | Usage.COPY_DST);
  const rowTable = make(4, Usage.STORAGE);  // unread: every row at one length (perRow 0)
  const buffers = [inK, inV, cacheK, cacheV, uniforms, readback, rowTable];
  try {
    device.queue.writeBuffer(inK, 0, srcK);
    device.queue.writeBuffer(inV, 0, srcV);
    device.queue.writeBuffer(uniforms, 0, packParams(APPEND_PARAMS, {
      count, kOff: 0, kStride: G * d, vOff: 0, vStride: G * d, capacity: count, first: 0, flagsOff: rowsBytes / 4,
    }));
    const code = cacheAppendShader({ dtype: 'int8', dk: d, dv: d, heads: G });
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    const bindGroup = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [uniforms, inK, inV, cacheK, cacheV, rowTable].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(...cacheAppendGrid({ count, B: 1 }));
    pass.end();
    encoder.copyBufferToBuffer(cacheK, 0, readback, 0, cacheK.size);
    encoder.copyBufferToBuffer(cacheV, 0, readback, cacheK.size, cacheV.size);
    device.queue.submit([encoder.finish()]);
    await readback.mapAsync(1);
    const all = readback.getMappedRange().slice(0);
    return {
      K: { words: new Uint32Array(all, 0, rowsBytes / 4), src: srcK },
      V: { words: new Uint32Array(all, cacheK.size, rowsBytes / 4), src: srcV },
      flags: [...new Uint32Array(all, rowsBytes, count)],
      headWords,
    };
  } finally {
    for (const buffer of buffers) buffer.destroy();
  }
}

const f32Bits = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];

// One stored head against the WASM core's rule (place: where it is, for the messages).
function checkHead({ words, src }, at, from, d, headWords, place) {
  const values = d + (4 - (d % 4)) % 4;  // a head's value slots: whole words, the last zero-padded
  const q = new Int8Array(words.buffer, words.byteOffset + at * 4, values);
  const scaleBits = words[at + headWords - 1];
  const want = quantizeQ8(src.subarray(from, from + d), d, d);
  assert.ok(q.subarray(d).every((x) => x === 0), `${place}: padding`);
  if (Number.isNaN(want.scales[0])) {
    assert.equal(scaleBits, NAN_BITS, `${place}: scale bits`);
    assert.ok(q.every((x) => x === 0), `${place}: q of a non-finite head`);
    return;
  }
  // WGSL's division is within 2.5 ulp (docs/webgpu.md): the scale within 3 ulp, and a
  // quotient that close to a tie one step away, never more.
  assert.ok(Math.abs(scaleBits - f32Bits(want.scales[0])) <= 3, `${place}: scale ${new Float32Array(Uint32Array.of(scaleBits).buffer)[0]} vs ${want.scales[0]}`);
  for (let j = 0; j < d; j++) assert.ok(Math.abs(q[j] - want.q[j]) <= 1, `${place}: q[${j}] ${q[j]} vs ${want.q[j]}`);
  if (want.scales[0] === 0) assert.ok(scaleBits === 0 && q.every((x) => x === 0), `${place}: an all-zero head`);
}

const nonFiniteRow = (src, i, d) => !src.subarray(i * G * d, (i + 1) * G * d).every(Number.isFinite);

for (const d of [1, 5, 8, 70, 300]) {
  test(`int8 append, heads of ${d}: one scale per head as the WASM core's rule stores it, NaN and infinities included; each row's flag`, async () => {
    const { K, V, flags, headWords } = await appended(d);
    for (const [name, side, order] of [['K', K, (i) => i], ['V', V, V_ROW]]) {
      for (let i = 0; i < ROWS.length; i++) {
        for (let g = 0; g < G; g++) checkHead(side, (i * G + g) * headWords, (i * G + g) * d, d, headWords, `${name} row ${i} (${ROWS[order(i)][0]}), head ${g}`);
      }
    }
    assert.deepEqual(flags, ROWS.map((_, i) => Number(nonFiniteRow(K.src, i, d) || nonFiniteRow(V.src, i, d))));
    assert.deepEqual(flags, [0, 1, 1, 1], 'a finite row, one non-finite in V alone, in both, in K alone');
  });
}
