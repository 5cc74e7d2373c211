#!/usr/bin/env bash
# Installs what dtsim needs, only what is missing, without prompts. Safe to run again.
#   tools/setup.sh           Debian's build packages (npm among them: CMake installs the HTML reports' plotting runtime)
#   tools/setup.sh --tests   also what only the test suite uses: Chromium (the reports opened in a browser),
#                            valijson (scenarios checked against docs/scenario.schema.json), pytest and matplotlib
#                            (the Python module's tests and example), Slurm and munge (a sharded sweep submitted to a
#                            Slurm cluster the test starts), clang-format (the format check), lintian (the Debian
#                            package checked)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libsimgrid-dev       # SimGrid 3.32: the discrete-event kernel and flow-level network models
  libboost-graph-dev   # topologies as graphs
  libfmt-dev           # formatting
  libcli11-dev         # the command line
  nlohmann-json3-dev   # scenarios and results
  zlib1g-dev           # gzip of large traces (.json.gz)
  protobuf-compiler    # Chakra execution traces: the schema's C++ (sim/chakra/et_def.proto)
  libprotobuf-dev      # ... and the library that reads and writes them
  libgtest-dev         # the test suite
  help2man             # the man page, from dtsim --help
  pybind11-dev         # the Python module (import dtsim)
  python3-dev          # Python's headers, for the module
)
command -v npm > /dev/null || packages+=(npm) # Vega-Lite for the HTML reports (tools/report/package.json)
if [ "${1:-}" = "--tests" ]; then
  packages+=(
    chromium           # the HTML reports rendered headless (tests/report)
    libvalijson-dev    # the schema test (tests/schema)
    python3-pytest     # the Python module's tests (tests/python)
    python3-matplotlib # docs/python-sweep-example.py's figure
    python3-pandas     # the Python results' to_dataframe() (tests/python)
    mypy               # the Python package's types: stubtest and mypy --strict (tests/python)
    slurm-wlm          # the sharded sweep on a single-node Slurm cluster the test starts (tests/slurm)
    munge              # Slurm's authentication; the package makes /etc/munge/munge.key
    clang-format       # every tracked C++ file formatted as .clang-format says (tools/check_format.sh)
    lintian            # the Debian package cpack makes, checked for errors (tests/install)
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: every package is already installed"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The plotting runtime the HTML reports inline (and playwright-core, which drives Chromium in the browser test): npm
# installs it in the build tree when CMake configures (tools/cmake/report_assets.cmake), at the pinned versions.
