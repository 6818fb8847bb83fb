"""The README runs as written: every ```python block in a fresh process, every ``solvers run`` command validated.

Python blocks (found anew at every run, so a block added to the README is tested without changes here): each is
written to ``block.py`` in an empty temporary directory and run there as ``python block.py`` in a fresh process with
a deadline, with 8 CPU devices through ``XLA_FLAGS`` (what the README's first example tells a laptop user to set)
and JAX's 64-bit mode off, as a user would run it. Nothing in a block is replaced. Two conventions make blocks that
depend on others runnable on their own (the documentation's pages follow them too, ``tests/docs/test_docs_code.py``):

- a block whose first line is ``# NAME.py`` is that file: it is also saved as ``NAME.py`` for the blocks after it
  in its section;
- a block that reads a run directory (``"runs/NAME"``) comes after the ``python -m solvers run ... --out runs/NAME``
  command of its section; the test runs that command first, with every ``--n`` size capped at 16 points (and
  ``--no-progress --no-plots``).

A few blocks also get lines appended that check what their comments promise (:data:`CHECKS`).

Commands: every ``solvers run`` command line of the README (in ``bash`` blocks, and in a comment that spells one
out; ``srun``/``xfft.launch`` prefixes dropped, continuation lines joined) is validated before any compute, by
``python -m solvers run ... --dry-run`` in this process (``solvers.cli.main``): defaults, ranges, the output
directory, the grid on this process's 8 devices, the equation, the integrator, the initial condition and the CFL
rate (all abstract), and the memory the run needs against what the host has.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: seconds one block may take (its prerequisite run has the same again)
DEADLINE = 240
#: the largest grid size per axis of a prerequisite run
SMALL_N = 16

#: lines appended to the block that contains the key: what its comments promise, checked
CHECKS = {
    "dudx = jax.jit(lambda u: xfft.ixrfft3d(1j * kx * xfft.xrfft3d(u), s=u.shape))(u)": (
        "err = float(jnp.max(jnp.abs(dudx - jnp.cos(x) * jnp.cos(2 * y))))\n"
        "assert dudx.sharding.is_equivalent_to(s, 3), dudx.sharding\n"
        "assert err < 1e-5, err\n"),
    "sol = solvers.simulate(eq, \"lsrk4\"": (
        "assert sol.t == 1.0 and sol.step > 0, (sol.t, sol.step)\n"
        # Taylor-Green at Re = 1600: E = 1/8 at t = 0, 0.12452 at t = 1 on 32^3
        "assert abs(float(eq.energy(sol.state)) - 0.12452) < 1e-4, float(eq.energy(sol.state))\n"),
}


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README."""

    lang: str
    code: str
    section: str  # the heading it stands under
    line: int  # where it starts in the README (1-based)


def _blocks(text: str) -> list[Block]:
    """Every fenced block with its language and the heading it stands under."""
    out, section, lang, start, buf = [], "", None, 0, []
    for i, line in enumerate(text.splitlines(), 1):
        if lang is None and line.startswith("```"):
            lang, start, buf = line[3:].strip(), i, []
        elif lang is not None and line.startswith("```"):
            out.append(Block(lang, "\n".join(buf) + "\n", section, start))
            lang = None
        elif lang is not None:
            buf.append(line)
        elif line.startswith("#"):
            section = line.lstrip("#").strip()
    return out


BLOCKS = _blocks(README.read_text())
PYTHON = [b for b in BLOCKS if b.lang == "python"]


def _file_name(block: Block) -> str | None:
    """``NAME.py`` if the block's first line is ``# NAME.py`` (the block is that file)."""
    m = re.fullmatch(r"#\s*(\w+\.py)\s*", block.code.splitlines()[0])
    return m.group(1) if m else None


