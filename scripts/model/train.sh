#!/usr/bin/env bash
# Retrains the char-level GPT and regenerates its golden data (web/model/). Run as root on Debian 12:
# installs what it needs first (a no-op when present). About 10 minutes on one core.
# CI never runs this: the weights and the golden data are committed.
set -euo pipefail
cd "$(dirname "$0")"

# libopenblas0-pthread: without it Debian's torch runs on the reference BLAS (about 10x slower).
packages=(python3-torch libopenblas0-pthread bible-kjv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "train.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# One thread everywhere (torch's OpenMP and OpenBLAS's own pool): reproducible float32 sums.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
/usr/bin/python3 train_char_gpt.py "$@"
/usr/bin/python3 make_golden.py
