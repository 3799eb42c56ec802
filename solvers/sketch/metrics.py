"""Bias, variance and MSE of linear ridge estimators under ``y = A x0 + eps``, eps ~ N(0, s^2 I).

Every estimator here is linear in y, ``xhat = M y`` with M (d x n); then (Lemmas 1-2)::

    bias(xhat) = E xhat - x0 = (M A - I) x0,    var(xhat) = sigma^2 M M',
    trace var  = sigma^2 ||M||_F^2,             MSE = ||bias||^2 + trace var.

- optimal ridge:   M = H^{-1} A'        -> bias = -gamma H^{-1} x0, var = s^2 H^{-1}A'A H^{-1}
- (R)FDRR:         M = Hhat^{-1} A'     -> bias = (Hhat^{-1} A'A - I) x0
- classical:       M = Htil^{-1} A'S'S  (Htil = A'S'SA + gamma I)
- Hessian sketch:  M = Htil^{-1} A'

These analytic evaluations are for small studies (they form d x d and d x n matrices); the
solvers themselves never do. Relative error of a metric: ``|u_hat - u*| / u*``.
"""

from __future__ import annotations

import numpy as np

from solvers.sketch.fd import FrequentDirections
from solvers.sketch.precondition import SketchPreconditioner
from solvers.sketch.random import make_random_sketch
from solvers.validation import check_array, check_nonnegative, check_positive, check_vector


def estimator_metrics(M: np.ndarray, A: np.ndarray, x0: np.ndarray, sigma: float) -> dict:
    """``{"bias2", "var_trace", "mse"}`` of the linear estimator ``xhat = M y``."""
    bias = M @ (A @ x0) - x0
    bias2 = float(bias @ bias)
    var_trace = sigma**2 * float(np.einsum("ij,ij->", M, M))
    return {"bias2": bias2, "var_trace": var_trace, "mse": bias2 + var_trace}


def relative_errors(est: dict, ref: dict) -> dict:
    """``|u_hat - u*| / u*`` for each metric of ``ref``."""
    return {k: abs(est[k] - ref[k]) / ref[k] for k in ref}


def optimal_operator(A: np.ndarray, gamma: float) -> np.ndarray:
    """``M* = H^{-1} A'`` of the exact ridge solution."""
    H = A.T @ A + gamma * np.eye(A.shape[1])
    return np.linalg.solve(H, A.T)


def fd_operator(A: np.ndarray, gamma: float, m: int, *, robust: bool) -> np.ndarray:
    """``M = (B'B + (gamma + rho) I)^{-1} A'`` of one-shot (R)FDRR."""
    sk = FrequentDirections(m, robust=robust).fit(A)
    return SketchPreconditioner(sk.sketch_, gamma + sk.rho_).solve(A.T)


def random_operator(
    A: np.ndarray, gamma: float, m: int, *, kind: str, model: str, seed: int | None = 0
) -> np.ndarray:
    """``M`` of the classical (``model="classical"``) or Hessian sketch with S of ``kind``.

    S is recovered explicitly by sketching the identity with the same seed and block sizes.
    """
    n = A.shape[0]
    S = make_random_sketch(kind, m, seed=seed).fit(np.eye(n)).sketch_
    P = SketchPreconditioner(S @ A, gamma)
    if model == "classical":
        return P.solve(A.T @ (S.T @ S))
    if model == "hessian":
        return P.solve(A.T)
    raise ValueError(f"The 'model' parameter must be 'classical' or 'hessian'; got {model!r}.")


def ridge_metrics(
    A: np.ndarray,
    x0: np.ndarray,
    gamma: float,
    *,
    sigma: float = 2.0,
    m: int = 256,
    methods: tuple[str, ...] = ("fdrr", "rfdrr", "classical-gaussian", "classical-sjlt",
                                "hessian-gaussian", "hessian-sjlt"),
    seed: int | None = 0,
) -> dict[str, dict]:
    """Metrics of the optimal ridge (key ``"optimal"``) and of each sketched estimator.

    Each sketched entry holds ``bias2``, ``var_trace``, ``mse`` and ``rel_bias2``,
    ``rel_var_trace``, ``rel_mse`` (relative errors against the optimal values).
    """
    A = check_array(A, "A")
    x0 = check_vector(x0, A.shape[1], "x0", against="A", axis="columns")
    gamma = check_positive(gamma, "gamma", "ridge_metrics")
    sigma = check_nonnegative(sigma, "sigma", "ridge_metrics")
    out = {"optimal": estimator_metrics(optimal_operator(A, gamma), A, x0, sigma)}
    for name in methods:
        if name in ("fdrr", "rfdrr"):
            M = fd_operator(A, gamma, m, robust=name == "rfdrr")
        else:
            model, _, kind = name.partition("-")
            M = random_operator(A, gamma, m, kind=kind, model=model, seed=seed)
        est = estimator_metrics(M, A, x0, sigma)
        rel = relative_errors(est, out["optimal"])
        est.update({f"rel_{k}": v for k, v in rel.items()})
        out[name] = est
    return out
