r"""Block decomposition: working sets of q > 2 variables, each subproblem solved exactly.

The same duals as :mod:`solvers.smo.core`; at each outer step a working set B of q indices
is chosen and the dual is minimised over alpha_B with alpha_N fixed::

    min_{alpha_B}  1/2 alpha_B' Q_BB alpha_B + c_B' alpha_B + sum_{i in B} h_i(alpha_i)
    s.t.           y_B' alpha_B = y_B' alpha_B^current,   l_B <= alpha_B <= u_B
    c_B = (Q alpha)_B - Q_BB alpha_B + p_B = grad_B - h'(alpha_B) - Q_BB alpha_B

* Working set: the q/2 largest m_t = -y_t grad_t in I_up and the q/2 smallest in I_low
  (balanced top violators; filled from the other side when one side is short). q = 2 gives
  the maximal violating pair (first-order SMO).
* SVM subproblem (h = 0): a convex QP solved by HiGHS (highspy) with
  ``qp_regularization_value = 0`` so the answer is the QP's own optimum (``solver="highs"``,
  the default), or by the interior point of :mod:`solvers.sketch.kernel_block`, whose Newton
  systems are solved by CG preconditioned with a Nystroem approximation of Q_BB plus the
  barrier diagonal (``solver="ipm-nystroem"``) or by a dense Cholesky factor of it
  (``"ipm-cholesky"``); relative gap SUBPROBLEM_IPM_TOL.
* KLR subproblem: CVXPY with the exponential cone (``entr``), Clarabel by default or ECOS.
* Subproblem statuses go through the backends' maps (HiGHS's, CVXPY's); HiGHS stopping at
  its iteration cap keeps the block's point (the polish solves it), as does the interior point
  at its step limit; any other failure raises :class:`solvers.errors.SubproblemError`.
* Each subproblem answer is put back exactly on y_B'alpha_B = rhs inside the box and polished
  by two-variable SMO steps on the block (:func:`_polish`): interior-point answers stop short
  of the bounds, and such near-bound variables otherwise fill every working set (the stall at
  far-from-optimal objectives that S-KLR with large lambda showed).
* Stop when the violation max_{I_up} m - min_{I_low} m <= tol, or when the gap certificate
  holds (tested every CHECK_EVERY steps); then, as for SMO, refine with ``tol / 10`` while the
  gap is above CERTIFICATE_TOL. OPTIMAL only when the gap is within CERTIFICATE_TOL, else
  CONVERGED; ``max_iter`` outer steps -> ITERATION_LIMIT; five blocks in a row whose polish
  failed or did not move -> NUMERICAL_ERROR (the subproblem accuracy is the floor).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np

from solvers import interrupt
from solvers.kernels import Kernel
from solvers.progress import Progress, verbose_line
from solvers.result import SolutionStatus, SolveResult, TerminationCondition
from solvers.smo.certificate import (
    Certificate,
    certified_status,
    refine_loop,
    stopping_rule,
    svm_best_intercept,
    svm_gap,
)
from solvers.smo.core import entropy_terms, index_set_extremes, solve_dual
from solvers.smo.klr import feasible_start, klr_certificate_at, prepare_klr
from solvers.smo.qmatrix import PrecomputedQMatrix, QMatrix
from solvers.smo.svm import free_average_b, make_qmatrix
from solvers.subproblem import check_subproblem, subproblem_error
from solvers.validation import (
    check_array,
    check_choice,
    check_int,
    check_kernel,
    check_labels,
    check_nonnegative,
    check_positive,
    check_sample_weight,
)


def select_block(alpha, grad, y, lo, up, q: int) -> np.ndarray:
    """Balanced top violators: q/2 from I_up by largest m, q/2 from I_low by smallest m."""
    m = -y * grad
    pos = y > 0
    i_up = np.flatnonzero((pos & (alpha < up)) | (~pos & (alpha > lo)))
    i_low = np.flatnonzero((~pos & (alpha < up)) | (pos & (alpha > lo)))
    up_order = i_up[np.argsort(-m[i_up], kind="stable")]
    low_order = i_low[np.argsort(m[i_low], kind="stable")]
    chosen: list[int] = []
    seen: set[int] = set()
    for a, b in zip(up_order, low_order, strict=False):  # alternate so both sides are represented
        for t in (a, b):
            if t not in seen and len(chosen) < q:
                seen.add(int(t))
                chosen.append(int(t))
        if len(chosen) >= q:
            break
    for t in np.concatenate([up_order, low_order]):
        if len(chosen) >= q:
            break
        if int(t) not in seen:
            seen.add(int(t))
            chosen.append(int(t))
    return np.array(sorted(chosen), dtype=np.int64)


QP_ITERATIONS_PER_VARIABLE = 50
"""HiGHS's active-set QP may cycle on a nearly singular Q_BB (a 16-row poly-kernel pair never
returned): its iterations are capped at this many per block variable (at least 1,000), and a
subproblem that stops at that cap keeps the block's current point, from which the SMO polish
solves it (:func:`_polish`). Any other status but optimal raises SubproblemError."""

BLOCK_FIX = "or rescale C and the features nearer 1"


def _qp_highs(Qbb, c, yb, rhs, lo, up, a0=None) -> np.ndarray:
    """min 1/2 a'Qbb a + c'a s.t. yb'a = rhs, lo <= a <= up by HiGHS (no QP regularization).

    HiGHS's status goes through :func:`solvers.highs_backend.highs_termination`: ``a0`` (the
    block's current point) is returned when HiGHS stops at its iteration cap (with ``a0``
    None, that is a failure too); any other status but optimal raises SubproblemError."""
    import highspy  # here, not at import: SMO alone (``smo_svm``) never loads HiGHS

    from solvers.highs_backend import highs_termination, new_highs

    q = c.size
    h = new_highs()
    h.setOptionValue("qp_regularization_value", 0.0)
    h.setOptionValue("qp_iteration_limit", max(1000, QP_ITERATIONS_PER_VARIABLE * q))
    h.addVars(q, lo, up)  # columns with the box bounds
    h.changeColsCost(q, np.arange(q, dtype=np.int32), c)
    h.addRow(rhs, rhs, q, np.arange(q, dtype=np.int32), yb)
    L = np.tril(Qbb)
    start, index, value = [0], [], []
    for col in range(q):  # lower triangle, column-wise (HessianFormat.kTriangular)
        rows = np.arange(col, q)
        index.extend(rows.tolist())
        value.extend(L[col:, col].tolist())
        start.append(len(index))
    h.passHessian(q, len(index), highspy.HessianFormat.kTriangular,
                  np.array(start[:-1], dtype=np.int32), np.array(index, dtype=np.int32),
                  np.array(value))
    h.run()
    term, raw = highs_termination(h)
    if term is TerminationCondition.ITERATION_LIMIT and a0 is not None:
        return np.clip(a0, lo, up)
    check_subproblem(term, raw, strategy="block", subsolver="HiGHS (active-set QP)",
                     what="a block QP", fix=f"try solver='ipm-cholesky', {BLOCK_FIX}")
    return np.clip(np.array(h.getSolution().col_value), lo, up)


SVM_SUBSOLVERS = ("highs", "ipm-nystroem", "ipm-cholesky")
SUBPROBLEM_IPM_TOL = 1e-10
"""Relative gap at which the interior-point subproblem stops (the polish takes it from there)."""


def _qp_ipm(Qbb, c, yb, rhs, lo, up, linear_solver: str = "cg") -> np.ndarray:
    """The same QP by the interior point, its Newton systems by Nystroem-preconditioned CG
    (``linear_solver="cg"``) or a dense Cholesky factor; the answer is kept at its step limit
    (the polish and the block loop's stall rule decide); a non-finite answer raises
    SubproblemError."""
    from solvers.sketch.kernel_block import QPInfo, ipm_block_qp  # the sketch loads only here

    info = QPInfo()
    a = ipm_block_qp(Qbb, c, yb, rhs, lo, up, tol=SUBPROBLEM_IPM_TOL, strict=False,
                     linear_solver=linear_solver, info=info)
    if not np.all(np.isfinite(a)):
        raise subproblem_error(
            TerminationCondition.NUMERICAL_ERROR, f"non-finite iterate (gap {info.gap:.1e})",
            strategy="block", subsolver=f"the block interior point ({linear_solver})",
            what="a block QP", fix=f"try solver='highs', {BLOCK_FIX}")
    return a


def _entropy_cvxpy(Qbb, c, yb, rhs, lo, up, Cb, solver: str) -> np.ndarray:
    """min 1/2 a'Qbb a + c'a + sum C_i G(a_i/C_i) s.t. yb'a = rhs, lo <= a <= up (CVXPY)."""
    w, V = np.linalg.eigh(0.5 * (Qbb + Qbb.T))
    keep = w > 1e-12 * max(w.max(), 1e-300)
    F = V[:, keep] * np.sqrt(w[keep])
    import cvxpy as cp  # imported here: CVXPY costs ~1 s to import, and only KLR blocks use it

    a = cp.Variable(c.size)
    d = cp.multiply(a, 1.0 / Cb)
    entropy = cp.sum(cp.multiply(Cb, cp.entr(d) + cp.entr(1 - d)))
    obj = 0.5 * cp.sum_squares(F.T @ a) + c @ a - entropy
    prob = cp.Problem(cp.Minimize(obj), [yb @ a == rhs, a >= lo, a <= up])
    try:
        with warnings.catch_warnings():  # "inaccurate" answers are polished and certified
            warnings.simplefilter("ignore", UserWarning)
            if solver == "CLARABEL":
                prob.solve(solver=solver, tol_gap_abs=1e-10, tol_gap_rel=1e-10,
                           tol_feas=1e-10, tol_ktratio=1e-10)
            else:
                prob.solve(solver=solver, abstol=1e-10, reltol=1e-10, feastol=1e-10)
    except (cp.error.SolverError, ValueError) as exc:  # a solver failure or non-finite data
        # (C_i or the kernel near float64's limits): the strategy's failure, not bad input
        raise _klr_block_error(TerminationCondition.NUMERICAL_ERROR, f"solver_error: {exc}",
                               solver) from exc
    from solvers.cvxpy_lowering import STATUS_MAP  # CVXPY's status words, in one place

    term, raw = STATUS_MAP.get(str(prob.status), TerminationCondition.ERROR), str(prob.status)
    finite = a.value is not None and bool(np.all(np.isfinite(a.value)))
    if term is TerminationCondition.OPTIMAL and not finite:
        term, raw = TerminationCondition.NUMERICAL_ERROR, f"{raw} without a finite solution"
    if term is not TerminationCondition.OPTIMAL:
        raise _klr_block_error(term, raw, solver)
    return np.clip(a.value, lo, up)


def _klr_block_error(term: TerminationCondition, raw: str, solver: str) -> Exception:
    """The SubproblemError of a KLR block subproblem that ``solver`` (through CVXPY; statuses
    by :data:`solvers.cvxpy_lowering.STATUS_MAP`) did not solve."""
    other = "ECOS" if solver == "CLARABEL" else "CLARABEL"
    return subproblem_error(term, raw, strategy="block", subsolver=f"{solver} (through CVXPY)",
                            what="a KLR block subproblem",
                            fix=f"try solver={other!r} or strategy='smo', {BLOCK_FIX}")


def restore_sum(a: np.ndarray, y: np.ndarray, rhs: float, lo: np.ndarray,
                up: np.ndarray) -> np.ndarray:
    """a moved inside the box so that y'a = rhs: r = rhs - y'a is spread over the variables in
    proportion to their room in the direction sign(r) y_i (no variable leaves its box)."""
    r = rhs - float(y @ a)
    if r == 0.0:
        return a
    grow = np.sign(r) * y > 0  # these increase a_i, the others decrease it
    room = np.where(grow, up - a, a - lo)
    if room.sum() <= 0.0:
        return a
    theta = min(1.0, abs(r) / room.sum())
    return np.clip(a + np.where(grow, room, -room) * theta, lo, up)


def _polish(Qbb, c, yb, lo, up, cb, a, tol):
    """The subproblem's solution a refined by two-variable SMO steps on the block itself.

    An interior-point (or QP) answer stops a tolerance away from the box: near the entropy's
    ends a variable 1e-9 from C_i looks like a large violator (h' = log(a / (C - a))) that no
    block step can move, and the working set fills with such variables (the stall this
    replaces). SMO's steps land exactly on the bounds and meet the violation ``tol``.
    """
    sol = solve_dual(PrecomputedQMatrix.from_q(Qbb), yb, lo, up, c, entropy_C=cb, alpha0=a,
                     tol=tol, max_iter=100_000, shrinking=False)
    return sol.alpha, sol.converged


@dataclasses.dataclass
class BlockState:
    """The block loop's iterate: alpha, grad = Q alpha + p + h'(alpha), steps, status."""

    alpha: np.ndarray
    grad: np.ndarray
    iterations: int
    status: str
    min_curvature: float = math.inf
    """The most negative K_ii + K_jj - 2 K_ij over the pairs of the blocks solved (as
    :attr:`solvers.smo.core.DualSolution.min_curvature`; < 0 proves K indefinite)."""

    @property
    def converged(self) -> bool:
        return self.status == "optimal"


CHECK_EVERY = 10
"""The block loop tests the gap certificate every this many steps."""


def _block_loop(qmat: QMatrix, y, lo, up, lin, cent, start: BlockState, q, tol, max_iter,
                solver, verbose, certified=None, progress: Progress | None = None,
                offset: int = 0) -> BlockState:
    """Outer loop shared by the SVM and KLR front ends, continued from ``start``.

    Stops when the violation is <= ``tol`` or, tested every CHECK_EVERY steps, when
    ``certified(BlockState)`` is true (the gap certificate already holds: near the entropy's
    ends the violation can stay above ``tol`` for thousands of steps that change f by less
    than 1e-15 of its scale). ``progress`` gets (offset + step, f, violation) when a line is
    due (f is computed only then).
    """
    ent = cent is not None
    alpha, grad = start.alpha.copy(), start.grad.copy()
    it, status, stalls = 0, "optimal", 0
    min_curv = start.min_curvature
    while True:
        m_up, m_low = index_set_extremes(alpha, grad, y, lo, up)
        if m_up - m_low <= tol:
            break
        if (certified is not None and it % CHECK_EVERY == 0 and it > 0
                and certified(BlockState(alpha, grad, it, status, min_curv))):
            break
        if it >= max_iter:
            status = "iteration_limit"
            break
        if interrupt.requested():
            status = "interrupted"
            break
        B = select_block(alpha, grad, y, lo, up, q)
        QB = qmat.columns(B)  # n x |B|
        Qbb = np.ascontiguousarray(QB[B])
        min_curv = min(min_curv, pair_curvature(Qbb, y[B]))
        aB = alpha[B]
        hB = entropy_terms(aB, cent[B])[1] if ent else 0.0
        c = grad[B] - hB - Qbb @ aB
        rhs = float(y[B] @ aB)
        if ent:
            newB = _entropy_cvxpy(Qbb, c, y[B], rhs, lo[B], up[B], cent[B], solver)
        else:
            if solver in (None, "highs"):
                newB = _qp_highs(Qbb, c, y[B], rhs, lo[B], up[B], a0=aB)
            else:
                newB = _qp_ipm(Qbb, c, y[B], rhs, lo[B], up[B],
                               "cg" if solver == "ipm-nystroem" else "cholesky")
        newB = restore_sum(np.clip(newB, lo[B], up[B]), y[B], rhs, lo[B], up[B])
        newB, solved = _polish(Qbb, c, y[B], lo[B], up[B], cent[B] if ent else None, newB,
                               0.1 * tol)
        d = newB - aB
        alpha[B] = newB
        grad += QB @ d
        if ent:
            grad[B] += entropy_terms(newB, cent[B])[1] - hB
        it += 1
        if verbose:
            f_new = _objective(alpha, grad, lin, cent)
            verbose_line(f"block: step {it} violation {m_up - m_low:.3e} f {f_new:.10g}"
                         + (f" time {progress.elapsed():.2f} s" if progress else ""))
        if progress is not None and progress.due():
            progress.update(offset + it, _objective(alpha, grad, lin, cent),
                            violation=m_up - m_low)
        # a block whose subproblem could not be solved to 0.1 tol, or that did not move,
        # five times in a row: the floating-point accuracy of the subproblem is the floor
        stalls = stalls + 1 if not solved or not d.any() else 0
        if stalls >= 5:
            status = "numerical_error"
            break
    return BlockState(alpha, grad, it, status, min_curv)


def pair_curvature(Qbb: np.ndarray, yb: np.ndarray) -> float:
    """min over i != j of K_ii + K_jj - 2 K_ij on a block (Q_ij = y_i y_j K_ij): q^2 entries
    already in hand, against the q^3 of the block's QP."""
    d = np.diag(Qbb)
    curv = d[:, None] + d[None, :] - 2.0 * (yb[:, None] * yb[None, :]) * Qbb
    np.fill_diagonal(curv, np.inf)
    return float(curv.min()) if curv.size > 1 else math.inf


def _start_state(qmat: QMatrix, alpha, lin, cent) -> BlockState:
    """alpha and its gradient Q alpha + p + h'(alpha)."""
    qa = np.zeros_like(alpha) if not alpha.any() else _q_times(qmat, alpha)
    hp = entropy_terms(alpha, cent)[1] if cent is not None else 0.0
    return BlockState(alpha, qa + lin + hp, 0, "optimal")


def _q_times(qmat: QMatrix, v: np.ndarray) -> np.ndarray:
    from solvers.smo.core import q_times

    return q_times(qmat, v)


def _objective(alpha, grad, lin, cent) -> float:
    if cent is None:
        return float(0.5 * alpha @ (grad - lin) + lin @ alpha)
    h, hp = entropy_terms(alpha, cent)
    return float(0.5 * alpha @ (grad - lin - hp) + lin @ alpha + h.sum())


_TERM = {
    "optimal": (TerminationCondition.OPTIMAL, SolutionStatus.OPTIMAL),
    "iteration_limit": (TerminationCondition.ITERATION_LIMIT, SolutionStatus.FEASIBLE),
    "numerical_error": (TerminationCondition.NUMERICAL_ERROR, SolutionStatus.FEASIBLE),
    "interrupted": (TerminationCondition.INTERRUPTED, SolutionStatus.FEASIBLE),
}


def block_svm(
    X: np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    sample_weight: np.ndarray | None = None,
    kernel: Kernel | str = "rbf",
    q: int = 10,
    tol: float = 1e-3,
    cache_mb: float = 200.0,
    max_iter: int = 100_000,
    refine: bool = True,
    solver: str = "highs",
    verbose: bool = False,
) -> SolveResult:
    """Weighted SVM dual by block decomposition with QP subproblems of size ``q``, solved by
    HiGHS (``solver="highs"``) or the interior point of
    :func:`solvers.sketch.kernel_block.ipm_block_qp` with Nystroem-preconditioned CG
    (``"ipm-nystroem"``) or dense Cholesky (``"ipm-cholesky"``) Newton solves.

    Same problem, certificate rule (``refine``: continue with ``tol / 10`` until the relative
    duality gap is within CERTIFICATE_TOL; OPTIMAL only then, else CONVERGED) and result
    layout as :func:`solvers.smo.svm.smo_svm` (``extra``: ``b``, ``n_sv``, ``max_violation``,
    ``dual_objective``, ``stopping_rule``).
    """
    t0 = time.perf_counter()
    progress = Progress("block", start=t0)
    used = [0, 0]  # iterations before the current run, after the last
    f = "block_svm"
    kernel = check_kernel(kernel, f)
    X = check_array(X, "X")
    y_pm, classes = check_labels(y, X.shape[0], numeric=False)
    C = check_positive(C, "C", f)
    tol = check_positive(tol, "tol", f)
    q = check_int(q, "q", f, low=2)
    max_iter = check_int(max_iter, "max_iter", f)
    solver = check_choice(solver, "solver", f, SVM_SUBSOLVERS)
    up = C * check_sample_weight(sample_weight, X.shape[0])
    lo = np.zeros_like(up)
    lin = -np.ones_like(up)
    qmat = make_qmatrix(X, y_pm, kernel, cache_mb)
    start = _start_state(qmat, np.zeros_like(up), lin, None)
    q_max = float(np.max(qmat.diag(), initial=0.0))

    def run(prev: BlockState | None, tol_: float, budget: int) -> BlockState:
        used[0] = used[1]
        out = _block_loop(qmat, y_pm, lo, up, lin, None, prev or start, q, tol_, budget,
                          solver, verbose, lambda st: certificate(st).holds, progress, used[0])
        used[1] = used[0] + out.iterations
        return out

    def certificate(st: BlockState) -> Certificate:
        b_ = svm_best_intercept(st.grad, y_pm, up)
        obj = _objective(st.alpha, st.grad, lin, None)
        cert = Certificate.of(obj, obj - svm_gap(st.alpha, st.grad, y_pm, up, b_),
                              float(up.sum()), b_, float(st.alpha @ (st.grad - lin)), q_max)
        progress.update(used[0] + st.iterations, obj, cert.gap)
        return cert

    st, cert, tol_met, rounds, it = refine_loop(run, certificate, run(None, tol, max_iter), tol,
                                                max_iter, refine)
    progress.done(it, cert.objective, cert.gap)
    m_up, m_low = index_set_extremes(st.alpha, st.grad, y_pm, lo, up)
    term, sol_status, note = certified_status(*_TERM[st.status], cert)
    return SolveResult(
        termination=term, solution_status=sol_status, objective=cert.objective, x=st.alpha,
        bound=cert.bound, gap=cert.gap, scale=cert.scale, iterations=it,
        solve_time=time.perf_counter() - t0, solver=solver, strategy=f"block(q={q})",
        raw_status=f"{st.status}: violation {m_up - m_low:.3e} (tol {tol_met:.0e}), "
        f"relative gap {cert.gap:.1e}{note}",
        extra={"b": cert.b, "b_free_average": free_average_b(st.alpha, st.grad, y_pm, lo, up,
                                                              m_up, m_low),
               "n_sv": int(np.count_nonzero(st.alpha)), "max_violation": m_up - m_low,
               "dual_objective": cert.objective, "classes": classes, "y": y_pm,
               # (Q alpha)_i = grad_i + 1, so f_i = y_i (grad_i + 1) + b from what the loop holds
               "decision_train": y_pm * (st.grad + 1.0) + cert.b,
               "stopping_rule": stopping_rule(m_up - m_low, tol_met, tol, rounds, cert),
               "min_curvature": st.min_curvature},
    )


def block_klr(
    X: np.ndarray,
    y: np.ndarray,
    *,
    C: float = 1.0,
    lam: float = 0.0,
    bound_tol: float | None = None,
    sample_weight: np.ndarray | None = None,
    kernel: Kernel | str = "rbf",
    q: int = 10,
    tol: float = 1e-6,
    solver: str = "CLARABEL",
    cache_mb: float = 200.0,
    max_iter: int = 100_000,
    refine: bool = True,
    verbose: bool = False,
) -> SolveResult:
    """(S-)KLR dual by block decomposition with CVXPY (``solver`` CLARABEL or ECOS) subproblems.

    Same problem, certificate rule (gap against -P(w(alpha), b), ``refine`` as for
    :func:`block_svm`) and result layout as :func:`solvers.smo.klr.smo_klr` (``extra``:
    ``b``, ``max_violation``, ``stopping_rule``).
    """
    t0 = time.perf_counter()
    progress = Progress("block-klr", start=t0)
    used = [0, 0]  # iterations before the current run, after the last
    f = "block_klr"
    solver = check_choice(solver, "solver", f, ("CLARABEL", "ECOS"))
    q = check_int(q, "q", f, low=2)
    tol = check_positive(tol, "tol", f)
    max_iter = check_int(max_iter, "max_iter", f)
    lam = check_nonnegative(lam, "lam", f)
    prob = prepare_klr(X, y, C=C, bound_tol=bound_tol, sample_weight=sample_weight,
                       kernel=kernel, cache_mb=cache_mb, owner=f)
    yk, lo, up = prob.yk, prob.lower, prob.upper
    lin = np.full(yk.size, -lam)
    start = _start_state(prob.qmat, feasible_start(yk, lo, up, prob.C), lin, prob.C)

    def run(prev: BlockState | None, tol_: float, budget: int) -> BlockState:
        used[0] = used[1]
        out = _block_loop(prob.qmat, yk, lo, up, lin, prob.C, prev or start, q, tol_, budget,
                          solver, verbose, lambda st: certificate(st).holds, progress, used[0])
        used[1] = used[0] + out.iterations
        return out

    def certificate(st: BlockState) -> Certificate:
        qa = st.grad - lin - entropy_terms(st.alpha, prob.C)[1]
        m_up, m_low = index_set_extremes(st.alpha, st.grad, yk, lo, up)
        cert = klr_certificate_at(prob, lam, st.alpha, qa, _objective(st.alpha, st.grad, lin,
                                                                      prob.C),
                                  0.5 * (m_up + m_low))
        progress.update(used[0] + st.iterations, cert.objective, cert.gap)
        return cert

    st, cert, tol_met, rounds, it = refine_loop(run, certificate, run(None, tol, max_iter), tol,
                                                max_iter, refine)
    progress.done(it, cert.objective, cert.gap)
    m_up, m_low = index_set_extremes(st.alpha, st.grad, yk, lo, up)
    term, sol_status, note = certified_status(*_TERM[st.status], cert)
    full = np.zeros(prob.y.size)
    full[prob.keep] = st.alpha
    return SolveResult(
        termination=term, solution_status=sol_status, objective=cert.objective, x=full,
        bound=cert.bound, gap=cert.gap, scale=cert.scale, iterations=it,
        solve_time=time.perf_counter() - t0, solver=solver.lower(), strategy=f"block(q={q})",
        raw_status=f"{st.status}: violation {m_up - m_low:.3e} (tol {tol_met:.0e}), "
        f"relative gap {cert.gap:.1e}{note}",
        extra={"b": cert.b, "max_violation": m_up - m_low, "lam": lam,
               "classes": prob.classes, "y": prob.y,
               "stopping_rule": stopping_rule(m_up - m_low, tol_met, tol, rounds, cert),
               "min_curvature": st.min_curvature},
    )
