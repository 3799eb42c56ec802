"""Seeded synthetic instances with their ground truth.

Every generator is keyword-only, validates its parameters before drawing anything, and draws
all randomness from ``np.random.default_rng(seed)``: the same ``seed`` gives bit-identical
arrays on every call, ``seed=None`` draws fresh entropy. Arrays are ``float64``; labels of
classification sets are ``-1.0`` / ``+1.0``.

Generators
----------
make_lad            linear model with heavy-tailed noise and gross outliers in ``y``
make_classification two Gaussian clouds a chosen distance apart, optional label noise
make_sklr_synth     the 2-D "Synth" set of the sparse-KLR paper (linear kernel, overlapping)
make_weights        integer or uniform sample weights

Before drawing, :func:`check_size` refuses (a ``ValueError`` naming ``n`` and ``p``) an instance
whose arrays would not fit in the memory available, instead of numpy's ``MemoryError``
("Unable to allocate 72.8 TiB") after a long wait or the system swapping.
"""

from __future__ import annotations

import os

import numpy as np

from solvers.errors import DataError
from solvers.validation import check_choice, check_int, check_nonnegative, check_number, invalid

__all__ = ["make_lad", "make_classification", "make_sklr_synth", "make_weights", "NOISE_KINDS",
           "available_memory", "check_size"]

#: Noise laws accepted by :func:`make_lad`; all are symmetric about 0, so their median is 0.
NOISE_KINDS = ("laplace", "t3", "normal", "cauchy")
_WEIGHT_KINDS = ("integer", "uniform")


# --- parameter checks: solvers.validation's one template, "The 'x' parameter of f must be ..."


def _rng(func: str, seed: object) -> np.random.Generator:
    """numpy's generator for a seed that is a non-negative int or None."""
    return np.random.default_rng(check_int(seed, "seed", func, low=0, none_ok=True))


def available_memory() -> tuple[float, str]:
    """(bytes, what they are): the memory available to new arrays by ``psutil`` when it is
    installed, else the machine's physical memory (``os.sysconf``), else infinity."""
    try:
        import psutil
    except ImportError:
        pass
    else:
        return float(psutil.virtual_memory().available), "memory available"
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")), "physical memory"
    except (ValueError, OSError, AttributeError):
        return float("inf"), "memory"


