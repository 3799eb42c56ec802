"""The documentation in docs/ builds with MkDocs in strict mode, its Python examples run, and
no shipped file points at notes outside the repository."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHIPPED = ("optmodels", "solvers", "instances", "notebooks", "benchmarks", "tests", "docs")
OUTSIDE_NOTES = ("formulations.md", "../shared", "shared/design")


def _mkdocs_available() -> bool:
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(
    not _mkdocs_available(),
    reason="mkdocs is not installed: pip install -e '.[docs]' (the test extra includes it)",
)
def test_docs_build_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict` turns every warning (broken link, missing page, bad anchor)
    into a failure; the site must contain one page per entry of the nav."""
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING" not in run.stderr, run.stderr
    pages = sorted(p.relative_to(DOCS).with_suffix("") for p in DOCS.rglob("*.md"))
    for page in pages:
        built = tmp_path / ("index.html" if page.name == "index" else page / "index.html")
        assert built.is_file(), f"{page}.md was not built"


def test_no_reference_to_notes_outside_the_repository() -> None:
    """Docstrings, notebooks and docs point at docs/, never at notes the repository lacks."""
    hits = []
    for top in SHIPPED:
        for path in (ROOT / top).rglob("*"):
            if path.suffix not in (".py", ".ipynb", ".md") or path == Path(__file__):
                continue
            text = path.read_text(encoding="utf-8")
            hits += [f"{path.relative_to(ROOT)}: {s}" for s in OUTSIDE_NOTES if s in text]
    assert not hits, "\n".join(hits)


def _examples(page: str) -> list[str]:
    """The ```python blocks of a guide page."""
    text = (DOCS / "guide" / page).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("page", ["fit-predict.md", "compare.md", "export.md"])
def test_guide_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each guide page's Python examples run top to bottom (in a scratch directory)."""
    blocks = _examples(page)
    assert blocks, f"docs/guide/{page} has no Python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    # the compare guide configures logging (basicConfig, a logger's level): put it back, so
    # that later tests in this process start from the default configuration
    root, progress = logging.getLogger(), logging.getLogger("solvers.progress")
    saved = list(root.handlers), root.level, progress.level
    try:
        for block in blocks:
            exec(compile(block, f"docs/guide/{page}", "exec"), namespace)  # noqa: S102
    finally:
        for handler in root.handlers[:]:
            if handler not in saved[0]:
                root.removeHandler(handler)
        root.setLevel(saved[1])
        progress.setLevel(saved[2])


def test_maths_is_typeset() -> None:
    """mkdocs.yml enables arithmatex (generic output for MathJax, whose config file exists), and
    the problem pages write no formula as a plain-text indented block or code span: a block or
    span with maths operators (sum_i, ||.||, <=, ^2, 1/2, "min over") must be $...$ / $$...$$."""
    yaml = pytest.importorskip("yaml")

    class _Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may use !!python/name tags; none are needed to read the extension list
    _Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    extensions = {}
    for entry in config["markdown_extensions"]:
        extensions.update(entry if isinstance(entry, dict) else {entry: None})
    assert (extensions.get("pymdownx.arithmatex") or {}).get("generic") is True
    scripts = config.get("extra_javascript", [])
    assert "javascripts/mathjax.js" in scripts and (DOCS / "javascripts" / "mathjax.js").is_file()
    assert any("mathjax" in s and s.startswith("https://") for s in scripts)

    maths = re.compile(r"sum_i|\|\||<=|>=|\^2|\b1/2\b|min over|max over")
    hits = []
    for page in sorted((DOCS / "problems").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.S)      # fenced code (examples)
        text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)    # display maths
        blocks = re.findall(r"(?:^|\n\n)((?: {4}.*(?:\n|$))+)", text)   # indented blocks
        spans = re.findall(r"`([^`\n]+)`", text)
        hits += [f"{page.name}: block {b.strip()[:60]!r}" for b in blocks if maths.search(b)]
        hits += [f"{page.name}: span {s!r}" for s in spans if maths.search(s)]
    assert not hits, "\n".join(hits)
