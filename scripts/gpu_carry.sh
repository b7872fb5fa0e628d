#!/usr/bin/env bash
# Assembles gpu_carry/ (ignored by git): what a GPU machine without Node needs to run
# scripts/gpu_check.sh and the benches in bench/gpu/ on this checkout, for a session's device tool
# to carry beside web/dist:
#   node.xz          this machine's node binary (only libc, libstdc++ and libm needed), xz'd;
#   webgpu.tar.xz    node_modules/webgpu (Dawn for Node) with its linux-x64 build only;
#   lib/             libvulkan.so.1, the Vulkan loader Dawn opens;
#   nvidia_icd.json  a Vulkan ICD naming libEGL_nvidia.so.0: the driver's own nvidia_icd.json
#                    names libGLX_nvidia.so.0, with which the loader finds no adapter there;
#   remote_env.sh    sourced there (scripts/gpu_check.sh does it where nvidia-smi answers):
#                    unpacks node and webgpu once, puts node on PATH, the loader on
#                    LD_LIBRARY_PATH and VK_ICD_FILENAMES on that ICD.
#
#   bash scripts/gpu_carry.sh            (about 30 MB; needs npm ci's node_modules and xz)
#   then on the device, carrying gpu_carry and web/dist: bash scripts/gpu_check.sh, or
#   source gpu_carry/remote_env.sh && node bench/gpu/gpu.mjs (python3 bench/gpu/torch_mha.py beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=gpu_carry
[ -f node_modules/webgpu/dist/linux-x64/dawn.node ] || { echo "gpu_carry: node_modules/webgpu is missing (npm ci)" >&2; exit 2; }
loader=$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ { print $NF; exit }')
[ -n "$loader" ] || { echo "gpu_carry: no libvulkan.so.1 here (apt-get install libvulkan1)" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/lib"
xz -T0 -6 -c "$(command -v node)" > "$out/node.xz"
tar -C node_modules -cJf "$out/webgpu.tar.xz" --exclude='webgpu/dist/darwin-*' --exclude='webgpu/dist/win32-*' \
  --exclude='webgpu/dist/linux-arm64' webgpu
cp -L "$loader" "$out/lib/libvulkan.so.1"
printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.239"}}\n' > "$out/nvidia_icd.json"
cat > "$out/remote_env.sh" <<'EOF'
# Sourced from the repository root on a GPU machine (written by scripts/gpu_carry.sh).
carry="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -x "$carry/bin/node" ]; then
  mkdir -p "$carry/bin"
  if command -v xz >/dev/null 2>&1; then xz -dc "$carry/node.xz" > "$carry/bin/node"
  else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$carry/node.xz" "$carry/bin/node"; fi
  chmod +x "$carry/bin/node"
fi
if [ ! -f node_modules/webgpu/dist/linux-x64/dawn.node ]; then
  mkdir -p node_modules
  if command -v xz >/dev/null 2>&1; then tar -C node_modules -xJf "$carry/webgpu.tar.xz"
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$carry/webgpu.tar.xz" node_modules; fi
fi
export PATH="$carry/bin:$PATH"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VK_ICD_FILENAMES="$carry/nvidia_icd.json"
EOF
du -sh "$out"