def _size(nbytes: float) -> str:
    """Bytes in binary units: ``72.8 TiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:,.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def check_size(owner: str, n: object, p: object, *, copies: float = 1.0,
               names: tuple[str, str] = ("n", "p")) -> tuple[int, int]:
    """``(n, p)`` as ints >= 1, or a DataError (before anything is allocated) when the
    generator's peak, ``copies`` float64 arrays of n x p plus two of n, exceeds
    :func:`available_memory`. ``names`` are the arguments as the caller spells them."""
    n = check_int(n, names[0], owner)
    p = check_int(p, names[1], owner)
    need = 8.0 * (copies * n * p + 2 * n)
    have, what = available_memory()
    if need > have:
        raise DataError(
            f"The {names[0]!r} and {names[1]!r} parameters of {owner} are too large: "
            f"{names[0]}={n:,} rows and {names[1]}={p:,} columns need {_size(need)} "
            f"({copies:g} float64 array(s) of {n:,} x {p:,} at the generator's peak), more than "
            f"the {_size(have)} of {what}. Lower {names[0]} or {names[1]}."
        )
    return n, p


# --- generators ---------------------------------------------------------------------------


def _draw_noise(rng: np.random.Generator, kind: str, scale: float, n: int) -> np.ndarray:
    if kind == "laplace":
        return rng.laplace(0.0, scale, size=n)
    if kind == "t3":
        return scale * rng.standard_t(3, size=n)
    if kind == "normal":
        return rng.normal(0.0, scale, size=n)
    return scale * rng.standard_cauchy(size=n)  # "cauchy"


def make_lad(
    *,
    n: int = 1000,
    p: int = 10,
    noise: str = "laplace",
    noise_scale: float = 1.0,
    outlier_fraction: float = 0.05,
    outlier_scale: float = 20.0,
    intercept: float | None = 1.0,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    r"""Regression data for least absolute deviations (LAD), with outliers in ``y``.

    .. math::  y_i = x_i^\top \beta + \beta_0 + \varepsilon_i + o_i,

    where ``x_i ~ N(0, I_p)``, ``beta_j ~ U(-2, 2)``, ``eps_i`` is i.i.d. symmetric noise of law
    ``noise`` and scale ``noise_scale``, and ``o_i`` is zero except on a random subset of
    ``round(outlier_fraction * n)`` rows, where it is ``± outlier_scale * noise_scale * (1 + E)``
    with a random sign and ``E ~ Exp(1)``. Noise and outliers are symmetric about 0, so the
    conditional median of ``y`` is ``X beta + beta_0``: the LAD estimator is consistent for
    ``(beta, beta_0)`` and the returned ground truth is what a LAD fit should recover.
    In the AID paper's notation (``aid-lad-svm.txt``) ``X`` is the data matrix ``A`` with rows
    ``a_i``, ``y`` is ``b`` and ``coef`` is ``x``.

    Parameters
    ----------
    n : int, default=1000
        Number of rows (data points), ``n >= 1``.
    p : int, default=10
        Number of features, ``p >= 1``.
    noise : {"laplace", "t3", "normal", "cauchy"}, default="laplace"
        Law of ``eps``: Laplace(0, s), s * Student-t with 3 degrees of freedom, N(0, s^2),
        s * standard Cauchy; ``s = noise_scale``.
    noise_scale : float, default=1.0
        Scale ``s >= 0`` of the noise (0 gives exact data apart from outliers).
    outlier_fraction : float, default=0.05
        Fraction in ``[0, 1)`` of rows whose ``y`` receives a gross error.
    outlier_scale : float, default=20.0
        Size ``>= 0`` of the gross errors in units of ``noise_scale`` (of 1 when it is 0).
    intercept : float or None, default=1.0
        True intercept ``beta_0``; ``None`` means no intercept (returned as ``0.0``).
    seed : int or None, default=0
        Seed for ``np.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (n, p)
        Features.
    y : ndarray of shape (n,)
        Targets, outliers included.
    coef : ndarray of shape (p,)
        True coefficients ``beta``.
    intercept : float
        True intercept ``beta_0`` (``0.0`` when the argument is ``None``).

    Examples
    --------
    >>> X, y, coef, b0 = make_lad(n=50, p=3, seed=1)
    >>> X.shape, y.shape, coef.shape, b0
    ((50, 3), (50,), (3,), 1.0)
    """
    f = "make_lad"
    n, p = check_size(f, n, p, copies=1)
    noise = check_choice(noise, "noise", f, NOISE_KINDS)
    noise_scale = check_nonnegative(noise_scale, "noise_scale", f)
    outlier_fraction = check_number(outlier_fraction, "outlier_fraction", f, low=0.0, high=1.0,
                                    closed="left")
    outlier_scale = check_nonnegative(outlier_scale, "outlier_scale", f)
    b0 = 0.0 if intercept is None else check_number(intercept, "intercept", f)
    rng = _rng(f, seed)

    # features and true coefficients
    X = rng.standard_normal((n, p))
    coef = rng.uniform(-2.0, 2.0, size=p)
    # symmetric noise, then gross errors on a random subset of rows
    y = X @ coef + b0 + _draw_noise(rng, noise, noise_scale, n)
    n_out = int(round(outlier_fraction * n))
    if n_out > 0:
        rows = rng.choice(n, size=n_out, replace=False)
        unit = noise_scale if noise_scale > 0 else 1.0
        signs = rng.choice(np.array([-1.0, 1.0]), size=n_out)
        y[rows] += signs * outlier_scale * unit * (1.0 + rng.exponential(size=n_out))
    return X, y, coef, b0


def _class_sizes(func: str, n: int, weights: object) -> tuple[int, int]:
    """Rows of class -1 and +1 for ``weights = (w_neg, w_pos)``; each class gets >= 1 row."""
    try:
        w = tuple(float(v) for v in weights)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise invalid("weights", func, "a pair (w_neg, w_pos) of floats", weights) from None
    if len(w) != 2 or not all(0.0 < v < 1.0 for v in w) or abs(sum(w) - 1.0) > 1e-9:
        raise invalid("weights", func, "a pair (w_neg, w_pos) in (0, 1) summing to 1",
                      weights)
    n_neg = min(max(int(round(w[0] * n)), 1), n - 1)
    return n_neg, n - n_neg


def _flip(rng: np.random.Generator, y: np.ndarray, fraction: float) -> np.ndarray:
    """Flip the sign of ``round(fraction * n)`` labels chosen uniformly without replacement."""
    k = int(round(fraction * y.size))
    if k > 0:
        y[rng.choice(y.size, size=k, replace=False)] *= -1.0
    return y


def make_classification(
    *,
    n: int = 1000,
    p: int = 2,
    separation: float = 2.0,
    label_noise: float = 0.0,
    weights: tuple[float, float] = (0.5, 0.5),
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Two Gaussian clouds with labels -1 / +1 whose means are ``separation`` apart.

    .. math::  x_i \sim N(y_i \tfrac{\delta}{2} u,\ I_p),

    with ``u`` a unit vector drawn uniformly on the sphere and ``delta = separation``. Along
    ``u`` the classes are two unit-variance normals ``delta`` apart, so the Bayes error is
    ``Phi(-delta / 2)``: ``separation=2`` overlaps (about 16 % error), ``separation >= 10``
    with ``n <= 10**4`` is linearly separable with overwhelming probability. Afterwards
    ``round(label_noise * n)`` labels chosen at random are flipped. Rows are shuffled.

    Parameters
    ----------
    n : int, default=1000
        Number of rows, ``n >= 2`` (each class gets at least one row).
    p : int, default=2
        Number of features, ``p >= 1``.
    separation : float, default=2.0
        Distance ``delta >= 0`` between the two class means.
    label_noise : float, default=0.0
        Fraction in ``[0, 1)`` of labels flipped after drawing.
    weights : tuple of two floats, default=(0.5, 0.5)
        Class proportions ``(w_neg, w_pos)``, each in (0, 1), summing to 1.
    seed : int or None, default=0
        Seed for ``np.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (n, p)
        Features.
    y : ndarray of shape (n,)
        Labels in ``{-1.0, +1.0}`` (after label noise).
    """
    f = "make_classification"
    n = check_int(n, "n", f, low=2)
    n, p = check_size(f, n, p, copies=2)
    separation = check_nonnegative(separation, "separation", f)
    label_noise = check_number(label_noise, "label_noise", f, low=0.0, high=1.0, closed="left")
    n_neg, n_pos = _class_sizes(f, n, weights)
    rng = _rng(f, seed)

    # direction of the class means, then labels and clouds
    u = rng.standard_normal(p)
    u /= np.linalg.norm(u)
    y = np.concatenate([-np.ones(n_neg), np.ones(n_pos)])
    X = rng.standard_normal((n, p)) + np.outer(y * separation / 2.0, u)
    order = rng.permutation(n)
    X, y = X[order], y[order]
    return X, _flip(rng, y, label_noise)


