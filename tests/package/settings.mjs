// Where the packed-package test finds the repository and its tools, which fixture cases the apps
// run, and how long each part may take.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '../..');
export const FIXTURES = ['mha_parity.json', 'decode_parity.json'].map((f) => join(REPO, 'tests/fixtures', f));
export const VITE = join(REPO, 'node_modules/vite/bin/vite.js');
// The first case is also used for the bad-call (ShapeError) check; all return attention weights.
// The decode cases run a KV cache (GQA + RoPE; a sliding window past its ring's wrap).
export const CASE_NAMES = ['cross_kdim_vdim', 'kpm_bool_attn_float', 'decode_rope_half', 'decode_window_ring_wraps'];
export const PERTURB = Number(process.env.WA_PKG_TEST_PERTURB || 0);
// The clean copy's prepack builds every WASM module (one to a few minutes on two cores).
export const BUILD_TIMEOUT_MS = 900_000;
export const TOTAL_TIMEOUT_MS = BUILD_TIMEOUT_MS + 180_000;
export const BROWSER_TIMEOUT_MS = 60_000;
