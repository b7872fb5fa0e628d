#!/usr/bin/env bash
# The WebGPU checks on a real GPU, in about 1 minute on an H100, from the repository root:
#   (a) every Node WebGPU test (node --test on tests/webgpu/node_*.test.mjs, on the adapter
#       VK_ICD_FILENAMES names: node_setup.mjs; 426 tests in 34 s on an H100);
#   (b) decode steps per storage dtype (f32, f16, int8) at (768, 12, 12) and (2048, 32, 8) with
#       n = 2048 and 8192 cached positions, and one prefill per weightsDtype
#       (node bench/gpu/gpu.mjs --decode), as a small table;
#   (c) the host's share of a forward() (bench/gpu/gpu_host_side.mjs: ms in forward() before it
#       returns, and the whole call) and cross-attention steps on a GPU-stored encoded cache beside
#       a WASM one (bench/gpu/gpu_cross_attention.mjs);
#   (d) scaledDotProductAttention() on the GPU, host to host and on the device, beside WASM
#       (bench/gpu/gpu_sdpa.mjs; PyTorch's: bench/gpu/torch_sdpa.py, run beside it by hand);
#   (e) the trained char-level GPT generating with its attention on WASM, on WebGPU a layer at a
#       time, and with the whole model on WebGPU (bench/gpu/gpu_char_gpt.mjs).
#
#   bash scripts/gpu_check.sh
#
# On a machine with an NVIDIA GPU and gpu_carry/ (node, Dawn for the npm `webgpu` package and
# libvulkan, not in git) it sources gpu_carry/remote_env.sh first, which puts that node on PATH
# and points VK_ICD_FILENAMES at the GPU's Vulkan driver. Anywhere else it runs the same on
# SwiftShader (tests/webgpu/adapter.mjs's SWIFTSHADER_ICD), the bench with --quick shapes: a
# check that the script works, not a measurement. Needs web/dist (bash scripts/build.sh): the
# tests compare with the WASM backend. Output: $OUT (or build/gpu_check/): tests.txt, bench.txt,
# host_side.txt, cross_attention.txt, sdpa.txt, char_gpt.txt, summary.txt. GPU_CHECK_TESTS='node_cache node_storage' runs those test files only. (The
# browser test needs Chromium, which a GPU machine may lack.)
set -u
cd "$(dirname "$0")/.."
out="${OUT:-build/gpu_check}"
mkdir -p "$out"

# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh
mode=$gpu_mode
quick=$([ "$mode" = gpu ] || echo --quick)
[ -f web/dist/webattention_core.wasm ] || { echo "gpu_check: web/dist is missing (bash scripts/build.sh)" | tee "$out/summary.txt"; exit 2; }

tests=${GPU_CHECK_TESTS:-$(cd tests/webgpu && ls node_*.test.mjs | sed 's/\.test\.mjs$//')}
files=()
for t in $tests; do files+=("tests/webgpu/$t.test.mjs"); done

{
  echo "gpu_check: $mode, node $(node --version), VK_ICD_FILENAMES=$VK_ICD_FILENAMES, $(git rev-parse --short HEAD 2>/dev/null)"
  start=$(date +%s)
  # (a) Each file in its own process (node --test), four at a time; bounded so that (b) runs.
  timeout 400 node --test --test-concurrency=4 "${files[@]}" > "$out/tests.txt" 2>&1
  rc_tests=$?
  echo "tests ($(( $(date +%s) - start )) s, exit $rc_tests): $(grep -E '^# (tests|pass|fail|cancelled) ' "$out/tests.txt" | tr '\n' ' ')"
  grep -E '^ *not ok' "$out/tests.txt" | head -20
  # (b) The decode table.
  # shellcheck disable=SC2086  # the options are words
  part bench 150 node bench/gpu/gpu.mjs --decode $quick
  # (c) The host's share and cross-attention steps (SwiftShader: small shapes, a check only).
  host_shapes=$([ "$mode" = gpu ] && echo "--shapes 1024/768/12,2048/768/12" || echo "--cross --shapes 4096/64/1 --rounds 3")
  # shellcheck disable=SC2086
  part host_side 120 node bench/gpu/gpu_host_side.mjs $host_shapes
  # shellcheck disable=SC2086
  part cross_attention 120 node bench/gpu/gpu_cross_attention.mjs $quick --steps-ms 2000
  # (d) SDPA on the GPU.
  # shellcheck disable=SC2086
  part sdpa 120 node bench/gpu/gpu_sdpa.mjs $quick
  # (e) The trained char-level GPT on each path, the whole model on the GPU among them.
  char_args=$([ "$mode" = gpu ] && echo "--runs 3" || echo "--tokens 8 --runs 1")
  # shellcheck disable=SC2086
  part char_gpt 60 node bench/gpu/gpu_char_gpt.mjs $char_args
} 2>&1 | tee "$out/summary.txt"
grep -q 'tests (.*exit 0)' "$out/summary.txt" && grep -q '== bench (.*exit 0)' "$out/summary.txt"
