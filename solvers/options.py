"""Every strategy option as data: one table per strategy, validated from the table.

An :class:`Option` records an option's name, kind, default, allowed range or choices, meaning
and the paper's symbol. :func:`validate_options` converts what a user gave (Python values, or
the strings of the command line) and refuses anything else with one message template::

    The 'tol' option of strategy 'full' of lad must be a float in the range [0, inf).
    Got 'abc' instead.

The tables mirror the keyword arguments of the routines they configure (``aid_lad``,
``aid_svm``, ``smo_svm``, ``block_svm``, ``smo_klr``, ``block_klr``, ``solve_ridge`` and each
problem's ``solve_full``) minus those the problem supplies; a test keeps them equal.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from solvers.errors import DataError
from solvers.result import CERTIFICATE_TOL
from solvers.sketch.methods import (  # noqa: F401
    DEFAULT_SKETCH_SIZE,
    PCG_MAX_ITER,
    RIDGE_METHODS,
    sketch_size,
)
from solvers.validation import describe_range, invalid, to_bool, to_number

# Choices and defaults of solvers.aid, kept here so this table module stays import-light
# (tests/test_options.py checks them against solvers.aid's own constants).
LAD_METHODS = ("pk", "band", "quantile", "kmeans")
SVM_METHODS = ("band", "quantile", "kmeans")
SPLIT_RULES = ("refine", "sign")
LAD_SPLIT_RULES = ("auto", "refine", "sign", "near")
LAD_LP_SOLVERS = ("auto", "ipm", "simplex")
SUBSOLVERS = ("clarabel", "highs")
DEFAULT_LAD_CLUSTERS = DEFAULT_SVM_CLUSTERS = 1000

KINDS = ("int", "float", "bool", "choice", "array", "callable", "mapping", "object")
"""Option kinds. The last four are Python-only values (arrays, callbacks, dicts, objects)."""

_PYTHON_ONLY = {"array": "an array", "callable": "a callable", "mapping": "a dict",
                "object": "a Python object"}


@dataclasses.dataclass(frozen=True)
class Option:
    """One strategy option: kind, default, accepted values, meaning and the paper's symbol.

    ``low``/``high`` bound numbers (``closed`` says which ends are allowed: "both", "left",
    "right", "neither"); ``choices`` are the accepted strings of a "choice" option (matched
    without regard to case); ``none_ok`` accepts None (the string "none" on the command line);
    ``fraction`` lets an "int" option also take a float in (0, 1], a share of n; ``or_array``
    lets a "choice" option also take an array (e.g. your own cluster labels); numbers must be
    finite unless ``inf_ok`` (a limit that +inf lifts). Numbers are checked by
    :func:`solvers.validation.to_number`, as problem parameters are.
    """

    name: str
    kind: str
    default: Any
    meaning: str
    symbol: str = ""
    low: float | None = None
    high: float | None = None
    closed: str = "both"
    choices: tuple[str, ...] = ()
    none_ok: bool = False
    fraction: bool = False
    or_array: bool = False
    inf_ok: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Option kind must be one of {KINDS}; got {self.kind!r}.")

    def describe(self) -> str:
        """The accepted values in words, e.g. "an int in the range [1, inf) or None"."""
        if self.kind == "bool":
            text = "a bool (true/false/1/0)"
        elif self.kind == "choice":
            text = f"one of {{{', '.join(map(repr, self.choices))}}}"
            text += " or an array" if self.or_array else ""
        elif self.kind in _PYTHON_ONLY:
            text = f"{_PYTHON_ONLY[self.kind]} (from Python only)"
        else:
            text = describe_range(self.kind, self.low, self.high, self.closed,
                                  inf_ok=self.inf_ok)
            text += " or a fraction in (0, 1] of n" if self.fraction else ""
        return text + (" or None" if self.none_ok else "")

    def convert(self, value: Any) -> Any:
        """The value in its kind, or ValueError (the caller words the message)."""
        if value is None or (isinstance(value, str) and value.lower() == "none"):
            if self.none_ok:
                return None
            raise ValueError
        if self.kind == "bool":
            return to_bool(value)
        if self.kind == "choice":
            return self._to_choice(value)
        if self.kind in _PYTHON_ONLY:
            return _to_python_only(self.kind, value)
        return self._to_number(value)

    def _to_choice(self, value: Any) -> Any:
        if self.or_array and isinstance(value, (np.ndarray, list, tuple)):
            return value
        if isinstance(value, str):
            for choice in self.choices:
                if value.lower() == choice.lower():
                    return choice
        raise ValueError

    def _to_number(self, value: Any) -> float | int:
        """:func:`solvers.validation.to_number` on the option's range; with ``fraction`` a
        non-integer in (0, 1] is kept as a share of n."""
        whole = isinstance(value, numbers.Integral) or (
            isinstance(value, str) and value.strip().lstrip("+-").isdigit())
        if self.fraction and not whole:
            share = to_number(value, "float")
            if 0.0 < share <= 1.0:
                return share
        return to_number(value, self.kind, self.low, self.high, self.closed, inf_ok=self.inf_ok)


def _to_python_only(kind: str, value: Any) -> Any:
    if isinstance(value, str):
        raise ValueError
    if kind == "array" and not isinstance(value, (np.ndarray, list, tuple)):
        raise ValueError
    if kind == "callable" and not callable(value):
        raise ValueError
    if kind == "mapping" and not isinstance(value, Mapping):
        raise ValueError
    return value


OptionTable = Mapping[str, Option]


def table(*options: Option) -> dict[str, Option]:
    """A table keyed by option name (names must be unique)."""
    out = {o.name: o for o in options}
    if len(out) != len(options):
        raise ValueError("Option names in one table must be unique.")
    return out


def refuse_unknown(table: Mapping[str, Any], given: Mapping[str, Any], owner: str,
                   noun: str) -> None:
    """DataError listing the valid names when ``given`` has a name ``table`` does not."""
    unknown = sorted(set(given) - set(table))
    if unknown:
        raise DataError(
            f"Unknown {noun}(s) {', '.join(map(repr, unknown))} for {owner}; "
            f"valid {noun}s are {', '.join(sorted(table))}."
        )


def validate_options(table: OptionTable, given: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """Convert and check ``given`` against ``table``; return the converted options.

    Raises DataError (a ValueError) naming the option, the accepted values and, for an unknown
    name, the valid option names. Options not given are left out (the routine's defaults apply).
    """
    refuse_unknown(table, given, owner, "option")
    out = {}
    for name, value in given.items():
        spec = table[name]
        try:
            out[name] = spec.convert(value)
        except (ValueError, TypeError, OverflowError):
            raise invalid(name, owner, spec.describe(), value, noun="option") from None
    return out


def describe_table(table: OptionTable) -> str:
    """One line per option: name, accepted values, default and meaning (for help texts)."""
    lines = []
    for o in table.values():
        symbol = f" ({o.symbol})" if o.symbol else ""
        lines.append(f"{o.name}{symbol}: {o.meaning} [{o.describe()}; default {o.default!r}]")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- shared options
def _verbose(meaning: str = "print progress lines") -> Option:
    return Option("verbose", "bool", False, meaning)


def _max_iter(default: int | None, meaning: str, symbol: str = "") -> Option:
    return Option("max_iter", "int", default, meaning, symbol, low=1, none_ok=default is None)


def _time_limit(meaning: str = "wall-clock limit in seconds (TIME_LIMIT when reached)") -> Option:
    return Option("time_limit", "float", None, meaning, low=0.0, closed="neither", none_ok=True,
                  inf_ok=True)


def _tol(default: float, meaning: str, symbol: str = "", *, zero_ok: bool = False) -> Option:
    return Option("tol", "float", default, meaning, symbol, low=0.0,
                  closed="left" if zero_ok else "neither")


# ---------------------------------------------------------------------------- AID
def _aid_common(default_clusters: int, split: Option) -> tuple[Option, ...]:
    return (
        Option("n_clusters", "int", default_clusters,
               "initial number of clusters (a float in (0, 1] is a share of n; not used by "
               "init='pk', which sizes itself)", "|K^0|", low=1, fraction=True),
        Option("gap_tol", "float", 0.0,
               "stop with GAP_LIMIT once (E_best - F) / natural scale <= gap_tol (0: certify)",
               "epsilon", low=0.0),
        _max_iter(100, "AID iterations (ITERATION_LIMIT when reached)", "T"),
        _time_limit(),
        split,
        Option("zero_tol", "float", 1e-9,
               "residuals (LAD) / margins (SVM) this close to zero fit either sign", low=0.0),
        _verbose("print iteration, clusters, F, E, gap"),
        Option("seed", "int", 0, "seed of the subsample / k-means of the initial clustering",
               low=0),
    )


AID_LAD = table(
    *_aid_common(DEFAULT_LAD_CLUSTERS, Option(
        "split", "choice", "auto",
        "split rule: 'sign' (the paper's 2-way), 'refine' (4-way), 'near' (misfits of a "
        "cluster become singletons); 'auto' = near with lp='ipm', else refine",
        choices=LAD_SPLIT_RULES)),
    Option("init", "choice", "auto",
           "initial clustering: 'pk' (Portnoy-Koenker band of singletons and two globs), "
           "'band', 'quantile', 'kmeans', or your labels; 'auto' = pk, or band with "
           "lp='simplex'", choices=("auto", *LAD_METHODS), or_array=True),
    Option("lp", "choice", "auto",
           "solver of the aggregated LP: 'ipm' (Frisch-Newton interior point) or 'simplex' "
           "(HiGHS, warm-started); 'auto' = ipm with init='pk', else simplex",
           choices=LAD_LP_SOLVERS),
    Option("warm_start", "bool", True,
           "lp='simplex' or constraints: keep the HiGHS model and basis between iterations "
           "(with constraints, False solves the primal form cold each iteration)"),
    Option("sift", "bool", True,
           "lp='simplex' with warm_start: fix pure clusters at a bound so the simplex prices "
           "few columns (the interior point always sifts after its first solve)"),
    Option("callback", "callable", None,
           "callback(iteration, highs, labels) after each aggregated solve", none_ok=True),
)

AID_SVM = table(
    *_aid_common(DEFAULT_SVM_CLUSTERS, Option(
        "split", "choice", "refine", "split rule: 'sign' (the paper's 2-way) or 'refine' (4-way)",
        choices=SPLIT_RULES)),
    Option("init", "choice", "auto",
           "initial clustering: 'auto' = band (linear) / kmeans (kernel), or your labels",
           choices=("auto", *SVM_METHODS), or_array=True),
    Option("subsolver", "choice", "clarabel", "solver of the aggregated linear primal",
           choices=SUBSOLVERS),
)


# ---------------------------------------------------------------------------- SMO / block
_CACHE_MB = Option("cache_mb", "float", 200.0, "kernel column cache budget in MB",
                   low=0.0, closed="neither")
_SHRINKING = Option("shrinking", "bool", True, "LIBSVM shrinking of the working set")
_ALPHA0 = Option("alpha0", "array", None, "warm start alpha (clipped into the box)",
                 "alpha^0", none_ok=True)
_CACHE_DTYPE = Option("cache_dtype", "choice", "auto",
                      "storage of cached kernel columns ('auto': float32 only when Q does not "
                      "fit cache_mb in float64)", choices=("auto", "float64", "float32"))
_WORKING_SET = Option(
    "working_set", "int", None,
    "variables per SMO step: 2 is LIBSVM's pairwise SMO; q > 2 computes the q most "
    "violating variables' columns of Q in one pass and solves their subproblem by pairwise "
    "SMO (both shrink); default: pairwise for n <= 1024, else 256", "q", low=2,
    none_ok=True)
_Q = Option("q", "int", 10, "working-set size of the block subproblems", "q", low=2)
_SMO_TOL = "stop when max_{I_up} m - min_{I_low} m <= tol"
_REFINE = Option("refine", "bool", True,
                 "after tol is met, continue with tighter tolerances (tol / 10 a round; the SVM "
                 "by SMO: the tol predicted from the gap) until the certificate holds; OPTIMAL "
                 "only then")

SMO_SVM = table(
    _tol(1e-3, _SMO_TOL, "tau"), _CACHE_MB, _SHRINKING,
    _max_iter(10_000_000, "SMO steps (ITERATION_LIMIT when reached)"), _ALPHA0, _CACHE_DTYPE,
    _REFINE, _verbose(), _WORKING_SET,
)
BLOCK_SVM_SOLVERS = ("highs", "ipm-nystroem", "ipm-cholesky")  # = block.SVM_SUBSOLVERS
BLOCK_SVM = table(
    _Q, _tol(1e-3, _SMO_TOL, "tau"), _CACHE_MB,
    _max_iter(100_000, "block steps (ITERATION_LIMIT when reached)"), _REFINE,
    Option("solver", "choice", "highs",
           "QP solver of the block subproblems: 'highs' (active set), 'ipm-nystroem' (interior "
           "point, Newton systems by CG preconditioned with a Nystroem approximation of Q_BB "
           "plus the barrier diagonal; faster than HiGHS only for large q and a fast-decaying "
           "kernel spectrum) or 'ipm-cholesky' (the same interior point, dense Cholesky Newton "
           "solves)",
           choices=BLOCK_SVM_SOLVERS),
    _verbose(),
)
SMO_KLR = table(
    Option("tol", "float", None,
           "stop when max_{I_up} m - min_{I_low} m <= tol; default: stop as soon as the "
           "relative duality gap (checked in the loop) is within the certificate tolerance, at "
           "the latest at violation 1e-6", "tau", low=0.0, closed="neither", none_ok=True),
    _CACHE_MB, _SHRINKING,
    _max_iter(10_000_000, "SMO steps (ITERATION_LIMIT when reached)"), _ALPHA0,
    Option("sparse_tol", "float", 1e-3,
           "row i is support when alpha_i > gamma_i + sparse_tol * C_i", low=0.0),
    Option("cache_dtype", "choice", "auto",
           "storage of cached kernel columns ('auto': float64, as KLR's gradient takes a full "
           "block of columns per step; 'float32': half the memory, certified from Q alpha "
           "recomputed in float64)", choices=("auto", "float64", "float32")),
    _REFINE, _verbose(), _WORKING_SET,
    Option("start", "choice", "auto",
           "alpha^0 without alpha0: 'keerthi' (equal class sums), 'pilot' (a fit on a random "
           "tenth of the rows mapped to all by alpha_i = C_i sigma(lam - y_i f(x_i)); about a "
           "quarter less time at 5*10^4 rows), 'auto' (pilot from 10,000 rows when Q does not "
           "fit cache_mb)",
           choices=("auto", "keerthi", "pilot")),
)
BLOCK_KLR = table(
    _Q, _tol(1e-6, _SMO_TOL, "tau"),
    Option("solver", "choice", "CLARABEL", "CVXPY solver of the block subproblems",
           choices=("CLARABEL", "ECOS")),
    _CACHE_MB, _max_iter(100_000, "block steps (ITERATION_LIMIT when reached)"), _REFINE,
    _verbose(),
)


# ---------------------------------------------------------------------------- ridge sketches
_RIDGE_COMMON = (
    Option("m", "int", None,
           "sketch size (rows of B or S), at most d; default min(256, d), for pcg-* the "
           "largest m <= min(256, d) whose sampled sketch costs at most 4 passes over A (PCG "
           "needs m above the effective rank of A; beyond it a larger m only adds sketch "
           "time), built only when plain CG's first iterations predict more than 8 more; a "
           "larger m is an error", "ell", low=1, none_ok=True),
    _tol(1e-10, "stop with OPTIMAL once ||grad f(x)|| <= tol (||A'Ax|| + gamma ||x|| + "
         "||A'b||)", "epsilon", zero_ok=True),
    Option("x_star", "array", None,
           "the exact solution, to record ||x_t - x*|| / ||x*|| (the toolkit passes it for "
           "d <= 2000 and n d^2 <= 1e10)", "x*", none_ok=True),
    Option("block_size", "int", 4096, "rows per block when streaming A through a sketch", low=1),
    _verbose("print one line per iteration"),
)
_RIDGE_MAX_ITER = _max_iter(
    None, f"iterations (passes over A); default 10 (the paper's experiment), {PCG_MAX_ITER} "
    "for pcg-*", "t")
_RIDGE_SEED = Option("seed", "int", 0, "seed of the random sketches", low=0, none_ok=True)
_RIDGE_SKETCH = Option("sketch", "object", None,
                       "a finished FrequentDirections sketch of A with m rows to reuse",
                       none_ok=True)

_RIDGE_SKETCH_ROWS = Option(
    "sketch_rows", "int", None,
    "rows of A the PCG preconditioner sketches: a length-squared sample of this many; "
    "default min(n, 8 m); n or more sketches every row", low=1, none_ok=True)

RIDGE_FD_FAMILIES = ("fdrr", "rfdrr", "fd", "rfd", "pcg")
RIDGE_ITERATIVE_FAMILIES = ("fd", "rfd", "ihs", "single", "pcg")


def _ridge_table(method: str) -> dict[str, Option]:
    family = method.partition("-")[0]
    extra = [_RIDGE_MAX_ITER] if family in RIDGE_ITERATIVE_FAMILIES else []
    extra.append(_RIDGE_SKETCH if family in RIDGE_FD_FAMILIES else _RIDGE_SEED)
    if family == "pcg":  # the preconditioner's row sample
        extra += [_RIDGE_SKETCH_ROWS, _RIDGE_SEED]
    return table(*_RIDGE_COMMON, *extra)


RIDGE = {method: _ridge_table(method) for method in RIDGE_METHODS if method != "cholesky"}
"""One table per ridge sketching method: one-shot methods take no max_iter, the FD-based ones
no seed (they are deterministic) except pcg-* (seed and sketch_rows of its row sample), and the
random ones no sketch."""


# ---------------------------------------------------------------------------- Newton-CG
NEWTON_PRECONDITIONERS = ("none", "diag", "fd", "rfd")
NEWTON_REWEIGHTS = ("scalar", "resketch")

def _newton_table(scale: str) -> dict[str, Option]:
    """The options of ``sketched_newton`` when the problem fixes the data, the weights, the loss
    and the unregularised intercept; ``scale`` is the loss's f(0) in the ``tol`` text."""
    return table(
        Option("preconditioner", "choice", "rfd",
               "preconditioner of CG: none (also None), diag (Jacobi), fd / rfd (I + B'B from a "
               "sketch)", choices=NEWTON_PRECONDITIONERS, none_ok=True),
        Option("m", "int", None, "sketch size (rows of B), at most d + 1; default min(d + 1, 64)",
               "ell", low=1, none_ok=True),
        Option("reweight", "choice", "scalar",
               "'scalar': one sketch of sqrt(C) A rescaled per step; 'resketch': a new sketch of "
               "sqrt(D) A when the weights moved by more than resketch_tol",
               choices=NEWTON_REWEIGHTS),
        Option("resketch_tol", "float", 0.5, "relative weight change that triggers a new sketch",
               low=0.0),
        Option("scale_columns", "bool", True, "sketch the column-scaled A (Jacobi first)"),
        _tol(1e-14, f"stop with OPTIMAL once ||grad||^2 / (2 {scale}) <= tol"),
        _max_iter(100, "Newton steps (ITERATION_LIMIT when reached)"),
        Option("cg_tol", "float", 0.1, "cap of the CG forcing term eta", low=0.0, high=1.0),
        Option("cg_max_iter", "int", None, "CG iterations per Newton step; default max(100, 2d')",
               low=1, none_ok=True),
        Option("block_size", "int", 4096, "rows per block when streaming A through a sketch",
               low=1),
    )


NEWTON_SVM = _newton_table("sum_i C_i")
"""The options of ``sketched_newton`` for the squared-hinge SVM."""
NEWTON_KLR = _newton_table("log(2) sum_i C_i")
"""The options of ``sketched_newton`` for plain KLR with the linear kernel (logistic loss)."""


# ---------------------------------------------------------------------------- interior point
IPM_REWEIGHTS = ("active", "resketch", "scalar")
IPM_LINEAR_SOLVERS = ("auto", "cholesky", "cg")
IPM_AUTO_CHOLESKY_MAX_P = 1000

IPM_SVM = table(
    Option("linear_solver", "choice", "auto",
           "Newton system per step: 'cholesky' (form and factor the (p+1) x (p+1) matrix, "
           "n p^2 flops), 'cg' (block CG with `preconditioner`), 'auto' (cholesky when p <= "
           f"{IPM_AUTO_CHOLESKY_MAX_P}, else cg)", choices=IPM_LINEAR_SOLVERS),
    Option("preconditioner", "choice", "rfd",
           "preconditioner of CG on I + X'DX (linear_solver='cg'): none (also None), diag "
           "(Jacobi), fd / rfd (Sigma (E + B'B) Sigma from a sketch)",
           choices=NEWTON_PRECONDITIONERS, none_ok=True),
    Option("reweight", "choice", "active",
           "rows sketched per step: 'active' (those holding all but active_tol of the trace of "
           "X'DX; exact when at most m), 'resketch' (all rows), 'scalar' (one sketch of "
           "sqrt(C) X, rescaled)", choices=IPM_REWEIGHTS),
    Option("m", "int", None, "sketch size (rows of B), at most p; default min(p, 64)", "ell",
           low=1, none_ok=True),
    Option("active_tol", "float", 0.01,
           "share of the trace of X'DX left to the diagonal part E (reweight='active')",
           low=0.0, high=1.0, closed="left"),
    _tol(1e-9, "stop with OPTIMAL once the duality gap (P - D) / sum_i C_i <= tol"),
    _max_iter(100, "interior-point steps (ITERATION_LIMIT when reached)"),
    Option("cg_tol", "float", 0.1, "CG relative residual cap; shrinks with mu / mu_0",
           low=0.0, high=1.0),
    Option("cg_max_iter", "int", None, "CG iterations per system; default max(100, 2p)",
           low=1, none_ok=True),
    Option("block_size", "int", 4096, "rows per block when streaming rows through a sketch",
           low=1),
)
"""The options of ``ipm_svm`` for the linear hinge-loss SVM (the problem fixes the data and
the weights)."""


def ridge_unused(method: str) -> frozenset[str]:
    """Keywords of solve_ridge that ``method`` does not use (and so refuses as options)."""
    all_names = {"max_iter", "seed", "sketch", "sketch_rows"}
    return frozenset(all_names - set(RIDGE[method]))


# ---------------------------------------------------------------------------- full solves
_QP_SOLVERS = ("highs", "clarabel", "ecos")
_CERTIFY = "accept as optimal only if (objective - bound) / the problem's scale is <= tol"
_BACKEND_OPTIONS = Option("options", "mapping", None,
                          "backend options passed through unchanged", none_ok=True)


_FULL_MAX_ITER = _max_iter(None, "backend iteration limit (ITERATION_LIMIT when reached; None: "
                           "the backend's)")


def _solver(default: str, choices: tuple[str, ...]) -> Option:
    return Option("solver", "choice", default, "backend of the monolithic solve", choices=choices)


FULL: dict[str, dict[str, Option]] = {
    "lad": table(
        _solver("highs", _QP_SOLVERS),
        Option("form", "choice", "dual", "model solved: the primal LP or its (faster) dual",
               choices=("primal", "dual")),
        _tol(CERTIFICATE_TOL, _CERTIFY, zero_ok=True),
        _time_limit(), _FULL_MAX_ITER, _verbose("print the backend's log"), _BACKEND_OPTIONS,
    ),
    "svm": table(
        _solver("clarabel", _QP_SOLVERS),
        Option("form", "choice", "auto", "'auto': primal for the linear kernel, else dual",
               choices=("auto", "primal", "dual")),
        _tol(CERTIFICATE_TOL, _CERTIFY, zero_ok=True),
        _time_limit(), _FULL_MAX_ITER, _verbose("print the backend's log"), _BACKEND_OPTIONS,
    ),
    "klr": table(
        _solver("clarabel", ("clarabel", "ecos")),
        _tol(CERTIFICATE_TOL, _CERTIFY, zero_ok=True),
        Option("factor_tol", "float", 1e-10,
               "eigenvalues of K below factor_tol * max are dropped from its factor",
               low=0.0),
        _time_limit(), _max_iter(None, "backend iteration limit (None: the backend's)"),
        _verbose("print the backend's log"), _BACKEND_OPTIONS,
    ),
    "ridge": table(
        _solver("cholesky", ("cholesky", *_QP_SOLVERS)),
        _tol(CERTIFICATE_TOL, _CERTIFY, zero_ok=True),
        _time_limit(), _FULL_MAX_ITER, _verbose("print the backend's log"), _BACKEND_OPTIONS,
    ),
}
"""The options of each problem's ``solve_full``."""


def kinds_for_cli(table_: OptionTable) -> list[str]:
    """Names of the options that can be given as KEY=VALUE strings (not Python-only)."""
    return [n for n, o in table_.items() if o.kind not in _PYTHON_ONLY]

