# Sourced from the repository root by scripts/gpu_check.sh and gpu_tables.sh, after they set
# $out: part() below, and the adapter's set-up. On a GPU machine
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

# part NAME SECONDS COMMAND...: runs the command bounded by SECONDS, its output into $out/NAME.txt,
# then prints a line with NAME, its time and exit status, and that output.
part() {
  local name=$1 seconds=$2 start rc
  shift 2
  start=$(date +%s)
  timeout "$seconds" "$@" > "$out/$name.txt" 2>&1
  rc=$?
  echo "== $name ($(( $(date +%s) - start )) s, exit $rc): $*"
  cat "$out/$name.txt"
}
