#!/usr/bin/env bash
# Installs what nncc needs to build and test, idempotently (Debian 12, root or sudo).
# Packages already present are left alone; nothing is downloaded outside apt.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  nlohmann-json3-dev libgtest-dev
  python3 python3-torch python3-numpy python3-matplotlib libopenblas0-pthread libopenblas-dev
  python3-venv python3-pip python3-setuptools python3-wheel
  # utils/sanitize.sh: libFuzzer targets (clang-22 from the same source as
  # llvm-22; libclang-rt-22-dev holds libFuzzer and the sanitizer runtimes)
  clang-22 libclang-rt-22-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
