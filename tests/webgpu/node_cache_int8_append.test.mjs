// The int8 KV-cache append kernel (kernels/cache_narrow.wgsl.js) run alone on rows a model's
// projections seldom give: per (row, head) one workgroup finds the head's scale once and writes
// its words, so heads wider than the workgroup (d 70: several values per invocation; d 300: several
// words too) are checked beside narrow ones, and heads that are all zero, whose scale underflows,
// or that hold a NaN or an infinity (anywhere: first value, last value, every value). Each stored
// head against q8_0.js's rule with one block per head, the WASM core's cache rule
// (docs/attention-math/storage.md §11): a non-finite head stores scale NaN (0x7fc00000, the core's NAN)
// and q 0. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  APPEND_PARAMS, Usage, cacheAppendGrid, cacheAppendNarrowShader, cacheHeadWords, packParams, quantizeQ8,
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

/** Runs the kernel on ROWS for heads of d values; returns the cache's words and the source rows. */
async function appended(d) {
  const count = ROWS.length, headWords = cacheHeadWords('int8', d);
  const src = new Float32Array(count * G * d);
  ROWS.forEach(([, head], i) => { for (let g = 0; g < G; g++) src.set(head(g, d), (i * G + g) * d); });
  const make = (size, usage) => device.createBuffer({ size, usage });
  const input = make(src.byteLength, Usage.STORAGE | Usage.COPY_DST);
  const cache = make(count * G * headWords * 4, Usage.STORAGE | Usage.COPY_SRC);
  const uniforms = make(APPEND_PARAMS.length * 4, Usage.UNIFORM | Usage.COPY_DST);
  const readback = make(cache.size, Usage.MAP_READ | Usage.COPY_DST);
  const rowTable = make(4, Usage.STORAGE);  // unread: every row at one length (perRow 0)
  try {
    device.queue.writeBuffer(input, 0, src);
    device.queue.writeBuffer(uniforms, 0, packParams(APPEND_PARAMS, { count, heads: G, d, srcOff: 0, srcStride: G * d, capacity: count, first: 0 }));
    const pipeline = device.createComputePipeline({
      layout: 'auto', compute: { module: device.createShaderModule({ code: cacheAppendNarrowShader('int8') }), entryPoint: 'main' },
    });
    const bindGroup = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [uniforms, input, cache, rowTable].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(...cacheAppendGrid('int8', { heads: G, d, count, B: 1 }));
    pass.end();
    encoder.copyBufferToBuffer(cache, 0, readback, 0, cache.size);
    device.queue.submit([encoder.finish()]);
    await readback.mapAsync(1);
    return { words: new Uint32Array(readback.getMappedRange().slice(0)), src, headWords };
  } finally {
    for (const buffer of [input, cache, uniforms, readback, rowTable]) buffer.destroy();
  }
}

const f32Bits = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];

for (const d of [1, 5, 8, 70, 300]) {
  test(`int8 append, heads of ${d}: one scale per head as the WASM core's rule stores it, NaN and infinities included`, async () => {
    const { words, src, headWords } = await appended(d);
    const values = d + (4 - (d % 4)) % 4;  // a head's value slots: whole words, the last zero-padded
    for (const [i, [what]] of ROWS.entries()) {
      for (let g = 0; g < G; g++) {
        const at = (i * G + g) * headWords;
        const place = `row ${i} (${what}), head ${g}`;
        const q = new Int8Array(words.buffer, at * 4, values);
        const scaleBits = words[at + headWords - 1];
        const want = quantizeQ8(src.subarray((i * G + g) * d, (i * G + g + 1) * d), d, d);
        assert.ok(q.subarray(d).every((x) => x === 0), `${place}: padding`);
        if (Number.isNaN(want.scales[0])) {
          assert.equal(scaleBits, NAN_BITS, `${place}: scale bits`);
          assert.ok(q.every((x) => x === 0), `${place}: q of a non-finite head`);
          continue;
        }
        // WGSL's division is within 2.5 ulp (docs/webgpu.md): the scale within 3 ulp, and a
        // quotient that close to a tie one step away, never more.
        assert.ok(Math.abs(scaleBits - f32Bits(want.scales[0])) <= 3, `${place}: scale ${new Float32Array(Uint32Array.of(scaleBits).buffer)[0]} vs ${want.scales[0]}`);
        for (let j = 0; j < d; j++) assert.ok(Math.abs(q[j] - want.q[j]) <= 1, `${place}: q[${j}] ${q[j]} vs ${want.q[j]}`);
        if (want.scales[0] === 0) assert.ok(scaleBits === 0 && q.every((x) => x === 0), `${place}: an all-zero head`);
      }
    }
  });
}
