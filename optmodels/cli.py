"""The ``optmodels`` command: solve, compare, export and generate (a stable, scriptable CLI).

    optmodels solve    {lad,svm,klr,ridge} --data FILE [--strategy full] [--solver NAME]
                       [--param KEY=VALUE ...] [--json] [--solution-out FILE.npy]
    optmodels compare  [{lad,svm,klr,ridge}] [--data FILE | --generate KEY=VALUE,...]
                       [--strategies a,b] [--json] [--plot FILE.png] [--quiet]
    optmodels export   {lad,svm,ridge} --data FILE --out FILE.{mps,lp} [--param KEY=VALUE ...]
    optmodels generate {lad,svm,klr,ridge} --n N --p P --seed S --out FILE

``--param`` keys that the problem declares (C, kernel, gamma, degree, coef0, alpha,
fit_intercept, lam, bound_tol) configure the problem; the others (tol, time_limit, max_iter,
form, ...) go to the strategy. Bad input exits with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from optmodels.problems import PROBLEMS, make_problem
from optmodels.validation import parse_param_strings

EXIT_BAD_INPUT = 2
EXIT_NOT_OPTIMAL = 3


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="optmodels", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    data_args = argparse.ArgumentParser(add_help=False)
    data_args.add_argument("--target", default="y", help="target column of a CSV file (default y)")
    data_args.add_argument("--weight", default=None, help="sample-weight column of a CSV file")
    data_args.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="problem or strategy parameter, repeatable (e.g. --param C=10)",
    )

    s = sub.add_parser("solve", parents=[data_args], help="solve one problem with one strategy")
    s.add_argument("problem", choices=sorted(PROBLEMS))
    s.add_argument("--data", required=True, help="data file (.csv, .svm/.libsvm/.txt, .npz)")
    s.add_argument("--strategy", default="full")
    s.add_argument(
        "--solver", default=None, help="backend for full solves (highs, clarabel, ecos, cholesky)"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--solution-out", default=None, metavar="FILE.npy")
    s.add_argument("--verbose", action="store_true")

    c = sub.add_parser("compare", parents=[data_args], help="strategies side by side")
    c.add_argument("problem", nargs="?", default="lad", choices=sorted(PROBLEMS))
    src = c.add_mutually_exclusive_group()
    src.add_argument("--data", default=None)
    src.add_argument(
        "--generate",
        default=None,
        metavar="KEY=VALUE,...",
        help="generate the instance (e.g. n=10000,p=10,seed=0)",
    )
    c.add_argument(
        "--strategies",
        default=None,
        help="comma-separated (default: full and the problem's main strategies)",
    )
    c.add_argument("--json", action="store_true", help="print a JSON list, one object per strategy")
    c.add_argument("--plot", default=None, metavar="FILE.png", help="write convergence plots")
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    e = sub.add_parser("export", parents=[data_args], help="write the model as MPS or LP")
    e.add_argument("problem", choices=sorted(p for p in PROBLEMS if p != "klr"))
    e.add_argument("--data", required=True)
    e.add_argument("--out", required=True, metavar="FILE.{mps,lp}")
    e.add_argument("--form", default=None, help="model form (lad: primal/dual; svm: primal/dual)")

    g = sub.add_parser("generate", help="write a seeded synthetic instance")
    g.add_argument("problem", choices=sorted(PROBLEMS))
    g.add_argument("--n", type=int, required=True)
    g.add_argument("--p", type=int, required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return {"solve": _solve, "compare": _compare, "export": _export, "generate": _generate}[
            args.command
        ](args)
    except (ValueError, FileNotFoundError, OSError) as exc:
        print(f"optmodels {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _load(args: argparse.Namespace) -> Any:
    from instances.io import load

    return load(args.data, target=args.target, weight=args.weight)


def _split_params(problem_name: str, pairs: list[str]) -> tuple[dict[str, str], dict[str, Any]]:
    params = parse_param_strings(pairs)
    declared = PROBLEMS[problem_name].PARAMS
    model = {k: v for k, v in params.items() if k in declared}
    strategy = {k: _literal(v) for k, v in params.items() if k not in declared}
    return model, strategy


def _literal(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def _solve(args: argparse.Namespace) -> int:
    data = _load(args)
    model_params, options = _split_params(args.problem, args.param)
    problem = make_problem(args.problem, data.X, data.y, data.sample_weight, model_params)
    if args.solver is not None:
        options["solver"] = args.solver
    if args.verbose:
        options["verbose"] = True
    res = problem.solve(strategy=args.strategy, **options)
    if args.solution_out and res.x is not None:
        _save_npy(args.solution_out, res.x)
    from optmodels.compare import record

    rec = record(problem, res)
    if args.json:
        print(json.dumps(rec))
    else:
        for key, value in rec.items():
            print(f"{key:>16}: {value}")
    return 0 if res.is_optimal else EXIT_NOT_OPTIMAL


def _save_npy(path: str, x: np.ndarray) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".npy", dir=target.parent or ".")
    os.close(fd)
    try:
        np.save(tmp, x)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _compare(args: argparse.Namespace) -> int:
    from optmodels.compare import compare
    from optmodels.problems import DEFAULT_STRATEGIES, default_instance

    model_params, options = _split_params(args.problem, args.param)
    if args.data:
        data = _load(args)
        problem = make_problem(args.problem, data.X, data.y, data.sample_weight, model_params)
    else:
        gen = parse_param_strings(args.generate.split(",")) if args.generate else {}
        problem = default_instance(
            args.problem, {k: _literal(v) for k, v in gen.items()}, model_params
        )
    names = args.strategies.split(",") if args.strategies else DEFAULT_STRATEGIES[args.problem]
    table = compare(
        problem, names, options={s: dict(options) for s in names}, progress=not args.quiet
    )
    if args.json:
        print(json.dumps(table.records))
    else:
        print(table.to_text())
    if args.plot:
        table.plot(args.plot)
    return 0


def _export(args: argparse.Namespace) -> int:
    from optmodels.export import write

    data = _load(args)
    model_params, options = _split_params(args.problem, args.param)
    if options:
        raise ValueError(
            f"Unknown parameter(s) {', '.join(options)} for export of {args.problem}; "
            f"valid ones are {', '.join(PROBLEMS[args.problem].PARAMS)}."
        )
    problem = make_problem(args.problem, data.X, data.y, data.sample_weight, model_params)
    write(problem, args.out, form=args.form)
    print(f"wrote {args.out}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from instances.io import save
    from optmodels.problems import generate

    X, y = generate(args.problem, n=args.n, p=args.p, seed=args.seed)
    save(args.out, X, y)
    print(f"wrote {args.out} ({X.shape[0]} rows, {X.shape[1]} features)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
