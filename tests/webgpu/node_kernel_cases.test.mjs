// The kernel-level cases of tests/cases/kernel_cases.json (test mode) on the WebGPU backend in
// Node (Dawn; SwiftShader unless node_setup.mjs is pointed at a GPU), against the float64
// reference: linear, flash attention, decode rows, rotary and cache appends, each through the
// public API (tests/cases/public_api_runs.mjs says how a case becomes a module and its calls),
// each call checked to have run on the GPU, for every type set of the list (the WebGPU backend
// stores weights as float32, float16, bfloat16, int8 or int4 and a cache as float32, float16 or int8,
// and takes int8 activations with int8 and int4 weights; a type set with another type fails here,
// naming the case). A call whose rows see a case's NaN
// or Inf key runs on the CPU (the NaN rule: README, web/src/finite_inputs.js), where its whole
// reference must hold, NaN rows included; a call that ran on the GPU must have a finite reference
// (unless it runs on a GPU cache, which cannot move), and its rows that cannot see such a key must
// stay finite and right (masked means absent).
//
// On SwiftShader, a covering subset (node_setup.mjs's onGpuOrCovering): every case once, and every
// op with every type set; a GPU (or WEBATTENTION_GPU_TESTS=all) runs every case with every set.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { kernelCases, testCases } from '../cases/cases.mjs';
import { publicApiRun, runOnPublicApi } from '../cases/public_api_runs.mjs';
import { adapterName, assertClose, gpu, onGpuOrCovering, paths, runs } from './node_setup.mjs';

const WEBGPU_TYPES = { weights: ['f32', 'f16', 'bf16', 'i8', 'q4'], kv: ['f32', 'f16', 'i8'], io: ['f32'], act: ['f32', 'i8'] };
const typeSet = (c) => JSON.stringify(c.types);
const cases = onGpuOrCovering(testCases(['linear', 'flash', 'decode', 'rotary', 'cacheAppend'], WEBGPU_TYPES, kernelCases),
  (c) => [`${c.op} ${c.name}`, `${c.op} ${typeSet(c)}`]);

/**
 * actual and expected { data, shape, slack? } at the elements whose expected value is finite only
 * (int8 activations: the reference's slack at the same elements).
 */
function finiteReferenceOnly(actual, expected) {
  const keep = [...expected.data.keys()].filter((i) => Number.isFinite(expected.data[i]));
  const pick = (x) => ({ data: Float64Array.from(keep, (i) => x.data[i]), shape: [keep.length] });
  return [pick(actual), { ...pick(expected), ...(expected.slack ? { slack: Float64Array.from(keep, (i) => expected.slack[i]) } : {}) }];
}

describe(`kernel-level cases on WebGPU (Dawn, ${adapterName})`, () => {
  for (const c of cases) kernelCaseTest(c);
});

function kernelCaseTest(c) {
  test(c.title, async () => {
    runs.length = 0;
    paths.length = 0;
    const run = publicApiRun(c);
    await runOnPublicApi(MultiHeadAttention, c, { backend: 'webgpu', gpu }, (actual, expected, what) => {
      if (runs.at(-1) === 'wasm') {
        assertClose(actual, expected, what);
      } else {
        // A call on a cache stored on the GPU cannot move: there the rule is not promised.
        assert.ok(run.cache || expected.data.every(Number.isFinite), `${what}: rows that see a NaN or an infinity ran on the GPU`);
        assertClose(...finiteReferenceOnly(actual, expected), what);
      }
    });
    const nonFinite = [run.q, run.k, run.v].some((x) => !x.every(Number.isFinite));
    assert.ok(runs.length > 0 && runs.every((where) => where === 'webgpu' || nonFinite), `every call ran on the GPU: ${runs.join(', ')}`);
    // A decode case's step (one row) takes the GPU's decode kernels, not the flash ones.
    if (c.op === 'decode') assert.equal(paths.at(-1), 'decode', `the step's attention path: ${paths.join(', ')}`);
  });
}