def _join(lines: list[str]) -> list[str]:
    """Shell lines with backslash continuations joined (code and comments continue separately)."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1] + " " + line.strip().lstrip("#").strip()
        else:
            out.append(line.rstrip())
    return out


def _commands(blocks: list[Block]) -> list[tuple[Block, list[str]]]:
    """``(block, argv after 'run')`` of every ``solvers run`` command line in the shell blocks: the code of a line,
    or its comment when the comment spells out a command (``make demo   # = python -m solvers run ...``)."""
    found = []
    for b in blocks:
        if b.lang not in ("bash", "sh", "shell", ""):
            continue
        code_lines, comment_lines = [], []
        for line in b.code.splitlines():
            code, _, comment = line.partition("#") if not line.lstrip().startswith("#") else ("", "", line)
            code_lines.append(code)
            comment_lines.append(comment)
        for line in _join(code_lines) + _join(comment_lines):
            m = re.search(r"(?:-m solvers|xfft-solve)\s+run\s+(.*)$", line)
            if m:
                found.append((b, shlex.split(m.group(1))))
    return found


COMMANDS = _commands(BLOCKS)


def _option(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def _small(argv: list[str]) -> list[str]:
    """``argv`` with every ``--n`` size capped at :data:`SMALL_N`, no progress bar and no plots."""
    out, sizes = [], False
    for a in argv:
        if a.startswith("-"):
            sizes = a == "--n"
        elif sizes:
            a = str(min(int(a), SMALL_N))
        out.append(a)
    return out + ["--no-progress", "--no-plots"]


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


def _prepare(block: Block, tmp: Path) -> None:
    """The files and runs a block needs: the ``# NAME.py`` blocks before it in its section, and the small
    versions of the section's ``solvers run`` commands that write an output directory the block names."""
    for b in PYTHON:
        if b.section == block.section and b.line < block.line and _file_name(b):
            (tmp / _file_name(b)).write_text(b.code)
    for runs in sorted(set(re.findall(r"[\"'](runs/[\w.-]+)", block.code))):
        for argv in [argv for b, argv in COMMANDS if b.section == block.section and _option(argv, "--out") == runs]:
            _run(["-m", "solvers", "run", *_small(argv)], tmp, f"the README's run of {runs} (small)")


@pytest.mark.parametrize("block", PYTHON, ids=[f"line{b.line}" for b in PYTHON])
def test_python_block_runs_as_written(block: Block, tmp_path: Path):
    """The block, pasted alone into a fresh file, runs (and computes what its comments say, where checked)."""
    _prepare(block, tmp_path)
    code = block.code + "".join(extra for key, extra in CHECKS.items() if key in block.code)
    (tmp_path / "block.py").write_text(code)
    _run(["block.py"], tmp_path, f"the README's Python block at line {block.line} ({block.section!r})")


def test_checks_find_their_blocks():
    """Every check of :data:`CHECKS` belongs to exactly one README block (a rewritten block must move its check)."""
    for key in CHECKS:
        assert sum(key in b.code for b in PYTHON) == 1, f"no single README Python block contains {key!r}"


def test_readme_has_commands_and_blocks():
    """The extraction finds the README's examples (so the tests above cannot pass by finding nothing)."""
    assert len(PYTHON) >= 2 and len(COMMANDS) >= 1, (len(PYTHON), len(COMMANDS))
    assert any(argv[:1] == ["navier-stokes"] and "--overwrite" in argv for _, argv in COMMANDS)  # make demo's


@pytest.mark.parametrize("argv", [argv for _, argv in COMMANDS],
                         ids=[f"line{b.line}-{argv[0]}" for b, argv in COMMANDS])
def test_run_command_is_valid(argv: list[str], tmp_path: Path, monkeypatch, capsys):
    """The command passes every check a run makes before computing (see the module docstring)."""
    from solvers import cli

    monkeypatch.chdir(tmp_path)
    for b in PYTHON:  # the files the README saves (MODULE:CLASS equations)
        if _file_name(b):
            (tmp_path / _file_name(b)).write_text(b.code)
    code = cli.main(["run", *argv, "--dry-run"])
    err = capsys.readouterr().err
    if code == 2 and "run needs about" in err and "available for its 8 devices" in err:
        # A GPU-sized run: every check passed up to the memory check, which refuses it on this CPU host as it must,
        # in one line.
        assert len(err.strip().splitlines()) == 1, err
        return
    assert code == 0, (argv, err)


def test_readme_is_short_and_undated():
    """At most 250 lines, and no dated measurements or issue numbers (those live in the docs and the CHANGELOG)."""
    text = README.read_text()
    assert len(text.splitlines()) <= 250, len(text.splitlines())
    assert not re.search(r"\b20\d\d-[01]\d-[0-3]\d\b|\bissues? #?\d+\b", text, re.I)
