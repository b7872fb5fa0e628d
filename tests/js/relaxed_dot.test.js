// The relaxed modules' int4 × int8-activations kernel (cpp/src/kernels/q4q8_linear_relaxed.cpp:
// i16x8.relaxed_dot_i8x16_i7x16_s) gives the SIMD128 module's bits, in each of V8's tiers: the
// relaxed module in a Node process per tier (baseline only, optimising only, the default: baseline
// first) against the SIMD128 module, over tests/contract/act8_bits.mjs's calls; and the instruction
// itself in each tier (tests/contract/relaxed_dot.mjs). tests/browser/relaxed_dot.test.mjs does
// the same in Chromium and Firefox.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

const RELAXED_FLAG = '--experimental-wasm-relaxed-simd';  // Node 20 runs relaxed SIMD only behind it (Node 22: by default)
const TIERS = { baseline: ['--liftoff-only'], optimising: ['--no-liftoff'], default: [] };
const url = (path) => new URL(path, import.meta.url).href;

/** Runs `script` (an ES module body) in a fresh Node with `flags` and WEBATTENTION_WASM=wasm; its stdout as JSON. */
function inNode(script, flags, wasm) {
  const out = execFileSync(process.execPath, [RELAXED_FLAG, ...flags, '--input-type=module', '-e', script], {
    encoding: 'utf8', env: { ...process.env, WEBATTENTION_WASM: wasm ?? '' }, timeout: 120_000,
  });
  return JSON.parse(out);
}

const BITS = `
  const api = await import(${JSON.stringify(url('../../web/src/node.js'))});
  const { act8Bits } = await import(${JSON.stringify(url('../contract/act8_bits.mjs'))});
  const bits = await act8Bits(api);
  console.log(JSON.stringify({ module: (await api.capabilities()).wasmModule, bits }));`;

test('i16x8.relaxed_dot_i8x16_i7x16_s gives the exact sums in each of V8\'s tiers, on the first call and after 5000', () => {
  for (const [tier, flags] of Object.entries(TIERS)) {
    const r = inNode(`const m = await import(${JSON.stringify(url('../contract/relaxed_dot.mjs'))});
      console.log(JSON.stringify([m.relaxedDotResults(1), m.relaxedDotResults(5000)]));`, flags);
    assert.deepEqual(r.map((x) => x.dot), [true, true], tier);
  }
});

test('int8 activations with int4 and int8 weights: the relaxed module gives the SIMD128 module\'s bits, in each of V8\'s tiers', () => {
  const simd = inNode(BITS, [], 'simd');
  assert.equal(simd.module, 'simd');
  assert.equal(Object.keys(simd.bits).length, 18);
  for (const [tier, flags] of Object.entries(TIERS)) {
    const relaxed = inNode(BITS, flags, 'relaxed');
    assert.equal(relaxed.module, 'relaxed');
    for (const [name, bits] of Object.entries(simd.bits)) assert.deepEqual(relaxed.bits[name], bits, `${tier} tier: ${name}`);
  }
});