def make_sklr_synth(
    *, n: int = 99, noise: float = 0.1, seed: int | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    r"""The 2-D "Synth" set of the sparse kernel logistic regression (S-KLR) paper.

    The paper (``sparse-klr-smo.txt``, section on illustrative examples) describes Synth only
    as: ``p = 2`` features, 99 points (50 of one class, 49 of the other), *not linearly
    separable*, yet with reasonable linear decision boundaries; it is used with a linear
    kernel to show how ``nu`` drives sparsity. The exact law is not given, so this generator
    makes a set with those properties:

    .. math::  x_i \sim N(y_i\,\mu,\ \Sigma),\quad \mu = (1, 1),\quad
               \Sigma = \begin{pmatrix} 0.5 & -0.2 \\ -0.2 & 0.5 \end{pmatrix},

    ``ceil(n/2)`` rows of class +1 first, then ``floor(n/2)`` of class -1 (so 50 / 49 for the
    default ``n = 99``), followed by flipping ``round(noise * n)`` labels at random. Along
    the best direction (1, 1) the class projections are ``N(±2, 0.6)``, an overlap of about
    0.5 %; the flipped labels are what makes the set clearly non-separable.

    Parameters
    ----------
    n : int, default=99
        Number of points, ``n >= 2`` (the paper's 99 by default).
    noise : float, default=0.1
        Fraction in ``[0, 0.5)`` of labels flipped.
    seed : int or None, default=0
        Seed for ``np.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (n, 2)
        Points in the plane.
    y : ndarray of shape (n,)
        Labels in ``{-1.0, +1.0}``.
    """
    f = "make_sklr_synth"
    n = check_int(n, "n", f, low=2)
    noise = check_number(noise, "noise", f, low=0.0, high=0.5, closed="left")
    rng = _rng(f, seed)

    n_pos = (n + 1) // 2
    y = np.concatenate([np.ones(n_pos), -np.ones(n - n_pos)])
    cov = np.array([[0.5, -0.2], [-0.2, 0.5]])
    X = rng.multivariate_normal(np.zeros(2), cov, size=n) + np.outer(y, [1.0, 1.0])
    return X, _flip(rng, y, noise)


def make_weights(
    *,
    n: int,
    kind: str = "integer",
    low: float = 1.0,
    high: float = 5.0,
    seed: int | None = 0,
) -> np.ndarray:
    """Positive sample weights, as integer multiplicities or uniform reals.

    Parameters
    ----------
    n : int
        Number of weights, ``n >= 1``.
    kind : {"integer", "uniform"}, default="integer"
        ``"integer"``: whole numbers drawn uniformly from ``{low, ..., high}`` (both ends
        included; ``low`` and ``high`` must be whole). ``"uniform"``: reals from ``U(low, high)``.
    low, high : float, default=1.0, 5.0
        Range, ``0 <= low <= high``. ``low = 0`` allows zero weights (rows that count as removed).
    seed : int or None, default=0
        Seed for ``np.random.default_rng``.

    Returns
    -------
    weights : ndarray of shape (n,)
        ``float64`` weights in ``[low, high]``.
    """
    f = "make_weights"
    n = check_int(n, "n", f)
    kind = check_choice(kind, "kind", f, _WEIGHT_KINDS)
    low = check_nonnegative(low, "low", f)
    high = check_number(high, "high", f, low=low, closed="left")
    if kind == "integer":
        for name, v in (("low", low), ("high", high)):
            if not float(v).is_integer():
                raise invalid(name, f, "a whole number when kind='integer'", v)
    rng = _rng(f, seed)
    if kind == "integer":
        return rng.integers(int(low), int(high), size=n, endpoint=True).astype(np.float64)
    return rng.uniform(low, high, size=n)
