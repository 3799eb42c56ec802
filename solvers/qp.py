"""The matrix form every LP/QP model is lowered to, and the toolkit's own optimality check.

    minimize    1/2 x' P x + c' x + offset
    subject to  row_lo <= A x <= row_hi,     col_lo <= x <= col_hi

``P`` is symmetric positive semidefinite (``None`` for an LP). Infinite bounds are ``+-inf``.
Variables and rows come in named *blocks* (``("beta", p)``, ``("e_plus", n)``), so writers can
give each entry a readable name (``beta_3``) without storing millions of strings. A small block
may carry one label per entry in ``col_labels`` (``{"beta": ["age", "dose"]}``: the entries are
then ``beta_age``, ``beta_dose``); the large blocks keep generated names.

Dual convention (the same for every backend; each backend converts its own): the Lagrangian is
``L = f(x) - y'(A x) - z'x`` with row multipliers ``y`` and reduced costs
``z = P x + c - A' y``. At an optimum ``y_i >= 0`` only where the row is at its lower side,
``y_i <= 0`` only at its upper side, and likewise ``z`` for the bounds. The dual objective is

    g(y) = -1/2 x'Px + offset + sum_i [y_i]_+ row_lo_i - [y_i]_- row_hi_i
                              + sum_j [z_j]_+ col_lo_j - [z_j]_- col_hi_j

(with [.]_- the magnitude of the negative part), a lower bound on the optimum for any ``y`` whose
required bounds are finite. :func:`check_kkt` computes it from the returned arrays: a solver's
"optimal" is accepted only when the primal residual and the relative gap are both small.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

Block = tuple[str, int]


@dataclasses.dataclass
class QPData:
    """An LP/QP in the matrix form above (see the module docstring)."""

    c: np.ndarray
    A: sp.csr_matrix | sp.csc_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    P: sp.csr_matrix | None = None
    offset: float = 0.0
    col_blocks: list[Block] = dataclasses.field(default_factory=list)
    row_blocks: list[Block] = dataclasses.field(default_factory=list)
    name: str = "model"
    col_labels: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    """Per-entry labels of some column blocks: block name -> one string per entry."""

    def __post_init__(self) -> None:
        import scipy.sparse as sp  # here, not at the top: the SMO path never builds a QPData

        self.c = np.asarray(self.c, dtype=float)
        # CSR or CSC is kept as given (HiGHS takes CSC: a model built column-wise skips a
        # conversion); anything else becomes CSR.
        if not (sp.issparse(self.A) and self.A.format in ("csr", "csc")):
            self.A = sp.csr_matrix(self.A, dtype=float)
        n = self.c.shape[0]
        if self.A.shape[1] != n:
            raise ValueError(f"A has {self.A.shape[1]} columns but c has {n} entries.")
        if self.P is not None:
            self.P = sp.csr_matrix(self.P, dtype=float)
        if not self.col_blocks:
            self.col_blocks = [("x", n)]
        if not self.row_blocks:
            self.row_blocks = [("r", self.A.shape[0])]
        self.col_labels = _block_labels(self.col_labels, self.col_blocks)

    @property
    def n_cols(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def is_lp(self) -> bool:
        return self.P is None or self.P.nnz == 0

    def objective(self, x: np.ndarray) -> float:
        """f(x) = 1/2 x'Px + c'x + offset."""
        val = float(self.c @ x) + self.offset
        if not self.is_lp:
            val += 0.5 * float(x @ (self.P @ x))
        return val

    def col_names(self) -> list[str]:
        """``<block>_<index>``, or ``<block>_<label>`` for a block with ``col_labels``."""
        return _expand(self.col_blocks, self.col_labels)

    def row_names(self) -> list[str]:
        return _expand(self.row_blocks)

    def block(self, x: np.ndarray, name: str) -> np.ndarray:
        """The slice of a column vector that belongs to the named block."""
        start = 0
        for block_name, size in self.col_blocks:
            if block_name == name:
                return x[start : start + size]
            start += size
        raise KeyError(f"No variable block {name!r}; blocks are {[b for b, _ in self.col_blocks]}.")

    def assert_finite(self) -> None:
        """Raise ValueError if any coefficient is NaN/inf (bounds may be +-inf, never NaN)."""
        checks = {"c": self.c, "A": self.A.data, "offset": np.array([self.offset])}
        if self.P is not None:
            checks["P"] = self.P.data
        for label, arr in checks.items():
            if not np.all(np.isfinite(arr)):
                raise ValueError(
                    f"The model {self.name!r} has NaN or infinite entries in {label}; "
                    "clean the input data (it is checked when a problem is built from arrays)."
                )
        for label, arr in {
            "row bounds": (self.row_lo, self.row_hi),
            "column bounds": (self.col_lo, self.col_hi),
        }.items():
            if np.isnan(arr[0]).any() or np.isnan(arr[1]).any():
                raise ValueError(f"The model {self.name!r} has NaN {label}.")


def _expand(blocks: list[Block], labels: dict[str, list[str]] | None = None) -> list[str]:
    names: list[str] = []
    for name, size in blocks:
        tags = (labels or {}).get(name)
        names.extend(f"{name}_{t}" for t in (range(size) if tags is None else tags))
    return names


def _block_labels(labels: dict[str, list[str]], blocks: list[Block]) -> dict[str, list[str]]:
    """Labels as lists of str, each for a block named once in ``blocks`` and of its size."""
    sizes: dict[str, list[int]] = {}
    for name, size in blocks:
        sizes.setdefault(name, []).append(size)
    out = {}
    for name, tags in (labels or {}).items():
        tags = list(tags)
        if len(sizes.get(name, [])) != 1 or len(tags) != sizes[name][0]:
            raise ValueError(
                f"col_labels[{name!r}] has {len(tags)} labels, but col_labels needs a block "
                f"named once in col_blocks ({blocks[:5]}) and one label per entry; fix the keys "
                "or the lengths."
            )
        if not all(isinstance(t, str) for t in tags):
            raise ValueError(f"col_labels[{name!r}] must hold strings; got {tags[:5]}.")
        out[name] = tags
    return out


@dataclasses.dataclass
class KKTReport:
    """Residuals of a candidate primal-dual pair (see :func:`check_kkt`), all relative, so that
    they are invariant to any rescaling of rows, columns or the objective.

    ``primal_residual``: the largest violation of a row, relative to that row's own scale
    ``max_j |A_ij| * ||x||_inf + |bound_i|``, or of a column bound, relative to
    ``||x||_inf + |bound_j|``. ``dual_residual``: the largest multiplier that points at an
    infinite bound (dual infeasibility), relative to that column's scale
    ``|c_j| + max_i |P_ij| ||x||_inf + max_i |A_ij| ||y||_inf`` (a row multiplier relative to
    ``||y||_inf``). ``gap``: f(x) - g(y), absolute;
    ``gap_scale``: the sum of the magnitudes of the terms of f and g.
    """

    primal_residual: float
    dual_residual: float
    dual_objective: float
    primal_objective: float
    gap: float
    gap_scale: float = 0.0

    @property
    def relative_gap(self) -> float:
        """``gap / gap_scale`` (0 when both are 0)."""
        if self.gap_scale <= 0.0:
            return 0.0 if self.gap == 0.0 else np.inf
        return float(self.gap / self.gap_scale)

    def ok(self, feas_tol: float, gap_tol: float) -> bool:
        """Both residuals within ``feas_tol`` and ``|relative gap|`` within ``gap_tol``."""
        return (
            self.primal_residual <= feas_tol
            and self.dual_residual <= feas_tol
            and abs(self.relative_gap) <= gap_tol
        )


def _abs_max(M: sp.spmatrix, axis: int) -> np.ndarray:
    """Largest |entry| per row (axis=1) or per column (axis=0) of a sparse matrix."""
    return np.asarray(abs(M).max(axis=axis).todense()).ravel()


def _violation(lhs: np.ndarray, rhs: np.ndarray, scale: np.ndarray) -> float:
    """max over finite rhs of (lhs - rhs) / (scale + |rhs|), or 0 (0/0 reads as 0)."""
    fin = np.isfinite(rhs)
    if not fin.any():
        return 0.0
    excess = lhs[fin] - rhs[fin]
    denom = scale[fin] + np.abs(rhs[fin])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(excess > 0, excess / denom, 0.0)
    rel = np.where(np.isnan(rel), np.inf, rel)
    return float(max(0.0, np.max(rel)))


def primal_residual(qp: QPData, x: np.ndarray) -> float:
    """Largest violation of a row or a bound, relative to its own scale (see KKTReport)."""
    ax = qp.A @ x
    x_inf = float(np.max(np.abs(x), initial=0.0))
    row_scale = _abs_max(qp.A, 1) * x_inf if qp.n_rows else np.zeros(0)
    col_scale = np.full(qp.n_cols, x_inf)
    return max(
        _violation(-ax, -qp.row_lo, row_scale),
        _violation(ax, qp.row_hi, row_scale),
        _violation(-x, -qp.col_lo, col_scale),
        _violation(x, qp.col_hi, col_scale),
    )


COL_SCALE_FLOOR = 1e-9
"""A column's dual residual is relative to its terms plus this share of the largest column's."""


def check_kkt(
    qp: QPData, x: np.ndarray, y: np.ndarray | None, scale_floor: float = 0.0
) -> KKTReport:
    """Primal and dual residuals and the gap f(x) - g(y) of the module docstring.

    Multipliers that would need an infinite bound are left out of g and counted in the dual
    residual instead; without duals the gap is ``inf``. ``scale_floor`` is a least value for the
    gap's scale: a model whose optimum is 0 at x = 0 (an interpolating fit) has vanishing terms,
    and the caller's natural scale of the problem keeps round-off from reading as a 100% gap.
    """
    f = qp.objective(x)
    pres = primal_residual(qp, x)
    if y is None:
        return KKTReport(pres, np.inf, -np.inf, f, np.inf, max(abs(f), scale_floor))
    z = qp.c - qp.A.T @ y
    g = qp.offset
    x_inf = float(np.max(np.abs(x), initial=0.0))
    y_inf = float(np.max(np.abs(y), initial=0.0))
    # a column's dual residual is relative to the magnitude of the terms z_j sums,
    # |c_j| + sum_i |A_ij y_i| (what round-off in z_j scales with). The cruder
    # max_i |A_ij| * max_i |y_i| let a constraint row of unit entries and zero multiplier set
    # the scale of a column whose data entries are 1e-10: a reduced cost 8e-8 pressing on an
    # infinite bound then read as 6e-8 relative, and an invalid "bound" passed (issue 33).
    # A floor of 1e-9 of the largest column's terms keeps a multiplier of round-off size
    # (1e-17 on a row a Farkas ray does not use) from reading as a residual of 100 %.
    col_terms = np.abs(qp.c) + (abs(qp.A).T @ np.abs(y) if qp.n_rows else 0.0)
    col_scale = col_terms + COL_SCALE_FLOOR * float(np.max(col_terms, initial=0.0))
    terms = float(np.abs(qp.c) @ np.abs(x)) + abs(qp.offset)
    if not qp.is_lp:
        px = qp.P @ x
        z = z + px
        xpx = float(x @ px)
        g -= 0.5 * xpx
        terms += abs(xpx)
        col_scale = col_scale + _abs_max(qp.P, 0) * x_inf
    g_rows, bad_rows, mag_rows = _bound_term(y, qp.row_lo, qp.row_hi, np.full(qp.n_rows, y_inf))
    g_cols, bad_cols, mag_cols = _bound_term(z, qp.col_lo, qp.col_hi, col_scale)
    g += g_rows + g_cols
    return KKTReport(pres, max(bad_rows, bad_cols), g, f, float(f - g), terms + mag_rows + mag_cols)


def _bound_term(
    m: np.ndarray, lo: np.ndarray, hi: np.ndarray, scale: np.ndarray
) -> tuple[float, float, float]:
    """(sum of m_i times the bound it presses on, largest relative |m_i| pressing on an infinite
    bound, relative to ``scale``, sum of the magnitudes |m_i * bound_i|)."""
    pos = m > 0
    on_lo = pos & np.isfinite(lo)
    on_hi = ~pos & np.isfinite(hi)
    val = float(m[on_lo] @ lo[on_lo] + m[on_hi] @ hi[on_hi])
    mag = float(np.abs(m[on_lo]) @ np.abs(lo[on_lo]) + np.abs(m[on_hi]) @ np.abs(hi[on_hi]))
    free = ~(on_lo | on_hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(m[free]) / scale[free]
    rel = np.where(np.isnan(rel), 0.0, rel)
    return val, float(rel.max(initial=0.0)), mag


def farkas_ok(qp: QPData, y: np.ndarray | None, tol: float = 1e-6) -> bool:
    """True when the row multipliers ``y`` (either sign) prove that ``qp`` has no feasible point.

    With ``z = -A'y`` the bound multipliers, weak duality on the feasibility problem (c = 0)
    gives ``g(y) <= 0`` for every feasible model; ``g(y) > tol * (magnitude of its terms)``
    with no multiplier pressing on an infinite bound is therefore a proof of infeasibility.
    """
    if y is None or y.shape != (qp.n_rows,) or not np.all(np.isfinite(y)) or not y.any():
        return False
    feas = dataclasses.replace(qp, c=np.zeros(qp.n_cols), P=None, offset=0.0)
    for ray in (y, -y):
        rep = check_kkt(feas, np.zeros(qp.n_cols), ray)
        if rep.dual_residual <= tol and rep.dual_objective > tol * rep.gap_scale > 0:
            return True
    return False


def ray_ok(qp: QPData, d: np.ndarray | None, tol: float = 1e-6) -> bool:
    """True when the direction ``d`` proves that ``qp`` is unbounded below (given a feasible
    point): it stays feasible along ``d`` (rows and bounds in their recession cones), leaves the
    quadratic flat (``P d = 0``) and decreases the objective (``c'd < 0``), all relative to the
    magnitudes involved."""
    if d is None or d.shape != (qp.n_cols,) or not np.all(np.isfinite(d)) or not d.any():
        return False
    d = d / np.max(np.abs(d))
    ad = qp.A @ d
    row_mag = _abs_max(qp.A, 1) if qp.n_rows else np.zeros(0)
    ok_rows = np.all(
        (~np.isfinite(qp.row_lo) | (ad >= -tol * row_mag))
        & (~np.isfinite(qp.row_hi) | (ad <= tol * row_mag))
    )
    ok_cols = np.all(
        (~np.isfinite(qp.col_lo) | (d >= -tol)) & (~np.isfinite(qp.col_hi) | (d <= tol))
    )
    cd = float(qp.c @ d)
    flat = True
    if not qp.is_lp:
        flat = float(np.max(np.abs(qp.P @ d))) <= tol * float(np.max(np.abs(qp.P.data)))
    c_mag = float(np.abs(qp.c) @ np.abs(d))
    return bool(ok_rows and ok_cols and flat and cd < -tol * c_mag)


def sign_feasible(qp: QPData, y: np.ndarray) -> np.ndarray:
    """``y`` with every multiplier that presses on an infinite side set to 0 (``y_i > 0``
    needs a finite ``row_lo_i``, ``y_i < 0`` a finite ``row_hi_i``); a new array."""
    y = np.asarray(y, dtype=float)
    return np.where(((y > 0) & ~np.isfinite(qp.row_lo)) | ((y < 0) & ~np.isfinite(qp.row_hi)),
                    0.0, y)


def separable_dual_bound(qp: QPData, y: np.ndarray) -> float:
    """The Lagrangian dual function at the row multipliers ``y``, exactly, for a QP whose ``P``
    is diagonal (the constrained SVM and ridge primals): with ``q = c - A'y``,

        g(y) = offset + sum_i [y_i]_+ row_lo_i - [y_i]_- row_hi_i
               + sum_j min_{col_lo_j <= x_j <= col_hi_j} (1/2 P_jj x_j^2 + q_j x_j),

    each column's minimum in closed form (``x_j = clip(-q_j / P_jj)`` where ``P_jj > 0``;
    ``q_j col_lo_j`` or ``q_j col_hi_j`` where ``P_jj = 0``). By weak duality g(y) is a lower
    bound on the optimum for *every* y, so, unlike :func:`check_kkt`'s g, no dual residual is
    left out of it: a row multiplier pressing on an infinite side is set to 0 first (still a
    valid y), and a column with ``P_jj = 0`` whose ``q_j`` presses on an infinite bound makes
    the bound ``-inf`` unless ``|q_j|`` is within :data:`solvers.result.RESOLUTION` of the
    terms it sums (round-off of a q_j that the caller made 0, such as the SVM's intercept
    column after balancing alpha). Raises ValueError when ``P`` is not diagonal."""
    import scipy.sparse as sp

    from solvers.result import RESOLUTION

    p_diag = np.zeros(qp.n_cols) if qp.is_lp else qp.P.diagonal()
    if not qp.is_lp and (qp.P - sp.diags(p_diag)).count_nonzero():
        raise ValueError(f"separable_dual_bound needs a diagonal P; {qp.name!r} has off-diagonal "
                         "entries (use check_kkt's gap instead).")
    y = sign_feasible(qp, y)
    rows = float(y[y > 0] @ qp.row_lo[y > 0] + y[y < 0] @ qp.row_hi[y < 0])
    q = qp.c - qp.A.T @ y
    lo, hi = qp.col_lo, qp.col_hi
    curved = p_diag > 0
    x = np.clip(-q[curved] / p_diag[curved], lo[curved], hi[curved])
    cols = float(x @ (q[curved] + 0.5 * p_diag[curved] * x))
    flat = ~curved
    qf, lof, hif = q[flat], lo[flat], hi[flat]
    terms = np.abs(qp.c[flat]) + (abs(qp.A).T @ np.abs(y))[flat]
    zero = np.abs(qf) <= RESOLUTION * terms
    up, down = (qf > 0) & ~zero, (qf < 0) & ~zero
    if np.any(up & ~np.isfinite(lof)) or np.any(down & ~np.isfinite(hif)):
        return -np.inf
    cols += float(qf[up] @ lof[up] + qf[down] @ hif[down])
    return float(qp.offset + rows + cols)
