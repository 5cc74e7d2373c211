#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed binary run from an unrelated folder: a scenario and
# a validation case from the installed data, the Python module imported from the prefix, the man page rendered, bash
# completion asked for subcommands and options; then `cpack` builds the Debian package and its contents and
# dependencies are checked.
# Usage: install.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
dtsim="$tmp/prefix/bin/dtsim"
[ -x "$dtsim" ] || fail "no bin/dtsim under the prefix"
cd "$tmp" # nothing of the source tree around

"$dtsim" --version > version.txt || fail "--version"
head -1 version.txt | grep -qE '^dtsim [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version: $(cat version.txt)"
sed -n 2p version.txt | grep -q '^commit ' || fail "--version names no commit: $(cat version.txt)"
"$dtsim" run "$tmp/prefix/share/dtsim/scenarios/quickstart.json" > run.txt || fail "running the installed scenario"
grep -q "time (mean)" run.txt || fail "the run printed no iteration time"
# validate finds its cases in PREFIX/share/dtsim, the scenarios they name included.
"$dtsim" validate --filter collective-a100x8-1mib --jobs 1 > validate.txt || fail "validate from the installed cases"
grep -q "over 1 collective case" validate.txt || fail "validate ran no case: $(cat validate.txt)"

# The Python module, where the build made one: imported from the prefix by the interpreter it was built for (not from
# the build folder), and a run of the installed quickstart scenario.
python_module=""
if compgen -G "$build/python/dtsim.*.so" > /dev/null; then
  python_module=1
  site=$(sed -n 's/^DTSIM_PYTHON_INSTALL_DIR:STRING=//p' "$build/CMakeCache.txt")
  python=$(sed -n 's/^_Python_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")
  PYTHONPATH="$tmp/prefix/$site" "${python:-/usr/bin/python3}" -c '
import sys, dtsim
assert dtsim.__file__.startswith(sys.argv[1]), dtsim.__file__
result = dtsim.run(sys.argv[2])
assert result.iteration_seconds.mean > 0, result.iteration_seconds
' "$tmp/prefix/" "$tmp/prefix/share/dtsim/scenarios/quickstart.json" || fail "the installed Python module"
fi

for f in share/doc/dtsim/README.md share/doc/dtsim/LICENSE share/doc/dtsim/scenario-format.md \
         share/doc/dtsim/guide.md share/doc/dtsim/commands.md \
         share/bash-completion/completions/dtsim share/zsh/vendor-completions/_dtsim; do
  [ -f "$tmp/prefix/$f" ] || fail "$f was not installed"
done
if grep -q '^DTSIM_HELP2MAN:FILEPATH=/' "$build/CMakeCache.txt"; then
  page="$tmp/prefix/share/man/man1/dtsim.1.gz"
  [ -f "$page" ] || fail "no man page"
  # Every subcommand's options are in it (the COMMANDS section holds each one's --help).
  man -l "$page" > man.txt 2>/dev/null
  grep -q -- "--nodes COUNTS REQUIRED" man.txt || fail "the man page lacks sweep's options"
fi

# bash completion: subcommands and options, read from the installed binary's --help.
completion="$tmp/prefix/share/bash-completion/completions/dtsim"
words=$(bash -c "source '$completion'; COMP_WORDS=('$dtsim' sw); COMP_CWORD=1; _dtsim; echo \${COMPREPLY[*]}")
[ "$words" = "sweep" ] || fail "completing 'sw' gave '$words', not 'sweep'"
words=$(bash -c "source '$completion'; COMP_WORDS=('$dtsim' run --js); COMP_CWORD=2; _dtsim; echo \${COMPREPLY[*]}")
[ "$words" = "--json" ] || fail "completing 'run --js' gave '$words', not '--json'"

# The Debian package: dtsim's files under /usr, and the libraries' packages as dependencies.
(cd "$build" && cpack -G DEB -B "$tmp/package" > "$tmp/cpack.log" 2>&1) || fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/package/*.deb)
dpkg-deb -c "$deb" > contents.txt
grep -q ' ./usr/bin/dtsim$' contents.txt || fail "the package lacks /usr/bin/dtsim"
grep -q ' ./usr/share/dtsim/scenarios/quickstart.json$' contents.txt || fail "the package lacks the scenarios"
if [ -n "$python_module" ]; then
  grep -q ' ./usr/lib/python3/dist-packages/dtsim\.cpython-.*\.so$' contents.txt || fail "the package lacks the Python module"
fi
dpkg-deb -f "$deb" Depends | grep -q libsimgrid || fail "the package does not depend on SimGrid's library"
if [ -n "$python_module" ]; then
  dpkg-deb -f "$deb" Depends | grep -q 'python3 (>=' || fail "the package holds the Python module but needs no python3"
fi
# lintian, where installed (Debian's package checker): no error. Its warnings are printed for the log.
if command -v lintian > /dev/null; then
  lintian --tag-display-limit 0 "$deb" > lintian.txt 2>&1 || true
  grep -v '^running with root privileges' lintian.txt >&2 || true
  if grep -q '^E:' lintian.txt; then fail "lintian reports errors: $(grep '^E:' lintian.txt | tr '\n' ' ')"; fi
fi
echo "install test: installed, ran, completed and packaged"
