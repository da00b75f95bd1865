#!/usr/bin/env bash
# Installs every system package saccade needs, from Debian's archive only (Debian 12 or 13).
# Idempotent: packages already present are skipped, so a second run costs a dpkg query.
# Works as root or through sudo; never prompts.
#   scripts/setup.sh               everything: Debian's LibTorch and the tests' references too
#   scripts/setup.sh --build-only  what a build against another LibTorch needs (scripts/gpu_check.sh)
#   scripts/setup.sh --fuzz        everything, and clang with libFuzzer (scripts/fuzz.sh)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libopenblas0-pthread libopenblas-dev libopencv-dev libyaml-cpp-dev libgtest-dev libgmock-dev
  # saccade serve's HTTP server.
  libcpp-httplib-dev
  # c10d's Gloo headers, for a LibTorch that does not ship them.
  libgloo-dev
)
if [ "${1:-}" != "--build-only" ]; then
  packages+=(
    clang-format libtorch-dev
    # Reference tensors for the native ResNet/VGG agreement tests.
    python3-torchvision
    # Independent readers for the tests: the report page is rendered in headless Chromium,
    # TensorBoard event files are decoded by protoc --decode_raw.
    chromium protobuf-compiler
    # Drives the explorer page in that Chromium (WebDriver), for `saccade serve`'s browser test.
    chromium-driver
    # The reference BLAS, which saccade must name in a warning when products go to it.
    libblas3
    # Makes the Debian 13 root of `scripts/test.sh --debian13`.
    debootstrap
  )
fi
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-14-dev libomp-14-dev)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup.sh: missing packages (${missing[*]}) and neither root nor sudo is available" >&2
  exit 1
fi

echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
