#!/usr/bin/env bash
# Installs what nncc needs to build and test, idempotently (Debian 12, root or sudo).
# Packages already present are left alone. Besides apt, one download: the
# torch 2.x virtual environment from PyPI at the end (once per machine), with
# Hugging Face's tokenizers, safetensors and transformers and ONNX Runtime with
# onnx and onnxscript (bench/run.py's peers).
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

# A virtual environment with current PyTorch from PyPI, beside Debian's torch
# 1.13 (python3-torch above): the `torch2` tests (torch.compile over nncc
# modules through the torch.library custom ops, DDP and FSDP2 with torch 2.x,
# the Python module tests again) run in it (test/lit.cfg.py, %torch2_python).
# Made once per machine at $NNCC_VENV (default ~/.cache/nncc-venv, about
# 2.2 GB on disk, a 1.2 GB download) and left alone while it imports the
# pinned torch and holds the pinned lists below (a stamp file). PyPI's Linux
# torch is the CUDA build: it is installed --no-deps with only what `import
# torch` needs on a machine without a GPU (the NVIDIA libraries that
# libtorch_cuda.so links; cuBLAS, cuDNN, the CUDA runtime and triton are
# loaded only when CUDA is used, and are left out); the versions are those
# torch 2.15.0 declares. NNCC_VENV=none skips it (the torch2 tests are then
# unsupported; lit prints a note). A failed download is an error.
torch_pins=(
  torch==2.15.0
  filelock==4.3.1 typing_extensions==4.16.0 sympy==1.14.0 mpmath==1.3.0
  networkx==3.6.1 jinja2==3.1.6 markupsafe==3.0.4 fsspec==2026.9.0 numpy==2.4.6
  nvidia-cufile==1.20.0.107 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7
  nvidia-nvshmem-cu13==3.7.2
)
# Hugging Face's tokenizers, safetensors and transformers in the same
# environment (python/nncc/data.py, docs/data.md; lit's `hf` feature), also
# --no-deps: the versions pip resolves for these three, less what their
# imports do not need (typer, click and rich are transformers' and the hub's
# command lines, hf-xet the hub's Xet downloads, anyio httpx2's async
# backend), with what torch's list already holds (numpy, filelock, fsspec,
# typing_extensions). An environment with the right torch but not these
# gets them added (a 19 MB download, 160 MB on disk, 16 s on this 2-core
# VM, 2026-12-02; torch is not installed again). With them matplotlib and
# what it imports (current PyPI, 2026-12-02), for python -m nncc.pipeline's
# PNG (docs/pipeline.md; without it the PNG is drawn by Debian's
# python3-matplotlib under /usr/bin/python3).
hf_pins=(
  tokenizers==0.23.3 safetensors==0.8.0 transformers==5.24.0 huggingface-hub==2.4.0
  packaging==26.4 pyyaml==6.0.4 regex==2026.11.19 tqdm==4.70.1
  httpx2==2.16.2 httpcore2==2.16.2 h11==0.16.0 idna==3.20 truststore==0.10.5
  matplotlib==3.11.2 contourpy==1.3.3 cycler==0.12.1 fonttools==4.68.0 kiwisolver==1.5.1
  pillow==13.0.0 pyparsing==3.3.3 python-dateutil==4.0.0 tzdata==2026.6
)
# ONNX Runtime with the ONNX exporter of torch 2.x (torch.onnx.export needs
# onnx and onnxscript, which needs onnx-ir) for bench/run.py's ONNX Runtime
# peer, its transformer optimiser (onnxruntime.transformers.optimizer)
# included; also --no-deps: the versions pip resolves for onnxruntime, onnx
# and onnxscript (current PyPI, 2026-12-02), less what the lists above hold
# (numpy, packaging, sympy, mpmath, typing_extensions). An environment with
# the right torch and Hugging Face pins but not these gets them added (a
# 30 MB download; torch is not installed again).
onnx_pins=(
  onnxruntime==1.32.0 onnx==1.23.2 onnxscript==0.7.2 onnx-ir==1.1.0
  ml_dtypes==0.7.0 protobuf==7.36.2 flatbuffers==25.12.19
)
onnx_imports="onnxruntime, onnx, onnxscript, onnxruntime.transformers.optimizer"
home=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}  # as lit's os.path.expanduser("~")
venv=${NNCC_VENV:-$home/.cache/nncc-venv}
# The stamp: torch's pins on its first line, the Hugging Face pins on its
# second, the ONNX pins on its third.
stamp="$venv/nncc-venv-pins"
torch_ok() {
  [ -f "$stamp" ] && [ "$(sed -n 1p "$stamp")" = "${torch_pins[*]}" ] &&
    "$venv/bin/python" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != sys.argv[1])' \
      "${torch_pins[0]#torch==}" >/dev/null 2>&1
}
hf_ok() {
  [ "$(sed -n 2p "$stamp")" = "${hf_pins[*]}" ] &&
    "$venv/bin/python" -c 'import tokenizers, safetensors, transformers' >/dev/null 2>&1
}
onnx_ok() {
  [ "$(sed -n 3p "$stamp")" = "${onnx_pins[*]}" ] &&
    "$venv/bin/python" -c "import $onnx_imports" >/dev/null 2>&1
}
write_stamp() {
  printf '%s\n%s\n%s\n' "${torch_pins[*]}" "${hf_pins[*]}" "${onnx_pins[*]}" >"$stamp"
}
pip_install() {  # pip_install WHAT PINS...: --no-deps into $venv, or an error
  local what=$1
  shift
  if ! "$venv/bin/python" -m pip install --no-deps --no-input --disable-pip-version-check \
      --progress-bar off --quiet "$@" >>"$log" 2>&1; then
    echo "setup: error: pip could not install $what into $venv (PyPI unreachable?); its last lines:" >&2
    tail -n 15 "$log" >&2
    echo "setup: NNCC_VENV=none skips this environment (the torch2 and hf tests then do not run)" >&2
    exit 1
  fi
}
imports() {  # imports MODULES: python -c 'import MODULES' in $venv, or an error
  if ! "$venv/bin/python" -c "import $1" >>"$log" 2>&1; then
    echo "setup: error: $1 installed into $venv does not import; the last lines of $log:" >&2
    tail -n 15 "$log" >&2
    exit 1
  fi
}
if [ "$venv" = none ]; then
  echo "setup: NNCC_VENV=none: no torch 2.x virtual environment (the torch2 and hf tests will not run)"
