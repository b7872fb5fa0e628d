# Sourced from the repository root by scripts/gpu_check.sh and gpu_tables.sh. On a GPU machine
# (nvidia-smi answers, and gpu_carry/ is there: scripts/gpu_carry.sh) it sources
# gpu_carry/remote_env.sh (node, Dawn, the Vulkan loader and the GPU's ICD) and sets
# gpu_mode=gpu; anywhere else it points VK_ICD_FILENAMES at SwiftShader's driver unless it is set
# (tests/webgpu/adapter.mjs's SWIFTSHADER_ICD) and sets gpu_mode=swiftshader.
if [ -f gpu_carry/remote_env.sh ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  # shellcheck disable=SC1091
  source gpu_carry/remote_env.sh
  gpu_mode=gpu
else
  if [ -z "${VK_ICD_FILENAMES:-}" ]; then
    VK_ICD_FILENAMES=$(node -e "import('./tests/webgpu/adapter.mjs').then((m) => console.log(m.SWIFTSHADER_ICD))")
    export VK_ICD_FILENAMES
  fi
  gpu_mode=swiftshader
fi
