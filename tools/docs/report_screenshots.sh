#!/usr/bin/env bash
# Refreshes the screenshots of the HTML reports kept in docs/reports/ (docs/guide.md shows them): every kind of report
# as the browser test renders it (tests/report/reports.sh leaves BUILD/tests/report/NAME.png), and run's report on
# GPT-3 175B over 1,024 A100s. Needs a build with the plotting runtime and Debian's chromium (tools/setup.sh --tests).
#   tools/docs/report_screenshots.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
ctest --test-dir "$build" -R report.html_in_browser --output-on-failure > /dev/null
mkdir -p "$root/docs/reports"
for name in sweep compare policies train search plan collective pipeline; do
  cp "$build/tests/report/$name.png" "$root/docs/reports/$name.png"
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/dtsim" run "$root/scenarios/gpt3-175b-a100x1024.json" --html "$work/run.html" > /dev/null
echo "[{\"file\": \"$work/run.html\", \"title\": \"dtsim run\", \"figures\": {}}]" > "$work/page.json"
node "$root/tests/report/render.mjs" "$build/report/node_modules" "$(command -v chromium)" "$work/page.json" > /dev/null
cp "$work/run.png" "$root/docs/reports/run.png"
ls -l "$root/docs/reports"