else
mkdir -p "$(dirname "$venv")"
(
  flock 9  # one setup at a time makes it
  log="$venv/nncc-venv-install.log"
  if torch_ok; then
    if hf_ok && onnx_ok; then
      echo "setup: $venv has ${torch_pins[0]}, ${hf_pins[*]:0:3} and ${onnx_pins[*]:0:3}"
      exit 0
    fi
    start=$SECONDS
    if ! hf_ok; then
      echo "setup: adding ${hf_pins[*]:0:3} to $venv"
      pip_install "${hf_pins[*]}" "${hf_pins[@]}"
      imports "tokenizers, safetensors, transformers"
    fi
    if ! onnx_ok; then
      echo "setup: adding ${onnx_pins[*]:0:3} to $venv"
      pip_install "${onnx_pins[*]}" "${onnx_pins[@]}"
      imports "$onnx_imports"
    fi
    write_stamp
    echo "setup: added to $venv in $((SECONDS - start)) s"
    exit 0
  fi
  if [ -d "$venv" ] && [ -z "$(ls -A "$venv")" ]; then
    rmdir "$venv"
  elif [ -e "$venv" ]; then
    # Only a virtual environment is replaced, never another directory.
    if [ ! -f "$venv/pyvenv.cfg" ]; then
      echo "setup: $venv exists and is not a virtual environment; set NNCC_VENV elsewhere" >&2
      exit 1
    fi
    echo "setup: $venv is incomplete or holds other versions: made again"
    rm -rf "$venv"
  fi
  echo "setup: making $venv (${torch_pins[0]}, ${hf_pins[*]:0:3} and ${onnx_pins[*]:0:3} from PyPI, a 1.2 GB download)"
  start=$SECONDS
  /usr/bin/python3 -m venv "$venv"
  pip_install "${torch_pins[*]} ${hf_pins[*]} ${onnx_pins[*]}" \
    "${torch_pins[@]}" "${hf_pins[@]}" "${onnx_pins[@]}"
  imports torch
  imports "tokenizers, safetensors, transformers"
  imports "$onnx_imports"
  write_stamp
  echo "setup: $venv made in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))"
) 9>"$venv.lock"
fi
