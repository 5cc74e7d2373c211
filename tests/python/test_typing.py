"""The package's types hold for a type checker: the stub of the native module matches the module (mypy's stubtest),
code using the results type-checks under mypy --strict, and a misread figure is caught. Skipped without mypy
(tools/setup.sh --tests installs it)."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mypy")

PACKAGE = pathlib.Path(__import__("dtsim").__file__).parent


def mypy(*args, cwd):
    done = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, check=False,
                          env=dict(os.environ, MYPY_CACHE_DIR=str(cwd / ".mypy_cache"), MYPYPATH=str(PACKAGE.parent),
                                    PYTHONPATH=str(PACKAGE.parent)))
    return done.returncode, done.stdout + done.stderr


def test_the_stub_matches_the_native_module(tmp_path):
    status, out = mypy("mypy.stubtest", "dtsim._dtsim", cwd=tmp_path)
    assert status == 0, out


def test_typed_use_checks_and_a_misread_figure_does_not(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(textwrap.dedent("""
        import dtsim
        from typing import List, Optional

        run: dtsim.RunResult = dtsim.run("scenario.json", overrides={"cluster.nodes": 8})
        seconds: float = run.iteration_seconds.mean
        cost: Optional[float] = run.cost_usd.per_epoch
        found = dtsim.search("scenario.json", simulate=4)
        fastest: List[dtsim.Candidate] = found.fastest()
        tensor: int = fastest[0].tensor
        plan = dtsim.plan("scenario.json", tokens="100B", deadline="5d")
        chosen: Optional[dtsim.PlanRow] = plan.chosen()
        names: List[str] = [c.name for c in dtsim.validate(filter="resnet").cases]
    """))
    status, out = mypy("mypy", "--strict", str(good), cwd=tmp_path)
    assert status == 0, out
    bad = tmp_path / "bad.py"
    bad.write_text("import dtsim\nseconds: float = dtsim.run('s.json').iteration_seconds\n")
    status, out = mypy("mypy", "--strict", str(bad), cwd=tmp_path)
    assert status == 1 and 'Incompatible types in assignment (expression has type "Stats"' in out, out
