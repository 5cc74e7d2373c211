#!/usr/bin/env python3
"""One run's figures read the same in the four views dtsim gives them: the text a command prints, its CSV, its JSON and
its HTML report (as Chromium rendered it, NAME.dom.json from render.mjs). Each figure is formatted from the CSV and the
JSON by the ladders the page carries (io/units.hpp's, #dtsim-units), and the result must equal, character for
character, what the text table and the page's table and summary show.
  agree.py DIR   (DIR: where reports.sh left sweep.{txt,csv,json,html,dom.json} and run.{txt,json,html,dom.json})
"""
import csv
import json
import pathlib
import re
import sys

out = pathlib.Path(sys.argv[1])
problems = []


def units_of(page):
    """The ladders the HTML report carries: what its JavaScript formats with."""
    text = (out / page).read_text()
    return json.loads(re.search(r'<script type="application/json" id="dtsim-units">(.*?)</script>', text, re.S).group(1))


def unit_for(ladder, values):
    largest = max((abs(v) for v in values), default=0)
    chosen = ladder["units"][0]
    for unit in ladder["units"]:
        if largest >= unit["from"]:
            chosen = unit
    return chosen


def number_in(unit, value):
    shown = value / unit["scale"]
    decimals = unit["decimals"] if unit["decimals"] >= 0 else 0 if abs(shown) >= 99.95 else 1 if abs(shown) >= 9.995 else 2
    return f"{shown:.{decimals}f}"


def same(what, views):
    """views: {view name: text}; all equal, or a problem naming each."""
    if len(set(views.values())) != 1:
        problems.append(f"{what}: " + ", ".join(f"{k} {v!r}" for k, v in views.items()))


# A sweep: the iteration and time per epoch of each node count, as a column of the text table, a CSV column, a JSON
# field and a column of the page's table, in the one unit the column takes.
units = units_of("sweep.html")
text = [line.split() for line in (out / "sweep.txt").read_text().splitlines()]
header = next(i for i, row in enumerate(text) if row[:2] == ["nodes", "GPUs"])
rows = [row for row in text[header + 1:] if row and row[0].isdigit()]
table = json.loads((out / "sweep.dom.json").read_text())["tables"]["points"]
document = json.loads((out / "sweep.json").read_text())
with open(out / "sweep.csv", newline="") as f:
    csv_rows = list(csv.DictReader(f))
for field, csv_column, json_of, text_column, page_title in [
    ("iteration", "iteration_seconds", lambda r: r["iteration_seconds"]["mean"], 2, "iteration"),
    ("time per epoch", "epoch_seconds", lambda r: r["epoch_seconds"], 8, "time/epoch"),
]:
    from_csv = [float(r[csv_column]) for r in csv_rows]
    from_json = [json_of(p["result"]) for p in document["points"]]
    unit = unit_for(units["time"], from_csv)
    page_column = next(i for i, h in enumerate(table["header"]) if h.startswith(page_title + " ("))
    same(f"sweep {field} unit", {"text": rows[0][text_column + 1], "ladder": unit["symbol"],
                                 "page": table["header"][page_column][len(page_title) + 2:-1]})
    for i, row in enumerate(rows):
        same(f"sweep {field} at {row[0]} node(s)", {
            "text": f"{row[text_column]} {row[text_column + 1]}",
            "csv": f"{number_in(unit, from_csv[i])} {unit['symbol']}",
            "json": f"{number_in(unit, from_json[i])} {unit['symbol']}",
            "page": f"{table['rows'][i][page_column]} {unit['symbol']}",
        })

# A run: its mean iteration as the text's summary line, the JSON and the page's summary paragraph say it.
units = units_of("run.html")
run_text = (out / "run.txt").read_text()
shown = re.search(r"^  time \(mean\)\s+(\S+ \S+)$", run_text, re.M).group(1)
mean = json.loads((out / "run.json").read_text())["iteration_seconds"]["mean"]
unit = unit_for(units["time"], [mean])
page = re.search(r"iteration ([^;]+);", json.loads((out / "run.dom.json").read_text())["summaries"][0]).group(1)
same("run iteration", {"text": shown, "json": f"{number_in(unit, mean)} {unit['symbol']}", "page": page})

for p in problems:
    print("differ: " + p)
print(f"{'FAIL' if problems else 'ok  '} the text, CSV, JSON and page agree on the sweep's and the run's figures")
sys.exit(1 if problems else 0)
