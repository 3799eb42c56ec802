"""Every notebook runs top to bottom (small sizes: OPTMODELS_SMALL=1), so none can rot; the
committed copies carry their outputs (a reader sees the figures) and stay small.

The run executes an in-memory copy in a temporary directory: the committed files are never
overwritten. Regenerate the committed outputs from the repository root (full sizes) with
``jupyter execute --inplace notebooks/*.ipynb`` (nbclient).
"""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("OPTMODELS_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors


MAX_BYTES = 400_000
"""A committed notebook, outputs included, stays below this size (PNG figures at modest dpi)."""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_shows_its_results(path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{path.name}: not executed top to bottom"
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    if "matplotlib" in "".join(c.source for c in code):
        assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name}: no figure"
    assert path.stat().st_size < MAX_BYTES, f"{path.name}: {path.stat().st_size} bytes"


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 1
