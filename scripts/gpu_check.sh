#!/usr/bin/env bash
# The GPU check, for any machine with an NVIDIA GPU, PyTorch 2.x with CUDA and the CUDA toolkit:
# builds saccade against the LibTorch inside that PyTorch (in build-cuda/), then on the GPU the
# smoke training (fp32, bf16, fp16), eval of its run, `bench decoder`, and with two or more GPUs
# two data-parallel ranks over NCCL; last, it builds and runs the test suite. Everything it prints
# is also in build-cuda/gpu_check.log; it exits non-zero when any step failed.
#   scripts/gpu_check.sh                    # PyTorch of `python3`
#   PYTHON=/opt/venv/bin/python scripts/gpu_check.sh
#   SACCADE_SKIP_SETUP=1 SACCADE_PREFIX_PATH="/opt/opencv;/opt/deps" \
#     SACCADE_CMAKE_ARGS="-DOPENBLAS_LIBRARY=/opt/deps/lib/libopenblas.so" scripts/gpu_check.sh
#       where OpenCV, yaml-cpp, GoogleTest and OpenBLAS come from elsewhere than Debian's packages:
#       SACCADE_PREFIX_PATH is searched before PyTorch's prefix (entries separated by ';'),
#       SACCADE_CMAKE_ARGS adds CMake arguments (separated by spaces, unquoted), compiler flags go
#       in CXXFLAGS. CMake is run on every call, so changed settings take effect.
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
# A pip PyTorch keeps nccl.h in one of its nvidia-* packages; without it Gloo carries the gradients.
nccl_include=$("$python" - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for root in nvidia.__path__:
    for header in sorted(glob.glob(os.path.join(root, "**", "include", "nccl.h"), recursive=True)):
        print(os.path.dirname(header))
        raise SystemExit
PY
)
cxx_flags=${CXXFLAGS:-}
if [ -n "$nccl_include" ]; then cxx_flags+=" -isystem $nccl_include"; fi
cmake_flags=(-DCMAKE_PREFIX_PATH="${SACCADE_PREFIX_PATH:+$SACCADE_PREFIX_PATH;}$prefix" -DCMAKE_CXX_FLAGS="$cxx_flags")
read -r -a extra_flags <<<"${SACCADE_CMAKE_ARGS:-}"
cmake_flags+=("${extra_flags[@]}")

if [ "${SACCADE_SKIP_SETUP:-0}" != 1 ]; then scripts/setup.sh --build-only || exit 1; fi
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_flags[@]}" || exit 1

failed=()
step() {  # step NAME COMMAND...: runs it, records a failure and the seconds taken, carries on
  local name=$1 start=$SECONDS
  shift
  echo "=== $name: $*"
  if ! "$@"; then
    failed+=("$name")
  fi
  echo "=== $name: $((SECONDS - start)) s"
}
stop_if_failed() {  # stop_if_failed [NOTE]: names the failed steps and exits 1 when there are any
  if [ ${#failed[@]} -gt 0 ]; then
    echo "gpu_check.sh: failed: ${failed[*]}${1:+ ($1)}"
    exit 1
  fi
}
# -k 0: every translation unit that fails is reported, not only the first.
step "build saccade" cmake --build build-cuda -j"$(nproc)" --target saccade -- -k 0
stop_if_failed
saccade=$PWD/build-cuda/src/cli/saccade
work=$(mktemp -d)
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
step "build tests" cmake --build build-cuda -j"$(nproc)" -- -k 0
step tests bash -c "cd build-cuda && OMP_WAIT_POLICY=PASSIVE ctest --output-on-failure --timeout 600 -j$(nproc)"
stop_if_failed "the GPU steps' run folders are kept in $work"
rm -rf "$work"
echo "gpu_check.sh: every step passed"
