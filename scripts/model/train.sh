#!/usr/bin/env bash
# Retrains the char-level GPT and regenerates its golden data. Run as root on Debian 12: installs
# what it needs first (a no-op when present). About 10 minutes on one core.
# CI never runs this: the weights and the golden data are committed.
#   bash scripts/model/train.sh                   # writes web/model/
#   bash scripts/model/train.sh OUT_DIR [STEPS]   # elsewhere, e.g. a short smoke run
set -euo pipefail
out_dir=$(realpath -m "${1:-$(dirname "$0")/../../web/model}")
steps=${2:-}
cd "$(dirname "$0")"

# libopenblas0-pthread: without it Debian's torch runs on the reference BLAS (about 10x slower).
packages=(python3-torch libopenblas0-pthread bible-kjv)
source ../apt_install_missing.sh
apt_install_missing train.sh "${packages[@]}"

# One thread everywhere (torch's OpenMP and OpenBLAS's own pool): reproducible float32 sums.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
/usr/bin/python3 train_char_gpt.py --out-dir "$out_dir" ${steps:+--steps "$steps"}
/usr/bin/python3 make_golden.py --model-dir "$out_dir"
