"""Every ```python block of README.md and docs/*.md that imports dtsim runs as written, from the repository root, with
the built module: an example a reader copies works. (Other blocks show code for other tools, such as PyTorch's
profiler.)"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from test_dtsim import SOURCE

DOCUMENTS = [SOURCE / "README.md", *sorted((SOURCE / "docs").glob("*.md"))]


def blocks():
    found = []
    for document in DOCUMENTS:
        text = document.read_text()
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            if not re.search(r"^import dtsim", match.group(1), re.M):
                continue
            line = text.count("\n", 0, match.start()) + 1
            found.append(pytest.param(match.group(1), id=f"{document.relative_to(SOURCE)}:{line}"))
    return found


def test_the_documents_have_examples():
    assert len(blocks()) >= 3


@pytest.mark.parametrize("code", blocks())
def test_example_runs(code, tmp_path):
    done = subprocess.run([sys.executable, "-c", code], cwd=SOURCE, capture_output=True, text=True, check=False,
                          env=dict(os.environ, MPLBACKEND="Agg"), timeout=240)
    assert done.returncode == 0, done.stderr
