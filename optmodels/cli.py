"""The ``optmodels`` command: solve, fit, predict, compare, export, info, generate.

    optmodels solve    {lad,svm,klr,ridge} --data FILE [--strategy full] [--solver NAME]
                       [--param KEY=VALUE ...] [--json] [--solution-out FILE.{npy,csv,json}]
    optmodels compare  [{lad,svm,klr,ridge}] [--data FILE | --generate KEY=VALUE,...]
                       [--strategies a,b] [--json] [--plot FILE.png] [--quiet]
    optmodels export   {lad,svm,ridge} --data FILE --out FILE.{mps,lp} [--param KEY=VALUE ...]
                       [--form F] [--mps-format {free,fixed}]
    optmodels generate {lad,svm,klr,ridge} --n N --p P --seed S --out FILE
    optmodels fit      {lad,svm,klr,ridge} --data FILE --model-out MODEL [--strategy S]
                       [--param KEY=VALUE ...] [--json]
    optmodels predict  --model MODEL --data FILE [--out FILE.csv] [--proba]

``--param`` keys that the problem declares (C, kernel, gamma, degree, coef0, alpha,
fit_intercept, lam, bound_tol) configure the problem; the others (tol, time_limit, max_iter,
form, ...) are strategy options, checked by the strategy's table (``solvers.options``). With
``compare``, ``--param STRATEGY.KEY=VALUE`` (e.g. ``--param rfd.m=64``) sets one strategy's
option and a bare ``--param KEY=VALUE`` goes to every compared strategy that has the option.
With ``fit``, keys the estimator takes (e.g. SVMClassifier's C, kernel, probability,
class_weight=balanced) are its hyperparameters and the others its ``strategy_options``.

``solve`` and ``fit`` also read data too large for memory lazily, as row-chunked Dask arrays
(:mod:`instances.lazy`): ``--data 'chunks/*.npy'`` (a glob of .npy chunks ``[X | y]``, the
target last), ``--data 'parts/*.csv'`` (CSV files with a header row) or ``--data DIR``
(Parquet files; for CSV and Parquet: feature columns, the ``--target`` column, optionally
``--weight``), for lad (``--strategy aid``), ridge (a sketch such as ``pcg-rfd``)
and the binary linear svm (``--strategy aid --param kernel=linear``; ``fit`` collects no
support rows); another strategy or kernel is refused before any data are read. The solve then
runs on the active Dask scheduler:
``--workers N`` starts a LocalCluster of N worker processes for the command and stops it after,
``--scheduler ADDRESS`` connects to a running one (default: Dask's threads in this process).

``solve`` and ``fit`` report the coefficients under the data file's feature names (LAD, ridge,
linear SVM; the intercept last) or, for kernel models, the number of support vectors. ``fit``
writes a model file (:mod:`optmodels.model_io`: arrays and a JSON header, never pickle) that
``predict`` reads; the target column is optional for ``predict``.

Exit status: 0 done; 2 bad input (one line on stderr naming the fix); 3 the solve did not end
at a verified optimum; 130 stopped by Ctrl-C (a solve stops at its next check and its best
point is still printed and written; a second Ctrl-C stops at once, with one line); 1 an internal
error (one line; the traceback is written to a log file).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import csv
import dataclasses
import gc
import importlib
import itertools
import json
import os
import sys
import tempfile
import traceback
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from optmodels.problems import PROBLEMS, make_problem
from optmodels.validation import parse_param_strings
from solvers.errors import SolveError

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_OPTIMAL = 3
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, the shell's convention): a solve stopped by it still prints and
writes its best point; anything else stops with one line."""

OPTIONAL_DEPENDENCIES = {
    "matplotlib": "plot",
    "ecos": "ecos",
    "dask": "dask",
    "distributed": "dask",
    "pyarrow": "dask",
    "statsmodels": "compare",
}
"""Optional modules and the extra that installs them (``pip install "optmodels[extra]"``)."""


DATA_HELP = ("data file (.csv, .svm/.libsvm/.txt, .npz), or read lazily (lad, ridge, linear svm "
             "with --strategy aid): a glob of .npy chunks [X | y] ('chunks/*.npy'), a glob "
             "of CSV files with a header row ('parts/*.csv') or a directory of Parquet files")
LAZY_PROBLEMS = ("lad", "ridge", "svm")
"""The problems ``solve`` / ``fit`` run on lazily read (Dask) data, with one of the problem's
``DASK_STRATEGIES`` (the SVM with the linear kernel only)."""


