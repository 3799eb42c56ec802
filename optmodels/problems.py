"""The problem classes by name, their generators and the built-in default instances."""

from __future__ import annotations

from typing import Any

import numpy as np

from optmodels.klr import KLR
from optmodels.lad import LAD
from optmodels.problem import Problem
from optmodels.ridge import Ridge
from optmodels.svm import SVM

PROBLEMS: dict[str, type[Problem]] = {"lad": LAD, "svm": SVM, "klr": KLR, "ridge": Ridge}

# The built-in default instance of each problem (what `optmodels compare` runs with no data).
DEFAULTS: dict[str, dict[str, Any]] = {
    "lad": {"n": 20_000, "p": 10, "seed": 0},
    "svm": {"n": 5_000, "p": 20, "seed": 0},
    "klr": {"n": 400, "p": 2, "seed": 0},
    "ridge": {"n": 5_000, "p": 1_000, "seed": 0},  # m = 256 < rank: the iterations show
}


# What `optmodels compare PROBLEM` runs when --strategies is not given.
DEFAULT_STRATEGIES: dict[str, list[str]] = {
    "lad": ["full", "aid"],
    "svm": ["full", "aid", "smo"],
    "klr": ["full", "smo"],
    "ridge": ["full", "fdrr", "rfdrr", "rfd", "pcg-fd", "pcg-rfd"],
}


def make_problem(
    name: str, X: Any, y: Any, sample_weight: Any = None, params: dict[str, Any] | None = None
) -> Problem:
    """Instantiate problem ``name`` from arrays and (string or typed) parameters."""
    if name not in PROBLEMS:
        raise ValueError(f"Unknown problem {name!r}; choose one of {', '.join(PROBLEMS)}.")
    return PROBLEMS[name](X, y, sample_weight=sample_weight, **(params or {}))


# float64 n x p arrays at each generator's peak (measured by tracemalloc at 2*10^4 x 200):
# make_lad 1.0, make_classification 2.0 (the clouds and the shifted copy), make_ridge 2.0 (the
# scaled draws and their DCT).
GENERATOR_COPIES: dict[str, float] = {"lad": 1.0, "svm": 2.0, "klr": 2.0, "ridge": 2.0}


def generate(name: str, *, n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic data for problem ``name`` (LAD with outliers, overlapping classes, the FD
    paper's ridge data). An ``n`` x ``p`` instance that would not fit in the memory available
    is refused (ValueError naming n and p, the bytes needed and available) before any
    array is allocated."""
    from instances.generators import check_size, make_classification, make_lad
    from instances.ridge import make_ridge

    if name not in PROBLEMS:
        raise ValueError(f"Unknown problem {name!r}; choose one of {', '.join(PROBLEMS)}.")
    n, p = check_size(f"generate({name!r})", n, p, copies=GENERATOR_COPIES[name])
    if name == "lad":
        X, y, _, _ = make_lad(n=n, p=p, seed=seed)
    elif name in ("svm", "klr"):
        X, y = make_classification(n=n, p=p, separation=2.0, label_noise=0.02, seed=seed)
    elif name == "ridge":
        X, y, _ = make_ridge(n=n, d=p, seed=seed)
    else:
        raise ValueError(f"Unknown problem {name!r}; choose one of {', '.join(PROBLEMS)}.")
    return X, y


def default_instance(
    name: str, overrides: dict[str, Any] | None = None, params: dict[str, Any] | None = None
) -> Problem:
    """The built-in instance of ``name``, with generator ``overrides`` (n, p, seed)."""
    spec = {**DEFAULTS[name], **(overrides or {})}
    unknown = set(spec) - {"n", "p", "seed"}
    if unknown:
        raise ValueError(f"--generate takes n, p and seed; got {', '.join(sorted(unknown))}.")
    X, y = generate(name, n=int(spec["n"]), p=int(spec["p"]), seed=int(spec["seed"]))
    defaults = {"ridge": {"alpha": 10.0}}.get(name, {})
    problem = make_problem(name, X, y, None, {**defaults, **(params or {})})
    problem.source = (f"generated: optmodels.problems.generate({name!r}, n={int(spec['n'])}, "
                      f"p={int(spec['p'])}, seed={int(spec['seed'])})")
    return problem
