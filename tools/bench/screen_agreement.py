#!/usr/bin/env python3
"""How well the search's estimates rank layouts against simulation.

Runs `dtsim search SCENARIO --simulate all --json` (every candidate that fits is simulated) and prints, over the
simulated candidates, Spearman's rank correlation of the simulated iteration with the closed-form screen's price
(plan/layout_price.hpp) and with the estimate from each candidate's plan (graph/estimate.hpp), and the median and
largest error of each against simulation.

    tools/bench/screen_agreement.py SCENARIO [dtsim arguments...]
"""
import json
import subprocess
import sys
import tempfile


def ranks(values):
    """Average ranks (1-based), ties sharing the mean of their positions."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a, b):
    """Pearson's correlation of the ranks."""
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va > 0 and vb > 0 else float("nan")


def errors(predicted, simulated):
    e = sorted(abs(p / s - 1) for p, s in zip(predicted, simulated))
    return e[len(e) // 2], e[-1]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(["build/dtsim", "search", sys.argv[1], "--simulate", "all", "--json", out.name] + sys.argv[2:],
                       check=True, stdout=subprocess.DEVNULL)
        document = json.load(open(out.name))
    rows = [r for r in document["candidates"] if r["ok"]]
    simulated = [r["iteration_seconds"] for r in rows]
    print(f"{sys.argv[1]}: {len(rows)} candidates simulated")
    for name, key in (("closed form", "closed_form_seconds"), ("plan estimate", "estimate_seconds")):
        pairs = [(r[key], r["iteration_seconds"]) for r in rows if r.get(key)]
        if len(pairs) < 2:
            print(f"  {name:14}: priced for {len(pairs)} of them")
            continue
        a, b = zip(*pairs)
        median, worst = errors(a, b)
        print(f"  {name:14}: {len(pairs)} priced, Spearman {spearman(a, b):.3f}, "
              f"error median {100 * median:.1f}%, max {100 * worst:.1f}%")


if __name__ == "__main__":
    main()
