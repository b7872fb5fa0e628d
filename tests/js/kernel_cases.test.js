// The kernel-level cases of tests/cases/kernel_cases.json (test mode) through the public API on
// the WASM backend, against the float64 reference, as the WebGPU suite runs them
// (tests/webgpu/node_kernel_cases.test.mjs): on whichever module and thread count the test run
// picks (WEBATTENTION_WASM, WEBATTENTION_THREADS), so the list reaches the worker pool too. The
// kernels themselves, family by family, are checked by the GoogleTest suite
// (tests/cpp/kernel_cases_test.cpp).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { testCases } from '../cases/cases.mjs';
import { runOnPublicApi } from '../cases/public_api_runs.mjs';
import { compare } from '../contract/contract.mjs';

const WASM_TYPES = { weights: ['f32', 'f16', 'bf16', 'i8', 'q4'], kv: ['f32', 'f16', 'i8'], io: ['f32'], act: ['f32', 'i8'] };

for (const c of testCases(['linear', 'flash', 'decode', 'rotary', 'cacheAppend'], WASM_TYPES)) {
  test(`wasm: ${c.title}`, () => runOnPublicApi(MultiHeadAttention, c, { backend: 'wasm' }, (actual, expected, what) => {
    const { ok, detail } = compare(actual, expected);
    assert.ok(ok, `${what}: ${detail}`);
  }));
}
