#!/usr/bin/env bash
# The tables issue 39 asks of a GPU, beside PyTorch on the same card, in one run of at most 9.5
# minutes, under the device tool's 10 (run scripts/gpu_check.sh first, in a run of its own):
#   gpu.txt          bench/gpu/gpu.mjs: every kernel variant alone, then forward() host to host
#                    with the defaults, the fastest variants and the selection (create() and
#                    first-call ms), linear at 4096³ in float32 and with int8 activations
#                    (the int8-dot speed-up);
#   stack.txt        bench/gpu/gpu_decode_stack.mjs --markdown: a decode step through 24 layers
#                    (E 2048, GQA 32/8, cache 512) per layer, batched (into out) and replayed, float32 and int4;
#   torch_mha.txt    bench/gpu/torch_mha.py: nn.MultiheadAttention at gpu.mjs's shapes (host to
#                    host and on the device) and the same 24-layer decode step in eager PyTorch;
#   torch_sdpa.txt   bench/gpu/torch_sdpa.py, for bench/gpu/gpu_sdpa.mjs's rows (gpu_check.sh).
#
#   bash scripts/gpu_tables.sh
#
# On a GPU machine it sources gpu_carry/remote_env.sh as scripts/gpu_check.sh does (bash
# scripts/gpu_carry.sh makes it); elsewhere it runs the same on SwiftShader with --quick shapes
# and PyTorch on the CPU (--quick --device cpu) where python3 has torch: a check that the script
# runs, not a measurement. Output: $OUT (or build/gpu_tables/), and summary.txt with every file.
set -u
cd "$(dirname "$0")/.."
out="${OUT:-build/gpu_tables}"
mkdir -p "$out"

# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh
mode=$gpu_mode quick= torch_args=
[ "$mode" = gpu ] || { quick=--quick; torch_args="--quick --device cpu"; }
# gpu.mjs --quick takes minutes on SwiftShader: --smoke there.
gpu_size=$([ "$mode" = gpu ] || echo --smoke)
# The first python with torch: PYTHON, python3, or Debian's own (python3-torch; a pyenv python3 lacks it).
python=
for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
  if "$candidate" -c 'import torch' 2>/dev/null; then python=$candidate; break; fi
done
[ -f web/dist/webattention_core.wasm ] || { echo "gpu_tables: web/dist is missing (bash scripts/build.sh)" | tee "$out/summary.txt"; exit 2; }

{
  echo "gpu_tables: $mode, node $(node --version), VK_ICD_FILENAMES=$VK_ICD_FILENAMES, $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  # shellcheck disable=SC2086  # the options are words
  part gpu 300 node bench/gpu/gpu.mjs $gpu_size
  # shellcheck disable=SC2086
  # The garbage collected in a pause before each step: its host record times free of the pauses.
  part stack 120 node --expose-gc bench/gpu/gpu_decode_stack.mjs $quick --steps-ms 3000 --idle-ms 20 --markdown
  if [ -n "$python" ]; then
    # shellcheck disable=SC2086
    part torch_mha 100 "$python" bench/gpu/torch_mha.py $torch_args
    [ "$mode" = gpu ] && part torch_sdpa 50 "$python" bench/gpu/torch_sdpa.py
  else
    echo "== torch: no python here has torch (PYTHON=...)"
  fi
} 2>&1 | tee "$out/summary.txt"
grep -q '== gpu (.*exit 0)' "$out/summary.txt" && grep -q '== stack (.*exit 0)' "$out/summary.txt"
