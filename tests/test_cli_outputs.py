"""An output path that is one of the command's inputs is refused before any work (exit 2), and
the input is left byte for byte as it was (issue 30: ``--solution-out d.csv`` with ``--data
d.csv`` replaced the data with the coefficients and exited 0)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from optmodels.cli import main

CSV = "x1,x2,y\n1.0,2.0,3.0\n2.0,1.0,4.0\n3.0,5.0,1.0\n4.0,4.0,4.5\n5.0,2.5,2.0\n"


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "d.csv"
    path.write_text(CSV)
    return path


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *guarded: Path) -> str:
    before = {p: p.read_bytes() for p in guarded}
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "overwrite the input" in err
    for p, content in before.items():
        assert p.read_bytes() == content
    return err


@pytest.mark.parametrize("argv", [
    ["solve", "lad", "--data", "d.csv", "--solution-out", "d.csv"],
    ["solve", "lad", "--data", "./d.csv", "--solution-out", "sub/../d.csv"],
    ["fit", "lad", "--data", "d.csv", "--model-out", "d.csv"],
    ["export", "lad", "--data", "d.csv", "--out", "d.csv"],
    ["compare", "lad", "--data", "d.csv", "--plot", "d.csv"],
])
def test_output_onto_data_refused(argv, data, capsys):
    (data.parent / "sub").mkdir()
    err = _refused(argv, capsys, data)
    assert "--data" in err


def test_output_through_a_link_refused(data, capsys):
    os.symlink(data, data.parent / "link.csv")
    _refused(["solve", "lad", "--data", "link.csv", "--solution-out", str(data)], capsys, data)


def test_predict_outputs_onto_model_or_data_refused(data, capsys):
    assert main(["fit", "lad", "--data", "d.csv", "--model-out", "m.optmodel"]) == 0
    model = data.parent / "m.optmodel"
    capsys.readouterr()
    _refused(["predict", "--model", "m.optmodel", "--data", "d.csv", "--out", "d.csv"],
             capsys, data, model)
    err = _refused(["predict", "--model", "m.optmodel", "--data", "d.csv", "--out",
                    str(model)], capsys, data, model)
    assert "--model" in err
    # a distinct output still works, and the predictions are those of the model
    assert main(["predict", "--model", "m.optmodel", "--data", "d.csv", "--out", "p.csv"]) == 0
    assert (data.parent / "p.csv").read_text().splitlines()[0] == "prediction"


def test_lazy_sources_guard_their_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    parts = tmp_path / "parts"
    parts.mkdir()
    rng = np.random.default_rng(0)
    for k in range(2):
        np.save(parts / f"c{k}.npy", rng.normal(size=(20, 3)))
    guarded = sorted(parts.iterdir())
    # an existing chunk, and a new file the glob would read next time
    _refused(["solve", "lad", "--strategy", "aid", "--data", "parts/*.npy",
              "--solution-out", "parts/c0.npy"], capsys, *guarded)
    _refused(["solve", "lad", "--strategy", "aid", "--data", "parts/*.npy",
              "--solution-out", "parts/new.npy"], capsys, *guarded)
    # an output inside a directory read as a dataset
    _refused(["solve", "lad", "--strategy", "aid", "--data", "parts",
              "--solution-out", "parts/x.json"], capsys, *guarded)
