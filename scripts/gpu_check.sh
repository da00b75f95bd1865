#!/usr/bin/env bash
# The GPU check, for any machine with an NVIDIA GPU, PyTorch 2.x with CUDA and the CUDA toolkit:
# builds saccade against the LibTorch inside that PyTorch (in build-cuda/), runs the test suite,
# then on the GPU the smoke training (fp32, bf16, fp16), eval of its run, `bench decoder`, and
# with two or more GPUs two data-parallel ranks over NCCL. Everything it prints is also in
# build-cuda/gpu_check.log; it exits non-zero when any step failed.
#   scripts/gpu_check.sh                    # PyTorch of `python3`
#   PYTHON=/opt/venv/bin/python scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
mkdir -p build-cuda
exec > >(tee build-cuda/gpu_check.log) 2>&1

"$python" - <<'PY' || exit 1
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("gpu_check.sh: this PyTorch sees no GPU (torch.cuda.is_available() is False)")
if not torch.compiled_with_cxx11_abi():
    sys.exit("gpu_check.sh: this PyTorch's LibTorch uses the old C++ string ABI, which Debian's OpenCV and "
             "yaml-cpp cannot link with; use PyTorch >= 2.7 or the cxx11-ABI LibTorch from pytorch.org")
print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.device_count()} GPU(s): "
      f"{torch.cuda.get_device_name(0)}")
PY
prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
gpus=$("$python" -c 'import torch; print(torch.cuda.device_count())')
# A pip PyTorch keeps nccl.h in its nvidia-nccl package; without it Gloo carries the gradients.
nccl_include=$("$python" -c 'import importlib.util as u, os; s = u.find_spec("nvidia.nccl")
print(os.path.join(list(s.submodule_search_locations)[0], "include") if s else "")' 2>/dev/null || true)
cmake_flags=()
if [ -n "$nccl_include" ]; then cmake_flags+=("-DCMAKE_CXX_FLAGS=-isystem $nccl_include"); fi

scripts/setup.sh --build-only || exit 1
if [ ! -f build-cuda/CMakeCache.txt ]; then
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    "${cmake_flags[@]}" || exit 1
fi
cmake --build build-cuda -j"$(nproc)" || exit 1

failed=()
step() {  # step NAME COMMAND...: runs it, records a failure, carries on
  local name=$1
  shift
  echo "=== $name: $*"
  if ! "$@"; then
    failed+=("$name")
  fi
}
saccade=$PWD/build-cuda/src/cli/saccade
work=$(mktemp -d)
step tests bash -c "cd build-cuda && OMP_WAIT_POLICY=PASSIVE ctest --output-on-failure --timeout 600 -j4"
for precision in fp32 bf16 fp16; do
  step "smoke $precision" "$saccade" train experiment=smoke runtime.device=cuda runtime.precision=$precision \
    run.dir="$work/smoke_$precision"
done
step "eval on the GPU" "$saccade" eval --run "$work/smoke_fp32" runtime.device=cuda
step "bench decoder fp32" "$saccade" bench decoder runtime.device=cuda
step "bench decoder bf16" "$saccade" bench decoder runtime.device=cuda runtime.precision=bf16
if [ "$gpus" -ge 2 ]; then
  step "two ranks over NCCL" "$saccade" train --nproc 2 experiment=smoke runtime.device=cuda run.dir="$work/ranks"
  step "bench decoder, two ranks" "$saccade" bench decoder --nproc 2 runtime.device=cuda
fi
rm -rf "$work"
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu_check.sh: failed: ${failed[*]}"
  exit 1
fi
echo "gpu_check.sh: every step passed"
