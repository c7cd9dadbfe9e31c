#!/usr/bin/env bash
# Fetch, HERE (a machine with pip's index), the wheels kloop needs on the lent GPU machine and that its
# image lacks, into .whl/ (git-ignored). The device image (python3 3.12, torch 2.11, triton 3.6) has
# typer, rich, pyyaml, numpy, safetensors and psutil, but no pydantic, pyseccomp or simpleeval: without
# them `python3 -m kloop.cli` cannot even load a task, and without pyseccomp the sandbox runs with no
# seccomp filter at all ("seccomp: none"), so the issue-29 check on the GPU would prove nothing.
# ncu_report comes from Nsight Compute's own extras/python there (device_check.sh adds it).
#   bash bench/device_wheels.sh          # then call the device tool with carry [".whl"] and run
#   bash bench/device_check.sh           # which installs .whl/*.whl into /tmp/kloop-site first
# Versions are pinned to what CI tests here; pydantic-core is the only binary one (cp312, manylinux2014).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
mkdir -p .whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  typing-extensions==4.16.0 pyseccomp==0.1.2 simpleeval==1.0.8 cxxfilt==0.3.0
ls -1 .whl
du -sh .whl
