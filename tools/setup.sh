#!/usr/bin/env bash
# Installs the Debian packages dtsim needs, only those missing, without prompts. Safe to run again.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libsimgrid-dev       # SimGrid 3.32: the discrete-event kernel and flow-level network models
  libboost-graph-dev   # topologies as graphs
  libfmt-dev           # formatting
  libcli11-dev         # the command line
  nlohmann-json3-dev   # scenarios and results
  libgtest-dev         # the test suite
  help2man             # the man page, from dtsim --help
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: every package is already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
