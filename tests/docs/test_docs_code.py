"""The documentation's code runs as written: every ```python block of the site's pages, every ``solvers run`` command.

The README's mechanism (``tests/test_readme.py``) applied to ``docs/**/*.md``, with one difference: the Python
blocks of a page are a session, as a reader pastes them one after the other into one interpreter. They run in
order, in one fresh process per page (in an empty temporary directory, 8 CPU devices, JAX's 64-bit mode off, a
deadline), so a later block may use what an earlier one defined. Nothing in a block is replaced. As in the README:

- a block whose first line is ``# NAME.py`` is that file: it is saved as ``NAME.py`` (the blocks after it and the
  command lines import it) instead of being run in the session;
- a page whose blocks read a run directory (``"runs/NAME"``) that they do not write themselves (``out="runs/NAME"``)
  and that a ``solvers run ... --out runs/NAME`` command of the page writes gets that command run first, small:
  a grid of more than 16^3 points with every ``--n`` size capped at 16 (and ``--no-progress --no-plots``).

Commands: every ``python -m solvers run`` line of the pages' ``bash`` blocks (``srun``/``xfft.launch`` prefixes
dropped) passes every check a run makes before computing (``--dry-run``, in this process); a GPU-sized command is
refused by the memory check alone, in one line.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: seconds a page's session may take (its prerequisite runs have the same again)
DEADLINE = 300
SMALL_N = 16


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str  # path relative to docs/
    lang: str
    code: str
    line: int


def blocks(path: Path) -> list[Block]:
    """Every fenced block (```lang ... ```) of a Markdown page; MyST directives (```{name}) are not code."""
    out, lang, start, buf = [], None, 0, []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if lang is None and line.startswith("```"):
            lang, start, buf = line[3:].strip(), i, []
        elif lang is not None and line.startswith("```"):
            if not lang.startswith("{"):
                out.append(Block(path.relative_to(DOCS).as_posix(), lang, "\n".join(buf) + "\n", start))
            lang = None
        elif lang is not None:
            buf.append(line)
    return out


def pages() -> list[Path]:
    """The site's hand-written pages (the generated ones hold no runnable blocks of their own)."""
    skip = ("_build", "_generated", "generated", "_ext")
    return sorted(p for p in DOCS.rglob("*.md") if not set(p.relative_to(DOCS).parts) & set(skip))


BLOCKS = [b for p in pages() for b in blocks(p)]
PYTHON_PAGES = sorted({b.page for b in BLOCKS if b.lang == "python"})


def file_name(block: Block) -> str | None:
    """``NAME.py`` if the block's first line is ``# NAME.py``."""
    m = re.fullmatch(r"#\s*(\w+\.py)\s*", block.code.splitlines()[0])
    return m.group(1) if m else None


def _join(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1] + " " + line.strip()
        else:
            out.append(line.rstrip())
    return out


def commands(blocks_: list[Block]) -> list[tuple[Block, list[str]]]:
    """``(block, argv after 'run')`` of every ``solvers run`` line of the shell blocks."""
    found = []
    for b in blocks_:
        if b.lang not in ("bash", "sh", "shell"):
            continue
        for line in _join([line.partition("#")[0] for line in b.code.splitlines()]):
            m = re.search(r"(?:-m solvers|xfft-solve)\s+run\s+(.*)$", line)
            if m:
                found.append((b, shlex.split(m.group(1))))
    return found


COMMANDS = commands(BLOCKS)


def _small(argv: list[str]) -> list[str]:
    """``argv`` with its ``--n`` sizes capped at :data:`SMALL_N` where its grid has more than ``SMALL_N ** 3``
    points (a small grid runs as written; one size ``n`` counts as ``n ** 3``), no progress bar and no plots."""
    i = argv.index("--n") if "--n" in argv else len(argv)
    j = i + 1
    while j < len(argv) and not argv[j].startswith("-"):
        j += 1
    sizes = [int(a) for a in argv[i + 1:j]]
    points = sizes[0] ** 3 if len(sizes) == 1 else int(np.prod(sizes or [1]))
    if points > SMALL_N ** 3:
        sizes = [min(n, SMALL_N) for n in sizes]
    return argv[:i + 1] + [str(n) for n in sizes] + argv[j:] + ["--no-progress", "--no-plots"]


def _env() -> dict[str, str]:
    flags = "--xla_force_host_platform_device_count=8"
    # the suite's compile options (tests/conftest.py), with 8 devices
    flags += "".join(" " + f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu", MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    env.pop("JAX_ENABLE_X64", None)
    return env


def _run(args: list[str], cwd: Path, what: str) -> str:
    try:
        out = subprocess.run([sys.executable, *args], cwd=cwd, env=_env(), capture_output=True, text=True,
                             timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} did not finish within {DEADLINE} s")
    assert out.returncode == 0, f"{what} failed (exit {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    return out.stdout


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run_as_written(page: str, tmp_path: Path):
    """The page's Python blocks, pasted in order into one fresh session, run."""
    mine = [b for b in BLOCKS if b.page == page and b.lang == "python"]
    session = []
    for b in mine:
        if file_name(b):
            (tmp_path / file_name(b)).write_text(b.code)
        else:
            session.append(f"# --- docs/{page}, line {b.line}\n{b.code}")
    code = "\n".join(session)
    written = set(re.findall(r"out\s*=\s*[\"'](runs/[\w.-]+)", code))  # run directories the blocks write
    for runs in sorted(set(re.findall(r"[\"'](runs/[\w.-]+)", code)) - written):
        for b, argv in COMMANDS:
            if b.page == page and "--out" in argv and argv[argv.index("--out") + 1] == runs:
                _run(["-m", "solvers", "run", *_small(argv)], tmp_path, f"docs/{page}: the run of {runs} (small)")
    (tmp_path / "session.py").write_text(code)
    _run(["session.py"], tmp_path, f"docs/{page}'s Python blocks (lines {', '.join(str(b.line) for b in mine)})")


def test_the_pages_have_code():
    """The extraction finds the pages' examples (so the tests above cannot pass by finding nothing)."""
    assert len(PYTHON_PAGES) >= 8 and len(COMMANDS) >= 20, (PYTHON_PAGES, len(COMMANDS))
    assert "getting-started.md" in PYTHON_PAGES and "guide/own-equation.md" in PYTHON_PAGES


@pytest.mark.parametrize("argv", [argv for _, argv in COMMANDS],
                         ids=[f"{b.page}:{b.line}-{argv[0]}" for b, argv in COMMANDS])
def test_run_command_is_valid(argv: list[str], tmp_path: Path, monkeypatch, capsys):
    """The command passes every check a run makes before computing."""
    from solvers import cli

    monkeypatch.chdir(tmp_path)
    for b in BLOCKS:  # the files the pages save (MODULE:SPEC equations)
        if b.lang == "python" and file_name(b):
            (tmp_path / file_name(b)).write_text(b.code)
    monkeypatch.syspath_prepend(str(tmp_path))
    if "--resume" in argv:  # a restart needs the run it continues: the page's command before it, small
        assert cli.main(["run", *_small([a for a in argv if a != "--resume"]), "--max-steps", "2",
                         "--overwrite"]) == 0
    code = cli.main(["run", *argv, "--dry-run"])
    err = capsys.readouterr().err
    if code == 2 and "run needs about" in err and "available for its 8 devices" in err:
        assert len(err.strip().splitlines()) == 1, err  # a GPU-sized run, refused by the memory check alone
        return
    assert code == 0, (argv, err)
