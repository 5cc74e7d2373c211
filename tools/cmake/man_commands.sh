#!/usr/bin/env bash
# Writes a help2man include file whose COMMANDS section holds every subcommand's own --help, as the binary prints it,
# so that the man page says all that `dtsim SUBCOMMAND --help` says. Usage: man_commands.sh DTSIM OUTPUT
set -euo pipefail
dtsim=$1
out=$2
{
  echo "[COMMANDS]"
  "$dtsim" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' | while read -r sub; do
    echo ".SS \"dtsim $sub\""
    echo ".nf"
    # roff: a leading dot or quote would be read as a request; backslashes escaped.
    "$dtsim" "$sub" --help | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo "The README and docs/ (installed under share/doc/dtsim): the user guide, the commands, the models, validation, the Python module, the scenario format, the measurement format and the design."
} > "$out"
