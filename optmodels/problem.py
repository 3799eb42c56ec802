"""What every problem shares: a parameter table, validated data, strategies and export.

A problem is a plain object holding validated data and hyperparameters. It *declares* its
algebraic model (``qp()`` for the LP/QP ones, ``cvxpy_problem()`` for the conic KLR dual) and
never solves on construction. ``solve(strategy=...)`` looks the strategy up in
:mod:`optmodels.strategies`; ``"full"`` is the verified monolithic solve, run inside the guards
of :mod:`optmodels.guards` (memory budget, default time limit, progress line).

Parameters are fixed at construction: what depends on them (the SVM box C_i, the kernel, the
ridge working data) is built once, so assigning one afterwards raises AttributeError; create a
new problem instead. Every result of ``solve`` carries ``extra["run"]``, the record of the run
(:func:`run_record`).
"""

from __future__ import annotations

import functools
import platform
import sys
import time
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from optmodels.validation import Param, validate_params
from solvers import threads
from solvers.backend import solve_qp
from solvers.errors import DataError
from solvers.qp import QPData
from solvers.result import (
    CERTIFICATE_TOL,
    SolutionCertificate,
    SolutionStatus,
    SolveResult,
    TerminationCondition,
    certify,
)
from solvers.rows import is_dask

if TYPE_CHECKING:
    from optmodels.kernel_check import KernelCheck
    from solvers.kernels import Kernel


