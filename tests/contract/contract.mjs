// The test contract (in the style of ggml's test-backend-ops): what every environment checks,
// written once. Environment-free (no node:*, no Buffer, no DOM; atob only), so the same files run
// in Node, in Chromium pages and, copied, in the packed-package apps. Each environment is a short
// driver: it loads the fixture JSON its own way, picks the API (entry, module, threads, backend)
// and runs every case through runCase():
//   tests/js/parity.test.js         Node, per WASM module (WEBATTENTION_WASM) and on the pool
//                                   (WEBATTENTION_THREADS=2)
//   tests/browser/parity.html       Chromium, per WASM module
//   tests/package/app/report.mjs    the packed package in a Node app and a Vite app
//   tests/webgpu/node_*.test.mjs    WebGPU in Node (npm webgpu / Dawn)
//   tests/webgpu/page.mjs           WebGPU in Chromium
// A new feature adds its cases to tests/fixtures/make_fixtures.py (and, for a new kind, a branch
// in runCall()); every environment then runs them.
export { decodeCase, decodeFixtures, decodeTensor } from './decode.mjs';
export { ATOL, RTOL, checkResult, compare, sameBits } from './compare.mjs';
export { runCall, runCase } from './run_case.mjs';
export { filled, randomTensor, rng, seededStateDict } from './random.mjs';
export { randomMhaCase } from './random_cases.mjs';
export { randomDecodeCase } from './random_decode_cases.mjs';
export { mhaReference } from './reference.mjs';