DESCRIPTION = (
    "Training problems of machine learning as algebraic models: solve them exactly, by "
    "decomposition or by sketching, compare the strategies, fit and predict, export models."
)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose epilog can be built when help is printed (``epilog_from``), so
    the strategy tables are loaded for ``--help`` only, never for a plain command."""

    epilog_from: Any = None

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()


def _strategy_epilog() -> str:
    """Each problem's strategies and their option names, from the validating tables."""
    from optmodels.strategies import options_for, strategies_for

    lines = ["strategies and their options (--param KEY=VALUE; details: optmodels info PROBLEM"
             " STRATEGY):"]
    for problem in PROBLEMS:
        for strategy in strategies_for(problem):
            names = ", ".join(options_for(problem, strategy))
            lines.append(f"  {problem} {strategy}: {names}")
    return "\n".join(lines)


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse turns the error into exit 2, one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="optmodels", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="command", required=True)
    data_args = argparse.ArgumentParser(add_help=False)
    data_args.add_argument("--target", default="y", help="target column of a CSV file (default y)")
    data_args.add_argument("--weight", default=None, help="sample-weight column of a CSV file")
    data_args.add_argument(
        "--n-features", type=int, default=None, metavar="N",
        help="svmlight files: the number of feature columns (at least the largest index; "
             "needed above 10^7)")
    data_args.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="problem parameter or strategy option, repeatable (e.g. --param C=10); with "
        "compare, STRATEGY.KEY=VALUE sets one strategy's option (e.g. --param rfd.m=64)",
    )

    dask_args = argparse.ArgumentParser(add_help=False)
    dask_args.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="start a Dask LocalCluster of N worker processes for this command (lazy data)")
    dask_args.add_argument(
        "--scheduler", default=None, metavar="ADDRESS",
        help="run on the running Dask scheduler at ADDRESS (e.g. tcp://host:8786)")

    s = sub.add_parser("solve", parents=[data_args, dask_args],
                       help="solve one problem with one strategy",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.epilog_from = _strategy_epilog
    s.add_argument("problem", choices=sorted(PROBLEMS), help="the problem to solve")
    s.add_argument("--data", required=True, help=DATA_HELP)
    s.add_argument(
        "--strategy",
        default="full",
        help="full (monolithic, default), aid, smo, block or a ridge sketch (e.g. pcg-fd)",
    )
    s.add_argument(
        "--solver", default=None, help="backend for full solves (highs, clarabel, ecos, cholesky)"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument(
        "--solution-out",
        default=None,
        metavar="FILE.{npy,csv,json}",
        help="write the solution; .npy: the array, .csv: name,value rows, .json: names and values",
    )
    s.add_argument("--verbose", action="store_true",
                   help="the solver's detailed lines too (on stderr, with the progress lines)")
    s.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr (a long solve logs one every few seconds)")
    s.add_argument(
        "--allow-large",
        action="store_true",
        help="run a full solve above the memory budget (OPTMODELS_MEMORY_BUDGET_MB)",
    )

    c = sub.add_parser("compare", parents=[data_args], help="strategies side by side",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.epilog_from = _strategy_epilog
    c.add_argument(
        "problem", nargs="?", default="lad", choices=sorted(PROBLEMS), help="default lad"
    )
    src = c.add_mutually_exclusive_group()
    src.add_argument("--data", default=None, help="data file (default: a generated instance)")
    src.add_argument(
        "--generate",
        default=None,
        metavar="KEY=VALUE,...",
        help="generate the instance (e.g. n=10000,p=10,seed=0)",
    )
    src.add_argument(
        "--instances", nargs="+", default=None, metavar="SPEC",
        help="several instances, one comparison each and a table across them: data files, "
             "globs of data files, built-in datasets (stackloss, breast_cancer) or "
             "generate:n=N,p=P,seed=S",
    )
    c.add_argument(
        "--strategies",
        default=None,
        help="comma-separated (default: full and the problem's main strategies)",
    )
    c.add_argument("--json", action="store_true", help="print a JSON list, one object per strategy")
    c.add_argument("--format", default="text", choices=TABLE_FORMATS,
                   help="the table: text (default), md (Markdown), latex or csv")
    c.add_argument("--repeat", type=_positive_int, default=3, metavar="N",
                   help="timed runs per strategy after the warm-up; the table shows the median "
                        "(default 3)")
    c.add_argument("--no-warmup", action="store_true",
                   help="no warm-up call (first-call costs then count as solve time)")
    c.add_argument("--memory", action="store_true",
                   help="measure each strategy's peak memory in a fresh process (one more "
                        "solve each)")
    c.add_argument("--out", default=None, metavar="RESULTS.json",
                   help="write the result file (re-tabulate with optmodels table, re-plot "
                        "with optmodels plot)")
    c.add_argument("--plot", default=None, metavar="FILE.png", help="write convergence plots")
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    tb = sub.add_parser("table", help="the table of a comparison's result file")
    tb.add_argument("results", help="result file written by optmodels compare --out")
    tb.add_argument("--format", default="text", choices=TABLE_FORMATS,
                    help="text (default), md (Markdown), latex or csv")

    pl = sub.add_parser("plot", help="the convergence figure of a comparison's result file")
    pl.add_argument("results", help="result file written by optmodels compare --out")
    pl.add_argument("--out", required=True, metavar="FILE.png", help="figure to write "
                    "(.png, .pdf or .svg)")

    e = sub.add_parser("export", parents=[data_args], help="write the model as MPS or LP")
    e.add_argument(
        "problem", choices=sorted(p for p in PROBLEMS if p != "klr"), help="the model to write"
    )
    e.add_argument("--data", required=True, help="data file (.csv, .svm/.libsvm/.txt, .npz)")
    e.add_argument(
        "--out", required=True, metavar="FILE.{mps,lp}", help="output file (suffix: the format)"
    )
    e.add_argument("--form", default=None, help="model form (lad: primal/dual; svm: primal/dual)")
    e.add_argument(
        "--mps-format",
        choices=("free", "fixed"),
        default="free",
        help="MPS layout: free (default) or fixed (names of at most 8 characters)",
    )

    i = sub.add_parser(
        "info", help="the problems, their parameters and each strategy's options"
    )
    i.add_argument("problem", nargs="?", choices=sorted(PROBLEMS), help="one problem")
    i.add_argument("strategy", nargs="?", help="one strategy of that problem")

    f = sub.add_parser("fit", parents=[data_args, dask_args],
                       help="fit an estimator and save the model",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    f.epilog_from = _strategy_epilog
    f.add_argument("problem", choices=sorted(PROBLEMS), help="the problem to fit")
    f.add_argument("--data", required=True, help=DATA_HELP)
    f.add_argument(
        "--strategy", default=None, help="solution strategy (default: the estimator's own)"
    )
    f.add_argument("--model-out", required=True, metavar="MODEL", help="model file to write")
    f.add_argument("--json", action="store_true", help="print one JSON object")
    f.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr (a long solve logs one every few seconds)")

    pr = sub.add_parser("predict", help="predict with a saved model")
    pr.add_argument("--model", required=True, help="model file written by optmodels fit")
    pr.add_argument("--data", required=True, help="data file; its target column is optional")
    pr.add_argument("--target", default="y", help="target column to leave out (default y)")
    pr.add_argument("--n-features", type=int, default=None, metavar="N",
                    help="svmlight files: the number of feature columns")
    pr.add_argument("--out", default=None, metavar="FILE.csv", help="write the predictions")
    pr.add_argument(
        "--proba", action="store_true", help="class probabilities (classifiers with predict_proba)"
    )

    g = sub.add_parser("generate", help="write a seeded synthetic instance")
    g.add_argument("problem", choices=sorted(PROBLEMS), help="the problem the data is for")
    g.add_argument("--n", type=int, required=True, help="number of rows")
    g.add_argument("--p", type=int, required=True, help="number of features")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument("--out", required=True, help="output file (.csv, .svm, .npz)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status.

    A user error (bad value, missing file, a solve that ``require_optimal`` refused, a missing
    optional dependency) prints one line and returns 2; anything else prints one line pointing
    to a log file with the traceback and returns 1.

    Run as the command (``argv`` None: the console script, ``python -m optmodels``), the
    objects of the modules imported so far, which live until the process ends, are moved out
    of the garbage collector's reach (:func:`gc.freeze`; its collections during the command
    then walk only newer objects: 0.03 s), and so are all objects at the interpreter's exit,
    so that its last collections do not walk what the imported libraries leave (measured 0.3 s
    of a 1.5 s ``solve`` when numba was imported). The command's output and files are
    complete before then.
    """
    if argv is None:
        gc.freeze()
        atexit.register(gc.freeze)
    args = _parser().parse_args(argv)
    try:
        _check_outputs(args)
    except ValueError as exc:
        return _error(args.command, _one_line(exc))
    command = {
        "solve": _solve,
        "compare": _compare,
        "table": _table,
        "plot": _plot,
        "export": _export,
        "generate": _generate,
        "info": _info,
        "fit": _fit,
        "predict": _predict,
    }
    try:
        with _dask_scheduler(args), _progress_lines(args):
            return command[args.command](args)
    except KeyboardInterrupt:  # a second Ctrl-C, or one outside a solve: one line, no traceback
        print(f"optmodels {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`optmodels info | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, OSError, SolveError) as exc:  # ValueError covers DataError, ExportError
        return _error(args.command, _one_line(exc))
    except ImportError as exc:
        extra = OPTIONAL_DEPENDENCIES.get((exc.name or "").split(".")[0])
        if extra is None:
            return _internal_error(args.command, exc)
        message = _one_line(exc)
        if "optmodels[" not in message:
            message = _missing(exc.name or "", extra, message)
        return _error(args.command, message)
    except Exception as exc:  # noqa: BLE001 - the one place that turns bugs into a log file
        return _internal_error(args.command, exc)


@contextlib.contextmanager
def _progress_lines(args: argparse.Namespace) -> Iterator[None]:
    """Show the solvers' progress lines (:mod:`solvers.progress`) on stderr, one line each,
    for the command: INFO records of the ``solvers`` loggers, and with ``--verbose`` the
    VERBOSE ones (the strategies' detailed lines). ``--quiet`` shows none. The loggers are
    restored afterwards (``main`` may run several times in one process)."""
    import logging

    from solvers.progress import VERBOSE

    if getattr(args, "quiet", False):
        yield
        return
    from solvers.progress import LOGGER_NAME

    log = logging.getLogger("solvers")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    saved = log.level, log.propagate
    # a library's logging.config.dictConfig (disable_existing_loggers=True, as Dask's
    # distributed does) disables the loggers that exist: the command's own lines come back
    loggers = [log, logging.getLogger(LOGGER_NAME)]
    disabled = [lg.disabled for lg in loggers]
    child_level = loggers[1].level
    for lg in loggers:
        lg.disabled = False
    loggers[1].setLevel(logging.NOTSET)  # the command's level decides (set on "solvers")
    log.addHandler(handler)
    log.setLevel(VERBOSE if getattr(args, "verbose", False) else logging.INFO)
    log.propagate = False  # one line each, whatever the root logger has
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]
        for lg, was in zip(loggers, disabled, strict=True):
            lg.disabled = was
        loggers[1].setLevel(child_level)


OUTPUT_FLAGS = ("solution_out", "model_out", "out", "plot")
"""Arguments naming a file that a command writes."""
TABLE_FORMATS = ("text", "md", "latex", "csv")
"""``--format`` of compare and table."""
INPUT_FLAGS = ("data", "model", "results")
"""Arguments naming a file (or a glob, or a directory of files) that a command reads."""


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output path that is one of the command's inputs.

    Writing ``--solution-out``, ``--model-out``, ``--out`` or ``--plot`` onto ``--data`` or
    ``--model`` would replace the user's data with the result (and exit 0). The same file is
    recognised through links and relative spellings (:func:`os.path.samefile` when both
    exist, else the resolved paths). A glob or a directory read lazily counts as every file it
    matches, and an output inside an input directory (a Parquet dataset) is refused too: it
    would join the data on the next read.
    """
    for out_dest in OUTPUT_FLAGS:
        out = getattr(args, out_dest, None)
        if out is None:
            continue
        target = Path(out)
        for in_dest in INPUT_FLAGS:
            source = getattr(args, in_dest, None)
            if source is None or (args.command == "generate" and in_dest == "data"):
                continue
            clash = _clashing_input(target, str(source))
            if clash is not None:
                raise ValueError(
                    f"{_flag(out_dest)} {out!r} is the input {clash} of {_flag(in_dest)}: "
                    "writing it would overwrite the input. Choose another output path.")


def _clashing_input(target: Path, source: str) -> str | None:
    """The input file (or directory) of ``source`` that writing ``target`` would overwrite or
    join; None when there is none."""
    import fnmatch
    import glob

    from instances.lazy import is_lazy_source

    resolved = target.resolve()
    if Path(source).is_dir():
        base = Path(source).resolve()
        return repr(source) if base == resolved or base in resolved.parents else None
    paths = sorted(glob.glob(source)) if is_lazy_source(source) else [source]
    pattern = os.path.abspath(source)
    if is_lazy_source(source) and fnmatch.fnmatch(os.path.abspath(target), pattern):
        return f"pattern {source!r}"  # the next read of the glob would take the output in
    for path in paths:
        if _same_file(target, Path(path)):
            return repr(path)
    return None


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def _error(command: str, message: str) -> int:
    print(f"optmodels {command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _internal_error(command: str, exc: BaseException) -> int:
    fd, log = tempfile.mkstemp(prefix=f"optmodels-{command}-", suffix=".log")
    with os.fdopen(fd, "w") as fh:
        fh.write(traceback.format_exc())
    print(
        f"optmodels {command}: internal error: {_one_line(exc) or type(exc).__name__} "
        f"(details in {log})",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _missing(module: str, extra: str, why: str) -> str:
    return f"{why}; {module} is optional: install it with pip install \"optmodels[{extra}]\""


def _require(module: str, feature: str) -> None:
    """Import the optional ``module`` now, before any work, or explain how to install it."""
    try:
        importlib.import_module(module)
    except ImportError:
        extra = OPTIONAL_DEPENDENCIES[module]
        raise ModuleNotFoundError(
            _missing(module, extra, f"{feature} needs {module}"), name=module
        ) from None


def _load(args: argparse.Namespace, lazy: bool = False) -> Any:
    """The data of ``--data``; with ``lazy`` (solve, fit) a glob of .npy chunks or a Parquet
    directory is read as Dask arrays (:func:`instances.lazy.load_lazy`)."""
    from instances.io import load
    from instances.lazy import is_lazy_source, load_lazy

    if not (lazy and is_lazy_source(args.data)):
        return load(args.data, target=args.target, weight=args.weight,
                    n_features=_n_features(args))
    _require("dask", f"--data {args.data!r} (lazy data)")
    return load_lazy(args.data, target=args.target, weight=args.weight)


def _n_features(args: argparse.Namespace) -> int | None:
    """``--n-features`` for an svmlight ``--data`` file; refused for other formats."""
    n = getattr(args, "n_features", None)
    if n is None:
        return None
    if Path(args.data).suffix.lower() not in (".svm", ".libsvm", ".txt"):
        raise ValueError(f"--n-features applies to svmlight files (.svm, .libsvm, .txt); "
                         f"--data {args.data!r} is not one. Drop --n-features.")
    if n < 1:
        raise ValueError(f"--n-features must be a positive number of columns; got {n}.")
    return n


def _check_lazy(args: argparse.Namespace, strategy: str, kernel: str | None = None) -> None:
    """Before reading anything: a lazy ``--data`` source (glob of .npy chunks, Parquet
    directory) needs a problem of :data:`LAZY_PROBLEMS`, one of its ``DASK_STRATEGIES`` and,
    for the SVM, ``kernel`` linear (``None``: not an SVM). Data files pass unchecked."""
    from instances.lazy import is_lazy_source

    if not is_lazy_source(args.data):
        return
    where = f"--data {args.data!r}: on lazily read (Dask) data"
    if args.problem not in LAZY_PROBLEMS:
        names = ", ".join(LAZY_PROBLEMS[:-1]) + f" and {LAZY_PROBLEMS[-1]}"
        raise ValueError(
            f"--data {args.data!r}: lazily read data (Dask) are supported for {names}, not "
            f"{args.problem}; load the data into a .npz or .csv file instead.")
    from optmodels.strategies import AUTO_STRATEGY

    runs = PROBLEMS[args.problem].DASK_STRATEGIES
    if strategy not in runs and strategy != AUTO_STRATEGY:  # auto runs runs[0] on Dask
        raise ValueError(
            f"{where} {args.problem} runs with --strategy {' or '.join(runs)}; got --strategy "
            f"{strategy}. Pass --strategy {runs[0]}, or load the data into a .npz file for the "
            "other strategies.")
    if kernel is not None and str(kernel).strip() != "linear":
        raise ValueError(
            f"{where} the SVM needs --param kernel=linear (linear-SVM AID runs chunk by chunk; "
            f"kernel={kernel} needs every row in memory); got kernel={kernel}. Pass --param "
            "kernel=linear, or load the data into a .npz file.")


def _kernel_of(problem: str, params: dict[str, Any]) -> str | None:
    """The SVM's kernel from ``--param kernel=`` (the problem's default if absent); None for
    the other problems."""
    if problem != "svm":
        return None
    return str(params.get("kernel", PROBLEMS["svm"].PARAMS["kernel"].default))


@contextlib.contextmanager
def _dask_scheduler(args: argparse.Namespace) -> Iterator[None]:
    """``--workers N``: a LocalCluster of N processes (one thread each) for the command;
    ``--scheduler ADDRESS``: a client of that scheduler; neither: nothing."""
    workers, address = getattr(args, "workers", None), getattr(args, "scheduler", None)
    if workers is None and address is None:
        yield
        return
    if workers is not None and address is not None:
        raise ValueError("--workers and --scheduler exclude each other: --workers N starts a "
                         "local cluster, --scheduler ADDRESS uses a running one; pass one.")
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be a positive number of processes; got {workers}.")
    _require("distributed", "--workers/--scheduler")
    import logging

    import distributed

    cluster = None
    if address is None:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None,
                                           silence_logs=logging.ERROR)
    client = distributed.Client(cluster if cluster is not None else address)
    try:
        yield
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _split_params(
    problem_name: str,
    pairs: list[str],
    strategies: list[str],
    declared: Collection[str] | None = None,
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Problem parameters, and each strategy's options (values stay strings: the tables
    convert them). ``S.KEY=V`` goes to strategy S; a bare key is a problem parameter if the
    problem declares it (or it is in ``declared``, e.g. an estimator's hyperparameters), else
    an option of every strategy in ``strategies`` that has it."""
    from optmodels.strategies import options_for

    declared = PROBLEMS[problem_name].PARAMS if declared is None else declared
    model: dict[str, str] = {}
    options: dict[str, dict[str, str]] = {s: {} for s in strategies}
    for key, value in parse_param_strings(pairs).items():
        strategy, dot, name = key.rpartition(".")
        if dot:
            if strategy not in options:
                raise ValueError(
                    f"--param {key}: {strategy!r} is not among the strategies run "
                    f"({', '.join(strategies)}); write --param STRATEGY.KEY=VALUE for one of them."
                )
            options[strategy][name] = value
        elif key in declared:
            model[key] = value
        else:
            owners = [s for s in strategies if key in options_for(problem_name, s)]
            if not owners:
                raise ValueError(_unknown_param(problem_name, key, strategies, declared))
            for s in owners:
                options[s][key] = value
    return model, options


def _unknown_param(
    problem_name: str, key: str, strategies: list[str], declared: Collection[str]
) -> str:
    from optmodels.strategies import options_for

    names = sorted({n for s in strategies for n in options_for(problem_name, s)})
    return (
        f"Unknown parameter {key!r}: not a parameter of {problem_name} "
        f"({', '.join(declared)}) nor an option of strategy "
        f"{', '.join(strategies)} ({', '.join(names)})."
    )


def _literal(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def _solve(args: argparse.Namespace) -> int:
    from optmodels.strategies import options_for

    options_for(args.problem, args.strategy)  # an unknown strategy fails before loading data
    _check_solution_out(args.solution_out)
    model_params, per_strategy = _split_params(args.problem, args.param, [args.strategy])
    options: dict[str, Any] = per_strategy[args.strategy]
    _check_lazy(args, args.strategy, _kernel_of(args.problem, model_params))
    data = _load(args, lazy=True)
    problem = make_problem(args.problem, data.X, data.y, data.sample_weight, model_params)
    problem.feature_names = data.feature_names
    if args.solver is not None:
        options["solver"] = args.solver
    if args.verbose:
        options["verbose"] = True
    res = problem.solve(strategy=args.strategy, allow_large=args.allow_large, **options)
    if args.solution_out and res.x is not None:
        _save_solution(args.solution_out, problem, res)
    from optmodels.compare import record

    rec = record(problem, res)
    named = _named_solution(problem, res, data.feature_names)
    rec.update(named)
    if args.json:
        print(json.dumps(rec))
    else:
        names = list(named["coefficients"]) if "coefficients" in named else None
        if names is not None and len(names) != np.size(res.x):  # a dual linear SVM: w given
            res = dataclasses.replace(res, x=np.array(list(named["coefficients"].values())))
        print(res.summary(names, n_support=named.get("n_support_vectors")))
    return _exit_status([res])


def _exit_status(results: list[Any]) -> int:
    """0 when every solve is optimal; EXIT_INTERRUPTED when one was stopped by Ctrl-C;
    EXIT_NOT_OPTIMAL otherwise."""
    from solvers.result import TerminationCondition

    if all(r.is_optimal for r in results):
        return 0
    if any(r.termination is TerminationCondition.INTERRUPTED for r in results):
        return EXIT_INTERRUPTED
    return EXIT_NOT_OPTIMAL


def _named_solution(problem: Any, res: Any, names: list[str]) -> dict[str, Any]:
    """``coefficients`` {feature name: value} and ``intercept`` from the result's typed
    solution (:mod:`solvers.solution`) for LAD, ridge and the linear SVM / KLR (w = sum_s
    dual_coef_s x_s for a dual); ``n_support_vectors`` (alpha_i above SUPPORT_REL max alpha)
    for the other kernels."""
    from optmodels.svm import SUPPORT_REL
    from solvers.solution import KernelSolution

    sol = res.solution
    if sol is None:
        return {}
    if isinstance(sol, KernelSolution):
        if sol.kernel.name != "linear":
            a = np.abs(sol.dual_coef)  # |alpha_s y_s| on the support
            n_sv = int(np.count_nonzero(a > SUPPORT_REL * float(np.max(a, initial=0.0))))
            return {"n_support_vectors": int(res.extra.get("n_sv", n_sv))}
        sol = sol.linear()
    if sol.coef.size != len(names):
        return {}
    return {"coefficients": dict(zip(names, sol.coef.tolist(), strict=True)),
            "intercept": float(sol.intercept)}




SOLUTION_FORMATS = (".npy", ".csv", ".json")


def _check_solution_out(path: str | None) -> None:
    if path is not None and Path(path).suffix.lower() not in SOLUTION_FORMATS:
        raise ValueError(
            f"--solution-out {path!r}: the extension names the format; use one of "
            f"{', '.join(SOLUTION_FORMATS)}."
        )


def _solution_table(problem: Any, res: Any) -> tuple[list[str], list[float]]:
    """Names and values: LAD beta_j (+ intercept), SVM w_j or alpha_i (+ b), KLR alpha_i + b,
    ridge x_j (+ intercept with fit_intercept); x_i for anything else."""
    x = [float(v) for v in np.asarray(res.x, dtype=float).ravel()]
    kind, extra = getattr(problem, "NAME", ""), res.extra
    dual = extra.get("form") == "dual" or len(x) != getattr(problem, "p", -1)
    prefix, tail = "x", None
    if kind == "lad":
        prefix, tail = "beta", "intercept" if problem.fit_intercept else None
    elif kind == "svm":
        prefix, tail = ("alpha" if dual else "w"), "b"
    elif kind == "klr":
        prefix, tail = "alpha", "b"
    elif kind == "ridge" and problem.fit_intercept:
        tail = "intercept"
    names = [f"{prefix}_{i}" for i in range(len(x))]
    if tail is not None and extra.get(tail) is not None:
        names.append(tail)
        x.append(float(extra[tail]))
    return names, x


def _save_solution(path: str, problem: Any, res: Any) -> None:
    """Write the solution atomically as .npy (``res.x``), .csv (name,value) or .json."""
    from instances.atomic import atomic_write

    _check_solution_out(path)
    suffix = Path(path).suffix.lower()
    names, values = _solution_table(problem, res)
    with atomic_write(path, text=suffix != ".npy") as fh:
        if suffix == ".npy":
            np.save(fh, np.asarray(res.x, dtype=float))
        elif suffix == ".csv":
            fh.write("name,value\n")
            fh.writelines(f"{n},{v!r}\n" for n, v in zip(names, values, strict=True))
        else:
            json.dump({"names": names, "values": values}, fh, allow_nan=False)
            fh.write("\n")


def _compare(args: argparse.Namespace) -> int:
    from optmodels.compare import compare
    from optmodels.problems import DEFAULT_STRATEGIES, default_instance
    from optmodels.strategies import options_for

    if args.plot:
        _require("matplotlib", "--plot")
    names = args.strategies.split(",") if args.strategies else DEFAULT_STRATEGIES[args.problem]
    names = list(dict.fromkeys(["full", *names]))  # full is the reference
    for name in names:
        options_for(args.problem, name)
    model_params, options = _split_params(args.problem, args.param, names)
    if args.instances:
        return _compare_instances(args, names, model_params, options)
    if args.data:
        data = _load(args)
        problem = make_problem(args.problem, data.X, data.y, data.sample_weight, model_params)
        source = f"file {args.data}"
    else:
        gen = parse_param_strings(args.generate.split(",")) if args.generate else {}
        problem = default_instance(
            args.problem, {k: _literal(v) for k, v in gen.items()}, model_params
        )
        source = problem.source
    table = compare(problem, names, options=options, progress=not args.quiet,
                    repeat=args.repeat, warmup=not args.no_warmup, memory=args.memory,
                    source=source)
    if args.out:
        table.save(args.out)
    if args.json:
        names = (data.feature_names if args.data else
                 [f"x{j + 1}" for j in range(problem.p)])
        print(json.dumps([{**rec, **_named_solution(problem, table.results[rec["strategy"]],
                                                     names)} if rec["strategy"] in table.results
                          else rec for rec in table.records]))  # a refused strategy: no result
    else:
        print(_formatted(table, args.format))
    if args.plot:
        table.plot(args.plot)
    return 0


BUILTIN_DATASETS = ("stackloss", "breast_cancer")
"""Names ``--instances`` reads as the shipped datasets (instances.load_<name>)."""


def _instance_problems(args: argparse.Namespace, model_params: dict[str, Any]) -> list[Any]:
    """The problems of ``--instances``: each data file (a glob expands to its files, sorted),
    built-in dataset or ``generate:KEY=VALUE,...`` spec, with its ``source`` named."""
    import glob

    import instances
    from instances.io import load
    from optmodels.problems import default_instance

    problems = []
    for spec in args.instances:
        if spec in BUILTIN_DATASETS:
            data = getattr(instances, f"load_{spec}")()
            sources = [(data, f"built-in instances.load_{spec}()")]
        elif spec.startswith("generate:"):
            gen = parse_param_strings(spec.removeprefix("generate:").split(","))
            problem = default_instance(args.problem, {k: _literal(v) for k, v in gen.items()},
                                       model_params)
            problems.append(problem)
            continue
        else:
            files = sorted(glob.glob(spec)) if glob.has_magic(spec) else [spec]
            if not files:
                raise ValueError(f"--instances {spec!r} matches no file; give data files, a "
                                 f"glob that matches some, {', '.join(BUILTIN_DATASETS)} or "
                                 "generate:n=N,p=P,seed=S.")
            sources = [(load(f, target=args.target, weight=args.weight), f"file {f}")
                       for f in files]
        for data, source in sources:
            problem = make_problem(args.problem, data.X, data.y, data.sample_weight,
                                   model_params)
            problem.source = source
            problems.append(problem)
    return problems


def _compare_instances(args: argparse.Namespace, names: list[str],
                       model_params: dict[str, Any], options: dict[str, Any]) -> int:
    """``compare --instances``: one comparison per instance, their tables and the table
    across instances, one result file (``--out``) and one figure per instance (``--plot``
    FILE.png gives FILE_1.png, FILE_2.png, ...)."""
    from optmodels.compare import compare_instances, save_study, study_frame, study_text

    problems = _instance_problems(args, model_params)
    tables = compare_instances(problems, names, options=options, progress=not args.quiet,
                               repeat=args.repeat, warmup=not args.no_warmup,
                               memory=args.memory)
    if args.out:
        save_study(args.out, tables)
    if args.json:
        print(study_frame(tables).reset_index().to_json(orient="records"))
    else:
        print(study_text(tables, args.format))
    if args.plot:
        for i, table in enumerate(tables, 1):
            path = Path(args.plot)
            table.plot(str(path.with_name(f"{path.stem}_{i}{path.suffix}")))
    return 0


def _formatted(table: Any, fmt: str) -> str:
    """The comparison's table in ``fmt`` (:data:`TABLE_FORMATS`)."""
    return {"text": table.to_text, "md": table.to_markdown, "latex": table.to_latex,
            "csv": table.to_csv}[fmt]()


def _table(args: argparse.Namespace) -> int:
    from optmodels.compare import load_results, study_text

    tables = load_results(args.results)
    print(_formatted(tables[0], args.format) if len(tables) == 1
          else study_text(tables, args.format))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from optmodels.compare import load_results

    _require("matplotlib", "optmodels plot")
    tables = load_results(args.results)
    path = Path(args.out)
    outs = [path] if len(tables) == 1 else [
        path.with_name(f"{path.stem}_{i}{path.suffix}") for i in range(1, len(tables) + 1)]
    for table, out in zip(tables, outs, strict=True):
        table.plot(str(out))
        print(f"wrote {out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from optmodels.export import write

    data = _load(args)
    params = parse_param_strings(args.param)
    unknown = [k for k in params if k not in PROBLEMS[args.problem].PARAMS]
    if unknown:
        raise ValueError(
            f"Unknown parameter(s) {', '.join(unknown)} for export of {args.problem}; "
            f"valid ones are {', '.join(PROBLEMS[args.problem].PARAMS)}."
        )
    problem = make_problem(args.problem, data.X, data.y, data.sample_weight, params)
    problem.feature_names = data.feature_names  # the coefficient columns are named after them
    write(problem, args.out, form=args.form, mps_format=args.mps_format)
    print(f"wrote {args.out}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from instances.io import save
    from optmodels.problems import generate

    X, y = generate(args.problem, n=args.n, p=args.p, seed=args.seed)
    save(args.out, X, y)
    print(f"wrote {args.out} ({X.shape[0]} rows, {X.shape[1]} features)")
    return 0


def _info(args: argparse.Namespace) -> int:
    """Print what validation accepts, from the same tables that validate (one source)."""
    from optmodels.info import describe

    print(describe(args.problem, args.strategy))
    return 0



ESTIMATOR_OF = {
    "lad": "LADRegressor",
    "ridge": "RidgeRegressor",
    "svm": "SVMClassifier",
    "klr": "KLRClassifier",
}
"""The estimator ``optmodels fit PROBLEM`` fits."""


def _fit(args: argparse.Namespace) -> int:
    """Fit the problem's estimator on the data file and save it (see :mod:`optmodels.model_io`)."""
    from optmodels.model_io import estimator_classes, save_model
    from optmodels.strategies import AUTO_STRATEGY, options_for

    est = estimator_classes()[ESTIMATOR_OF[args.problem]]()
    strategy = args.strategy or est.strategy
    # 'auto': the estimator picks one of est.AUTO_STRATEGIES at fit time
    runs = list(est.AUTO_STRATEGIES) if strategy == AUTO_STRATEGY else [strategy]
    for name in runs:
        options_for(args.problem, name)  # an unknown strategy fails before loading data
    declared = [k for k in est.get_params() if k not in ("strategy", "strategy_options")]
    hyper, per = _split_params(args.problem, args.param, runs, declared)
    options = _common_options(args.problem, per, runs)
    est.set_params(**_hyperparameters(est, hyper), strategy=strategy,
                   strategy_options=options or None)
    _check_lazy(args, strategy, getattr(est, "kernel", None) if args.problem == "svm" else None)
    data = _load(args, lazy=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(data.X, data.y, sample_weight=data.sample_weight)
    save_model(est, args.model_out, feature_names=data.feature_names)
    results = est.result_ if isinstance(est.result_, list) else [est.result_]
    if args.json:
        from optmodels.model_io import fit_record

        print(json.dumps({"model": str(args.model_out), "problem": args.problem,
                          "estimator": type(est).__name__, "strategy": est.strategy_,
                          "fit": [fit_record(r) for r in results],
                          **_estimator_coefficients(est, data.feature_names)}))
    else:
        print(_fit_text(est, results, data.feature_names))
        print(f"wrote {args.model_out}")
    for w in caught:
        print(f"optmodels fit: warning: {_one_line(w.message)}", file=sys.stderr)
    return _exit_status(results)


def _common_options(problem: str, per: dict[str, dict[str, str]], runs: list[str]
                    ) -> dict[str, Any]:
    """The strategy options of ``fit``: one strategy's, checked by its table; for 'auto'
    (several candidates) only options every candidate has, checked by each table."""
    from optmodels.strategies import check_strategy_options

    for key in set().union(*per.values()):
        lacking = [s for s in runs if key not in per[s]]
        if lacking:
            owners = [s for s in runs if s not in lacking]
            raise ValueError(
                f"--param {key}: an option of strategy {', '.join(owners)} but not of "
                f"{', '.join(lacking)}, and the default --strategy auto picks one of "
                f"{', '.join(runs)} at fit time. Pass --strategy {owners[0]} with it.")
    return [check_strategy_options(problem, s, per[s]) for s in runs][0]


def _hyperparameters(est: Any, given: dict[str, str]) -> dict[str, Any]:
    """--param strings converted by the estimator's own table (class_weight: balanced/none)."""
    from optmodels.validation import validate_params

    out = dict(given)
    if "class_weight" in out:
        value = out.pop("class_weight").strip().lower()
        if value not in ("balanced", "none"):
            raise ValueError(
                f"--param class_weight={given['class_weight']}: on the command line "
                "class_weight is 'balanced' or 'none'; use the Python estimator for a dict."
            )
        out["class_weight"] = None if value == "none" else value
    table = {k: v for k, v in type(est)._HYPER.items() if k in out}
    out.update(validate_params(type(est).__name__, table, {k: out[k] for k in table}))
    return out


def _estimator_coefficients(est: Any, names: list[str]) -> dict[str, Any]:
    """JSON: ``coefficients`` {name: value} and ``intercept`` (regressors, linear SVM; one
    entry per class pair under ``pairs`` for more than two classes, signed as scikit-learn's
    SVC), ``n_support_vectors`` and ``n_support`` per class for the classifiers (not for an
    SVM fitted on lazily read data, which collects no support rows)."""
    if not hasattr(est, "classes_"):
        return {"coefficients": dict(zip(names, est.coef_.tolist(), strict=True)),
                "intercept": float(est.intercept_)}
    out: dict[str, Any] = {} if getattr(est, "_fit_on_dask", False) else {
        "n_support_vectors": int(est.support_.size),
        "n_support": {str(c): int(n) for c, n in zip(est.classes_.tolist(), est.n_support_,
                                                       strict=True)},
    }
    if not hasattr(est, "coef_"):
        return out
    tables = [
        {"classes": [est.classes_[i].item(), est.classes_[j].item()],
         "coefficients": dict(zip(names, est.coef_[k].tolist(), strict=True)),
         "intercept": float(est.intercept_[k])}
        for k, (i, j) in enumerate(itertools.combinations(range(est.classes_.size), 2))
    ]
    if len(tables) == 1:
        return {**out, "coefficients": tables[0]["coefficients"],
                "intercept": tables[0]["intercept"]}
    return {**out, "pairs": tables}


def _fit_text(est: Any, results: list[Any], names: list[str]) -> str:
    """Each solve's summary, then the coefficients (or support vectors) of the estimator."""
    from solvers.result import coefficient_table

    named = _estimator_coefficients(est, names)
    blocks = [r.summary() for r in results]
    if len(results) > 1:  # one solve per pair of classes (i, j)
        pairs = itertools.combinations(est.classes_.tolist(), 2)
        blocks = [f"pair {i} vs {j}:\n{b}" for (i, j), b in zip(pairs, blocks, strict=True)]
    if "n_support_vectors" in named:
        per = ", ".join(f"{c}: {n}" for c, n in named["n_support"].items())
        blocks.append(f"Support vectors: {named['n_support_vectors']} (per class {per})")
    elif getattr(est, "_fit_on_dask", False):
        blocks.append("Support vectors: not collected (fitted on lazily read data)")
    for table in named.get("pairs", [named] if "coefficients" in named else []):
        title = "coef" if "classes" not in table else "coef {} vs {}".format(*table["classes"])
        blocks.append(coefficient_table([*table["coefficients"], "intercept"],
                                        [*table["coefficients"].values(), table["intercept"]],
                                        header=title))
    return "\n".join(blocks)


def _predict(args: argparse.Namespace) -> int:
    """Predictions (or class probabilities) of a saved model on a data file, as CSV."""
    from optmodels.model_io import read_model

    if args.out is not None and Path(args.out).suffix.lower() != ".csv":
        raise ValueError(f"--out {args.out!r}: predictions are written as CSV; end it in .csv.")
    est, header = read_model(args.model)
    if args.proba and not hasattr(est, "predict_proba"):
        raise ValueError(
            f"--proba: this {header['estimator']} gives no probabilities; drop --proba, or fit "
            "an SVMClassifier with --param probability=true (KLR always has them)."
        )
    X = _features(args.data, args.target, header["feature_names"], _n_features(args))
    if args.proba:
        columns = [f"proba_{c}" for c in est.classes_.tolist()]
        rows = est.predict_proba(X).tolist()
    else:
        columns, rows = ["prediction"], [[v] for v in est.predict(X).tolist()]
    if args.out is None:
        _write_csv(sys.stdout, columns, rows)
        return 0
    from instances.atomic import atomic_write

    with atomic_write(args.out, text=True) as fh:
        _write_csv(fh, columns, rows)
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


def _write_csv(fh: Any, columns: list[str], rows: list[list[Any]]) -> None:
    """CSV rows; floats as repr (they read back exactly)."""
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([repr(v) if isinstance(v, float) else v for v in row] for row in rows)


def _features(path: str, target: str, model_names: list[str], n_features: int | None = None
              ) -> Any:
    """X of a data file whose target column may be missing (``load(path, target=None)``; a CSV
    column named ``target`` is left out), checked against the model's features (count; names
    too, unless the file has none)."""
    from instances.io import default_names, load

    data = load(path, target=None, n_features=n_features)
    X, names = data.X, data.feature_names
    if Path(path).suffix.lower() == ".csv" and target in names:
        keep = [j for j, name in enumerate(names) if name != target]
        X, names = X[:, keep], [names[j] for j in keep]
    if X.shape[1] != len(model_names):
        raise ValueError(
            f"--data {path}: {X.shape[1]} feature columns, but the model was fitted on "
            f"{len(model_names)} ({', '.join(model_names)}); pass data with those columns."
        )
    if names != model_names and names != default_names(len(names)):
        raise ValueError(
            f"--data {path}: feature columns {names} differ from the model's {model_names}; "
            "pass data with the model's columns, in its order."
        )
    return X


if __name__ == "__main__":
    sys.exit(main())