class FrozenParams(dict):
    """The validated parameters: a dict that refuses changes (TypeError) and pickles."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "A problem's parameters are fixed at construction; create a new problem with the "
            "parameters you want."
        )

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = clear = setdefault = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type, tuple[dict]]:
        return FrozenParams, (dict(self),)


def check_feature_names(names: Any, p: int) -> tuple[str, ...] | None:
    """``None``, or ``names`` as a tuple of exactly ``p`` strings (duplicates allowed)."""
    if names is None:
        return None
    if isinstance(names, (str, bytes, set, frozenset, dict)) or not hasattr(names, "__len__"):
        raise ValueError(
            f"feature_names must be None or a sequence of {p} strings, one per column of X; "
            f"got {type(names).__name__} {str(names)[:60]!r}. Pass a list such as "
            "['age', 'dose'], or None for the default names."
        )
    out = tuple(names)
    if len(out) != p or not all(isinstance(s, str) for s in out):
        bad = next((s for s in out if not isinstance(s, str)), None)
        got = f"{len(out)} names" if len(out) != p else f"the non-string {bad!r}"
        raise ValueError(
            f"feature_names must hold exactly {p} strings (one per column of X); got {got}. "
            "Pass one string per column, or None for the default names."
        )
    return tuple(str(s) for s in out)


class Problem:
    """Base class; subclasses set ``NAME``, ``PARAMS`` and the model methods."""

    NAME: ClassVar[str] = ""
    PARAMS: ClassVar[dict[str, Param]] = {}
    DASK_STRATEGIES: ClassVar[tuple[str, ...]] = ()
    """The strategies that run on a row-chunked Dask X, chunk by chunk on the active Dask
    scheduler (the data stay lazy); every other strategy, ``qp()``, ``pyomo_model()`` and
    ``write()`` refuse a Dask X with :meth:`require_in_memory`'s message."""

    def _set_params(self, given: dict[str, Any]) -> None:
        """Validate the parameters, set them as attributes and freeze them (read-only)."""
        params = validate_params(type(self).__name__, self.PARAMS, given)
        for key, value in params.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "params", FrozenParams(params))

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "params" or (name in type(self).PARAMS and "params" in self.__dict__):
            cls = type(self).__name__
            shown = f" with {name}={value!r}" if name != "params" else ""
            raise AttributeError(
                f"The parameters of {cls} are fixed at construction (the model is built from "
                f"them); create a new {cls}(...){shown} instead."
            )
        object.__setattr__(self, name, value)

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        """The names of the p columns of X, or None (the models then name their coefficient
        columns ``beta_j``/``w_j``/``x_j``). Not a parameter: the exported LAD ``beta``, SVM
        primal ``w`` and ridge ``x`` columns are named after them (``beta_age``), nothing else
        depends on them. Assigning validates (:func:`check_feature_names`)."""
        return self.__dict__.get("_feature_names")

    @feature_names.setter
    def feature_names(self, names: Any) -> None:
        object.__setattr__(self, "_feature_names", check_feature_names(names, self.p))

    def _labels(self, block: str) -> dict[str, list[str]]:
        """``QPData.col_labels`` naming the p-sized ``block`` after the features (or none)."""
        names = self.feature_names
        return {} if names is None else {block: list(names)}

    @property
    def X(self) -> np.ndarray:
        """The validated data matrix (read-only by convention)."""
        return self._X

    @property
    def lazy(self) -> bool:
        """True when X is a row-chunked Dask array (kept lazy: see ``DASK_STRATEGIES``)."""
        return is_dask(self.__dict__.get("_X"))

    def require_in_memory(self, what: str) -> None:
        """ValueError when X is a Dask array: ``what`` needs every row in memory."""
        if not self.lazy:
            return
        mb = self.n * self.p * 8 / 2**20
        runs = " or ".join(repr(s) for s in self.DASK_STRATEGIES[:3]) or "none"
        raise ValueError(
            f"{what} needs X in memory (n x p = {self.n} x {self.p}, {mb:.1f} MB as float64) "
            f"and X is a Dask array; use strategy={runs} (it runs on the Dask array), or pass "
            "X.compute() and y.compute() if they fit in memory."
        )

    @property
    def n(self) -> int:
        return int(self._X.shape[0])

    @property
    def p(self) -> int:
        return int(self._X.shape[1])

    def kernel_matvec(self, v: np.ndarray, block_rows: int = 2048) -> np.ndarray:
        """K v in row blocks of ``block_rows``: never forms the n x n kernel matrix."""
        out = np.empty(self.n)
        for start in range(0, self.n, block_rows):
            stop = min(start + block_rows, self.n)
            out[start:stop] = self.kernel_(self._X[start:stop], self._X) @ v
        return out

    def pyomo_model(self, *form: str) -> Any:
        """The declared LP/QP (``self.qp(*form)``) as a Pyomo ConcreteModel with named blocks
        (e.g. ``m.beta[j]``, ``m.residual[i]``) that a user can extend and solve; it remembers
        this problem, so that ``solve_pyomo(m, strategy="aid")`` (or :meth:`constrained_by`)
        can run a decomposition on the extended model."""
        from solvers.pyomo_lowering import to_pyomo

        self.require_in_memory("pyomo_model()")
        m = to_pyomo(self.qp(*form))
        m._optmodels_origin = (self, form)
        return m

    PRIMAL_FORM: ClassVar[str] = "primal"
    """The form of :meth:`qp` that declares the coefficients as variables."""
    COEF_BLOCKS: ClassVar[tuple[str, ...]] = ()
    """The column blocks of the declared primal model that hold the coefficients theta (the
    variables a user's constraints may act on: LAD beta, intercept; SVM w, b; ridge x)."""

    def constrained_by(self, model: Any) -> Problem:
        """This problem with the constraints and bounds a user added to its Pyomo model
        (:meth:`pyomo_model`, primal form) on the coefficient variables (:attr:`COEF_BLOCKS`),
        as ``constraints=`` / ``bounds=``: a problem that every strategy accepting constraints
        solves. Refused (DataError naming it and why): a constraint touching a per-row
        variable (a residual, a slack: aggregating rows would change its meaning), a new
        variable, a changed objective, or a changed bound of a per-row variable."""
        from scipy.optimize import Bounds, LinearConstraint

        from solvers.pyomo_lowering import from_pyomo

        declared = self.qp(self.PRIMAL_FORM)
        user, variables, cons = from_pyomo(model)
        n_dec, k = declared.n_cols, sum(n for name, n in declared.col_blocks
                                        if name in self.COEF_BLOCKS)
        if user.n_cols != n_dec:
            raise DataError(f"The model has {user.n_cols - n_dec} variable(s) beyond the "
                            f"declared {self.NAME} model (e.g. {variables[n_dec].name!r}); "
                            "constraints may act on the coefficients only.")
        if not np.array_equal(user.c, declared.c) or user.P is not None and declared.P is not None \
                and abs(user.P - declared.P).max() > 0:
            raise DataError("The model's objective differs from the declared one; only "
                            "constraints and bounds on the coefficients can be added.")
        per_row = slice(k, n_dec)
        if not (np.array_equal(user.col_lo[per_row], declared.col_lo[per_row])
                and np.array_equal(user.col_hi[per_row], declared.col_hi[per_row])):
            j = k + int(np.flatnonzero((user.col_lo[per_row] != declared.col_lo[per_row])
                                       | (user.col_hi[per_row] != declared.col_hi[per_row]))[0])
            raise DataError(f"The bounds of the per-row variable {variables[j].name!r} were "
                            "changed; aggregation would change their meaning. Constrain the "
                            "coefficients only.")
        extra = np.arange(declared.n_rows, user.n_rows)
        A = user.A.tocsr()[extra]
        for r in range(A.shape[0]):
            cols = A.indices[A.indptr[r]:A.indptr[r + 1]]
            if (cols >= k).any():
                j = int(cols[cols >= k][0])
                raise DataError(
                    f"Constraint {cons[extra[r]].name!r} involves the per-row variable "
                    f"{variables[j].name!r}; aggregating rows would change its meaning, so it "
                    "cannot be decomposed. Constrain the coefficients only, or solve the model "
                    "with solve_pyomo(m) (the full solve).")
        G = A[:, :k].toarray()
        kwargs = {**self.params, **self._data_kwargs()}
        if self.coef_constraints is not None and self.coef_constraints.m:
            old = self.coef_constraints
            G = np.vstack([old.G, G])
            lo, hi = np.r_[old.lo, user.row_lo[extra]], np.r_[old.hi, user.row_hi[extra]]
        else:
            lo, hi = user.row_lo[extra], user.row_hi[extra]
        return type(self)(constraints=LinearConstraint(G, lo, hi) if G.shape[0] else None,
                          bounds=Bounds(user.col_lo[:k], user.col_hi[:k]), **kwargs)

    def _data_kwargs(self) -> dict[str, Any]:
        """The data arguments that rebuild this problem (:meth:`constrained_by`)."""
        raise NotImplementedError

    def natural_scale(self) -> float | None:
        """The positive number the problem's gaps are measured against (it scales with the data,
        so that certificates are invariant to rescaling); ``None`` where the problem has none."""
        return None

    def certify(
        self,
        res: SolveResult,
        *,
        tol: float = CERTIFICATE_TOL,
        failure: TerminationCondition = TerminationCondition.CONVERGED,
    ) -> SolveResult:
        """Apply :func:`solvers.result.certify` with this problem's :meth:`certificate_scale`
        and, where the optimum is unique, its :meth:`solution_certificate`."""
        scale = self.certificate_scale(res)
        if scale is None:
            return res
        check = self.kernel_check(res)
        if check is not None:
            check.record(res.extra)
            if check.psd is False:  # no bound: never a certified global optimum
                return not_certified(res, check, scale, tol)
        solution = None
        if res.x is not None and np.isfinite(res.objective) and res.bound is not None \
                and np.isfinite(res.bound):
            solution = self.solution_certificate(res)
        return certify(res, scale, tol=tol, failure=failure, solution=solution)

    def kernel_rows(self) -> tuple[Kernel, Any, np.ndarray, np.ndarray | None] | None:
        """(kernel, X, kept rows, their columns for a precomputed X) for :meth:`kernel_check`;
        None for a problem without a kernel (the default)."""
        return None

    def kernel_check(self, res: SolveResult) -> KernelCheck | None:
        """Whether the kernel matrix of the kept rows is positive semidefinite
        (:mod:`optmodels.kernel_check`); None where the problem has no kernel, or one PSD by
        construction (linear, rbf, poly with coef0 >= 0: nothing is computed). Up to
        ``PSD_CHECK_MAX_ROWS`` rows the matrix is checked once per problem; above, from the
        curvature the solver met (``res.extra["min_curvature"]``) and the diagonal."""
        from optmodels import kernel_check as kc

        given = None if self.lazy else self.kernel_rows()
        if given is None or not kc.may_be_indefinite(given[0]):
            return None
        kernel, X, rows, cols = given
        if rows.size > kc.PSD_CHECK_MAX_ROWS:
            return kc.kernel_check(kernel, X, rows, cols, res.extra.get("min_curvature"))
        if "_kernel_check" not in self.__dict__:
            object.__setattr__(self, "_kernel_check", kc.kernel_check(kernel, X, rows, cols))
        return self.__dict__["_kernel_check"]

    def solution_certificate(self, res: SolveResult) -> SolutionCertificate | None:
        """Proven bounds on the distance of ``res`` to the optimum, from its absolute gap
        ``res.objective - res.bound`` (:data:`solvers.result.SOLUTION_TOL`); None where the
        optimum need not be unique (the default)."""
        return None

    def typed_solution(self, res: SolveResult) -> Any:
        """What ``res`` predicts with (:mod:`solvers.solution`); None by default."""
        return None

    def certificate_scale(self, res: SolveResult) -> float | None:
        """The scale a result's gap is measured against: the natural scale (problems whose
        natural scale can lie far above the optimum use :func:`solvers.result.objective_scale`)."""
        return self.natural_scale()

    def _solve_declared(
        self, form: tuple[str, ...], solver: str, **kwargs: Any
    ) -> tuple[QPData, SolveResult]:
        """Build ``self.qp(*form)``, timed as the build, and run the verified QP solve on it
        (``kwargs``: time_limit, max_iter, verbose, options of :func:`solvers.backend.solve_qp`)."""
        t0 = time.perf_counter()
        qp = self.qp(*form)
        build = time.perf_counter() - t0
        floor = self.natural_scale() or 0.0
        # a model without the user's constraints is feasible and bounded by construction (an
        # "infeasible" verdict is then a solver failure); with them, infeasibility is possible
        # and the backend checks the solver's Farkas certificate
        constrained = getattr(self, "coef_constraints", None) is not None
        res = solve_qp(qp, solver, feasible_bounded=not constrained, scale_floor=floor,
                       **kwargs)
        res.build_time = build
        return qp, res

    def solve(
        self, strategy: str = "full", *, allow_large: bool = False, scheduler: Any = None,
        client: Any = None, verify: str = "auto", **options: Any
    ) -> SolveResult:
        """Solve with a strategy (``"full"`` = monolithic; see ``strategies()`` for the rest).

        On Dask data (``DASK_STRATEGIES``), ``scheduler="threads"|"processes"|"synchronous"``,
        ``scheduler="tcp://host:port"`` (a running Dask scheduler) or ``client=Client(...)``
        says where the chunk-wise passes run; by default the active Dask scheduler. Refused
        (ValueError) for data in memory.

        A full solve is checked by :func:`optmodels.guards.check_full_solve` first: refused
        above the memory budget (``allow_large=True`` lifts that), given the default time limit
        when none is passed, announced on stderr when expected to be long. The result's
        ``extra["run"]`` records the run (:func:`run_record`).

        ``verify="auto"`` (default) recomputes the objective and its bound from the returned
        arrays where that is cheap (one pass over the data; a kernel dual's decision values
        are audited on a few rows instead of recomputed), ``"independent"`` always (O(n^2 p)
        for a kernel dual), ``"strategy"`` keeps the strategy's own numbers
        (:mod:`optmodels.verify`)."""
        from optmodels import guards
        from optmodels.strategies import (
            check_scheduler,
            check_strategy_options,
            options_for,
            run_strategy,
        )
        from optmodels.verify import check_verify

        if not isinstance(allow_large, bool):
            raise ValueError(f"allow_large must be True or False; got {allow_large!r}.")
        check_scheduler(self, scheduler, client)
        check_verify(verify)
        options = check_strategy_options(self.NAME, strategy, options)
        if strategy not in self.DASK_STRATEGIES:
            self.require_in_memory("The full solve" if strategy == "full"
                                   else f"Strategy {strategy!r}")
        if strategy == "full":
            options = guards.check_full_solve(self, options, allow_large=allow_large)
        result = run_strategy(self, strategy, scheduler=scheduler, client=client,
                              verify=verify, **options)
        resolved = {k: o.default for k, o in options_for(self.NAME, strategy).items()}
        resolved.update(options)
        result.extra["run"] = run_record(strategy, resolved, result)
        if scheduler is not None or client is not None:
            result.extra["run"]["scheduler"] = scheduler if client is None else "client"
        return result

    @classmethod
    def strategies(cls) -> list[str]:
        from optmodels.strategies import strategies_for

        return strategies_for(cls.NAME)

    def write(self, path: str, **kwargs: Any) -> None:
        """Write the model to ``path`` (``.mps`` or ``.lp``); see :func:`optmodels.export.write`."""
        from optmodels.export import write

        self.require_in_memory("write() (the MPS/LP export)")
        write(self, path, **kwargs)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}(n={self.n}, p={self.p}, {shown})"


