"""A sweep from Python, notebook style: ResNet-50 on 1 to 8 p3.16xlarge nodes (8 V100s each) with dtsim.sweep, a
table of the points, and throughput and speedup against nodes plotted with matplotlib.

Run it as a script (python3 docs/python-sweep-example.py [OUTPUT_DIR]; it writes OUTPUT_DIR/sweep.png, the current
folder without one) or cell by cell (# %%) in an editor that knows cells. It needs the built module on the path:
PYTHONPATH=build/python, or PREFIX/lib/python3/dist-packages after cmake --install.
"""
# %% Imports: the Agg backend draws to a file, so no display is needed.
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

import dtsim  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "resnet50-p3.16xlarge-x4.json"
OUTPUT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path.cwd()

# %% The sweep: the same scenario at 1, 2, 4 and 8 nodes ("1..8" doubles from 1 to 8), each point simulated in a
# process of its own. The result is typed: each point's run, speedup and efficiency (to_dict() is what
# `dtsim sweep --json` writes).
sweep = dtsim.sweep(SCENARIO, nodes="1..8")
points = [p for p in sweep.points if p.ok and p.result]
for p in sweep.points:
    if not p.ok:
        print(f"{p.nodes} node(s) failed: {p.error}")

# %% A table: figures in base units (seconds, samples per second), shown in milliseconds and images per second.
unit = points[0].result.sample_unit  # "images" for ResNet-50
print(f"{'nodes':>5} {'GPUs':>5} {'iteration (ms)':>15} {unit + '/s':>12} {'speedup':>8} {'efficiency':>10}")
for p in points:
    r = p.result
    print(f"{p.nodes:>5} {r.gpus:>5} {1e3 * r.iteration_seconds.mean:>15.1f} "
          f"{r.throughput_samples_per_second:>12.0f} {p.speedup:>7.2f}x {100 * p.efficiency:>9.1f}%")

# %% The figure: throughput, and speedup beside the ideal (linear in GPUs), against nodes.
nodes = [p.nodes for p in points]
gpus = [p.result.gpus for p in points]
throughput = [p.result.throughput_samples_per_second for p in points]
speedup = [p.speedup for p in points]
ideal = [g / gpus[0] for g in gpus]

figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.plot(nodes, throughput, marker="o")
left.set_xlabel("nodes")
left.set_ylabel(f"throughput ({unit}/s)")
left.set_xscale("log", base=2)
left.set_xticks(nodes, [str(n) for n in nodes])
right.plot(nodes, speedup, marker="o", label="simulated")
right.plot(nodes, ideal, linestyle="--", label="ideal")
right.set_xlabel("nodes")
right.set_ylabel("speedup over 1 node")
right.set_xscale("log", base=2)
right.set_xticks(nodes, [str(n) for n in nodes])
right.legend()
figure.suptitle(f"{points[0].result.name} (dtsim {dtsim.__version__})")
figure.tight_layout()

OUTPUT.mkdir(parents=True, exist_ok=True)
figure.savefig(OUTPUT / "sweep.png", dpi=100)
print(f"Wrote {OUTPUT / 'sweep.png'}")
