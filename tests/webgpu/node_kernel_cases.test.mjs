// The kernel-level cases of tests/cases/kernel_cases.json (test mode) on the WebGPU backend in
// Node (Dawn; SwiftShader unless node_setup.mjs is pointed at a GPU), against the float64
// reference: linear, flash attention, decode rows, rotary and cache appends, each through the
// public API (tests/cases/public_api_runs.mjs says how a case becomes a module and its calls),
// each call checked to have run on the GPU, for every type set of the list (the WebGPU backend
// stores weights as float32, float16, bfloat16 or int8 and a cache as float32, float16 or int8;
// a type set with another type fails here, naming the case). A row that sees a case's NaN or Inf
// key is NaN on WASM but not promised on WebGPU (README), so only the elements whose reference is
// finite count here: the rows that cannot see such a key, which must stay finite and right
// (masked means absent).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { testCases } from '../cases/cases.mjs';
import { runOnPublicApi } from '../cases/public_api_runs.mjs';
import { adapterName, assertClose, gpu, paths, runs } from './node_setup.mjs';

const WEBGPU_TYPES = { weights: ['f32', 'f16', 'bf16', 'i8'], kv: ['f32', 'f16', 'i8'], io: ['f32'] };
const cases = testCases(['linear', 'flash', 'decode', 'rotary', 'cacheAppend'], WEBGPU_TYPES);

/** actual and expected { data, shape } at the elements whose expected value is finite only. */
function finiteReferenceOnly(actual, expected) {
  const keep = [...expected.data.keys()].filter((i) => Number.isFinite(expected.data[i]));
  const pick = (x) => ({ data: Float64Array.from(keep, (i) => x.data[i]), shape: [keep.length] });
  return [pick(actual), pick(expected)];
}

describe(`kernel-level cases on WebGPU (Dawn, ${adapterName})`, () => {
  for (const c of cases) {
    test(c.title, async () => {
      runs.length = 0;
      paths.length = 0;
      await runOnPublicApi(MultiHeadAttention, c, { backend: 'webgpu', gpu }, (actual, expected, what) => {
        assertClose(...finiteReferenceOnly(actual, expected), what);
      });
      assert.ok(runs.length > 0 && runs.every((where) => where === 'webgpu'), `every call ran on the GPU: ${runs.join(', ')}`);
      // A decode case's step (one row) takes the GPU's decode kernels, not the flash ones.
      if (c.op === 'decode') assert.equal(paths.at(-1), 'decode', `the step's attention path: ${paths.join(', ')}`);
    });
  }
});