USER_LIMITS = (TerminationCondition.ITERATION_LIMIT, TerminationCondition.TIME_LIMIT,
               TerminationCondition.INTERRUPTED)
"""Terminations at a limit the user set: a full solve tries no other backend or options
after them."""


def closer(a: SolveResult, b: SolveResult) -> bool:
    """a is a better answer than b: certified, or a smaller (finite) gap."""
    if a.is_optimal != b.is_optimal:
        return a.is_optimal
    ga = a.gap if a.gap is not None and np.isfinite(a.gap) else np.inf
    gb = b.gap if b.gap is not None and np.isfinite(b.gap) else np.inf
    return ga < gb


def not_certified(res: SolveResult, check: KernelCheck, scale: float, tol: float) -> SolveResult:
    """The result on an indefinite kernel: its dual value is no bound, so no gap and no solution
    certificate (bound, gap and the solution fields cleared; ``solution_unique`` None: the
    problem is not convex), a claimed OPTIMAL / CERTIFIED becomes CONVERGED (a stationary point
    at best) with a FEASIBLE solution, and ``raw_status`` names the cause (idempotent: a full
    solve is certified twice)."""
    res.scale, res.certificate_tol = float(scale), float(tol)
    res.bound = res.gap = None
    res.solution_bound = res.decision_bound = res.solution_gap = None
    res.solution_unique = None
    if res.termination in (TerminationCondition.OPTIMAL, TerminationCondition.CERTIFIED):
        res.termination = TerminationCondition.CONVERGED
    if res.solution_status is SolutionStatus.OPTIMAL:
        res.solution_status = SolutionStatus.FEASIBLE
    cause = check.cause()
    if cause not in res.raw_status:
        res.raw_status += cause
    return res


