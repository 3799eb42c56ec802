"""Writing LP/QP models to MPS or LP files through HiGHS, atomically.

Names are the model's blocks with an index, ``beta_3``, ``e_plus_17``, ``margin_0``: letters,
digits and underscores only, starting with a letter, so both of HiGHS's MPS parsers and its LP
reader take them back unchanged. A QP's objective goes to the MPS QUADOBJ section (HiGHS writes
the Hessian's lower triangle). The file appears only once it is complete: the model is written
to a temporary file in the same folder and renamed over the target.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from solvers.errors import ExportError
from solvers.highs_backend import new_highs, to_highs
from solvers.qp import QPData

FORMATS = (".mps", ".lp")


def write(model: Any, path: str | os.PathLike, *, form: str | None = None) -> Path:
    """Write a problem (or a :class:`QPData`) to ``path``; the suffix picks MPS or LP.

    Raises :class:`ExportError` for other suffixes or models that cannot be written (KLR), and
    ``ValueError`` for NaN/inf data, before anything touches the disk.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise ExportError(f"Cannot write {target.name!r}: use a .mps or .lp file name.")
    qp = model if isinstance(model, QPData) else (model.qp(form) if form else model.qp())
    qp.assert_finite()
    if not target.parent.exists():
        raise ExportError(f"The folder {str(target.parent)!r} does not exist; create it first.")
    h = to_highs(qp, names=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    try:
        import highspy

        if h.writeModel(tmp) != highspy.HighsStatus.kOk:
            raise ExportError(f"HiGHS could not write {target}.")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def read(path: str | os.PathLike) -> Any:
    """Read an MPS/LP file into a ``highspy.Highs`` object (for round trips and inspection)."""
    import highspy

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"No model file at {str(p)!r}.")
    h = new_highs()
    if h.readModel(str(p)) not in (highspy.HighsStatus.kOk, highspy.HighsStatus.kWarning):
        raise ExportError(f"HiGHS could not read {str(p)!r}; is it an MPS or LP file?")
    return h