LIBRARIES = ("numpy", "scipy", "highspy", "clarabel", "cvxpy", "ecos", "threadpoolctl", "optmodels")


def library_versions() -> dict[str, str | None]:
    """Versions of the libraries a solve may use, as loaded in this process: a loaded module's
    ``__version__`` (its package metadata, read once per process, for a module without one,
    such as highspy); None for a library this process has not imported, which therefore took
    no part in the run. Reading the metadata of all eight packages cost 13 ms, most of a
    small SMO fit, on a process's first solve."""
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None)
        if module is None or isinstance(version, str):
            out[name] = version
        else:
            out[name] = _metadata_version(name)
    return out


@functools.cache
def _metadata_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def thread_info(options: dict[str, Any]) -> dict[str, Any]:
    """BLAS/OpenMP pools as threadpoolctl sees them, and the HiGHS ``threads`` option given
    in ``options["options"]`` (0 = HiGHS chooses)."""
    pools = threads.pools()
    backend_opts = options.get("options") or {}
    return {"pools": pools, "highs_threads": backend_opts.get("threads", 0)}


def run_record(strategy: str, options: dict[str, Any], result: SolveResult) -> dict[str, Any]:
    """The record of one run: strategy, options as resolved (defaults filled in; arrays and
    callables shown by type), the seed where the strategy has one, threads, backend and
    library versions, Python."""
    shown = {k: _plain(v) for k, v in options.items()}
    return {
        "strategy": strategy,
        "options": shown,
        "seed": options.get("seed"),
        "threads": thread_info(options),
        "backend": {"name": result.solver, "version": result.solver_version},
        "versions": library_versions(),
        "python": platform.python_version(),
    }


def _plain(value: Any) -> Any:
    """JSON-friendly view of an option value (arrays and callables by their kind)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return f"array{value.shape}"
    return type(value).__name__
