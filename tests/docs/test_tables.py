"""The numbers the docs print from a run are reproduced, read from the pages themselves (a page edit that drifts
from what the code computes fails here).

* The own-equation guide's Kuramoto-Sivashinsky table (``benchmarks/ks_attractor.py`` prints it): the cheap rows
  are run again and compared with the printed cells (a blow-up time to one time unit; a time average to four
  combined standard errors: a run on other devices follows another chaotic trajectory of the same attractor); every
  row of the script is a row of the table; what the text says of the table holds; the guide's ``ks_equation.py`` is
  the code of ``tests/solvers/ks_equation.py`` (the file the other tests run).
* The getting-started page's "~1e-6": the error its ten lines print.
* The validation page's values that a cheap computation gives: Orszag's eigenvalue and its distance from the
  computed one, the no-slip onset and the eigen-solver's growth rates around it (the DNS is compared with those by
  ``tests/solvers/test_solver_rayleigh_benard.py``).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide" / "own-equation.md"
VALIDATION = ROOT / "docs" / "validation.md"
ROW = re.compile(r"^\| (\d+)², ([0-9.]+) \| (.*?) \| (.*?) \| (.*?) \|$")
#: the rows run again here: (n, dt, dtype); a few seconds each
CHEAP = [(64, 0.25, "float32"), (64, 0.25, "float64"), (96, 0.25, "float64")]


def _script():
    spec = importlib.util.spec_from_file_location("ks_attractor", ROOT / "benchmarks" / "ks_attractor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ks_table(page: Path = GUIDE) -> dict[tuple[int, float], dict[str, str]]:
    """``{(n, dt): {"float32": cell, "float64": cell, "resolution": cell}}`` from the guide's table."""
    rows = {}
    for line in page.read_text().splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m[1]), float(m[2])] = {"float32": m[3], "float64": m[4], "resolution": m[5]}
    return rows


def parse_cell(text: str) -> dict:
    """``{"mean", "se"}`` of ``5.133 ± 0.013``, or ``{"blowup"}`` of ``blows up at t = 76.75``.

    Raises:
      ValueError: neither.
    """
    if m := re.fullmatch(r"([0-9.]+) ± ([0-9.]+)", text):
        return {"mean": float(m[1]), "se": float(m[2])}
    if m := re.fullmatch(r"blows up at t = ([0-9.]+)", text):
        return {"blowup": float(m[1])}
    raise ValueError(f"text: not a table cell of the KS table: {text!r}")


def test_ks_table_has_every_row_the_script_prints():
    script = _script()
    table = ks_table()
    assert sorted(table) == sorted((int(n), float(dt)) for n, dt in (r.split(":") for r in script.ROWS)), table
    header = script.HEADER.splitlines()[0]
    assert header in GUIDE.read_text().splitlines(), header
    for row in table.values():
        for dtype in ("float32", "float64"):
            parse_cell(row[dtype])  # every cell is a result (no blank, no typo)


def test_ks_table_prose_says_what_the_table_shows():
    """"every average agrees with every other within two of their standard errors", the pooled value (weighted by
    the inverse variances) and its error as printed, and the resolution column warns where the text says."""
    text = " ".join(GUIDE.read_text().split())
    cells = [parse_cell(row[d]) for (n, _), row in ks_table().items() for d in ("float32", "float64") if n >= 96]
    assert cells and all("mean" in c for c in cells) and "From 96² on, every average agrees" in text
    for a in cells:
        for b in cells:
            assert abs(a["mean"] - b["mean"]) <= 2 * (a["se"] ** 2 + b["se"] ** 2) ** 0.5, (a, b)
    w = [1 / c["se"] ** 2 for c in cells]
    pooled = sum(wi * c["mean"] for wi, c in zip(w, cells)) / sum(w)
    m = re.search(r"\\rangle = ([0-9.]+) \\pm ([0-9.]+)\$ is converged", text)
    assert m and f"{pooled:.2f}" == m[1] and f"{sum(w) ** -0.5:.2f}" == m[2], (pooled, sum(w) ** -0.5)
    warns = {n for (n, dt), row in ks_table().items() if "warns" in row["resolution"] and dt == 0.25 and n >= 96}
    assert warns == {96, 128} and "here on 96² and 128² points (the last column), not on 256²" in text, warns


def test_the_guide_code_is_the_tested_file():
    """The class and its initial condition, docstrings and comments aside, are the same code."""
    m = re.search(r"```python\n# ks_equation\.py\n(.*?)```", GUIDE.read_text(), re.S)
    assert m, "the guide has no ks_equation.py block"

    def code(source: str) -> dict[str, str]:
        out = {}
        for node in ast.parse(source).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                for n in ast.walk(node):
                    body = getattr(n, "body", None)
                    if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                            isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                        n.body = body[1:]  # the docstring
                out[node.name] = ast.dump(node)
        return out

    guide, tested = code(m[1]), code((ROOT / "tests" / "solvers" / "ks_equation.py").read_text())
    assert set(guide) == {"cosines", "KuramotoSivashinsky"} and guide == {k: tested[k] for k in guide}


@pytest.mark.default_opt
@pytest.mark.parametrize("n, dt, dtype", CHEAP)
def test_ks_table_cheap_rows_reproduce(n, dt, dtype):
    script = _script()
    printed = ks_table()[n, dt]
    want = parse_cell(printed[dtype])
    got = script.measure(script.load_equation(GUIDE), n, dt, dtype)
    if "blowup" in want:
        assert got["blowup"] is not None and abs(got["blowup"] - want["blowup"]) <= 1.0, (got, printed)
    else:
        assert got["blowup"] is None, got
        assert abs(got["mean"] - want["mean"]) <= 4 * (got["se"] ** 2 + want["se"] ** 2) ** 0.5, (got, printed)
        assert 0.3 < got["se"] / want["se"] < 3, (got, printed)  # the same spread of the batch means
    if dtype == "float64":  # the resolution column: "3.1e-01, warns at t = 54"
        m = re.fullmatch(r"([0-9.e+-]+), warns at t = ([0-9.]+)", printed["resolution"])
        assert m, printed["resolution"]
        assert abs(got["resolution"] / float(m[1]) - 1) < 0.2 and abs(got["warned"] - float(m[2])) <= 1.0, got


def test_parse_cell_refuses_text():
    with pytest.raises(ValueError, match="text: not a table cell"):
        parse_cell("41346")


def _validation_row(reference: str) -> str:
    rows = [line for line in VALIDATION.read_text().splitlines() if line.startswith(f"| {reference}")]
    assert len(rows) == 1, (reference, rows)
    return rows[0]


def test_validation_orszag_eigenvalue():
    from solvers.stability import least_stable_mode

    row = _validation_row("Orszag (1971)")
    re_, im = (float(v) for v in re.search(r"\$c = ([0-9.]+) \+ ([0-9.]+)i\$", row).groups())
    distance = float(re.search(r"\| 1e-8 / ([0-9.e-]+) \(Orszag's 8 digits\)", row)[1])
    c, _ = least_stable_mode(1e4, 1.0)
    assert f"{abs(c - complex(re_, im)):.1e}" == f"{distance:.1e}", c
    rate = re.search(r"\$2\\alpha c_i = ([0-9.]+)\$", _validation_row("the same | the growth of a Tollmien"))[1]
    assert f"{2 * c.imag:.8f}" == rate, c  # the DNS's rate is compared with it by tests/solvers/test_channel.py


def test_validation_no_slip_onset_and_growth_rates():
    from solvers.stability import growth_rate, onset

    ra, k = onset("no-slip")
    row = _validation_row("Chandrasekhar (1961)")
    assert f"1e-6 / {ra:.8f}, {k:.8f}" in row, (ra, k, row)
    rates = re.search(r"the eigen-solver's \(−([0-9.]+) and \+([0-9.]+)\)", _validation_row("the same | the no-slip"))
    below, above = (growth_rate(3.117, 1707.762 * f, 1.0) for f in (1 - 1e-3, 1 + 1e-3))
    assert f"{below:.6f}" == f"-{rates[1]}" and f"{above:.6f}" == rates[2], (below, above)


def test_validation_values_the_walls_page_prints():
    """The walls page's stability example prints Orszag's c and the onset its comments give."""
    from solvers.stability import least_stable_mode, onset

    text = (ROOT / "docs" / "guide" / "walls.md").read_text()
    c_re, c_im = (float(v) for v in re.search(r"# Orszag \(1971\): c = ([0-9.]+) \+ ([0-9.]+) i", text).groups())
    ra, k = (float(v) for v in re.search(r"# Ra_c = ([0-9.]+) at k_c = ([0-9.]+)", text).groups())
    c, _ = least_stable_mode(10000.0, 1.0)
    got_ra, got_k = onset("no-slip")
    assert f"{c.real:.8f} {c.imag:.8f}" == f"{c_re:.8f} {c_im:.8f}", c
    assert f"{got_ra:.2f} {got_k:.3f}" == f"{ra:.2f} {k:.3f}", (got_ra, got_k)


#: pages whose Python blocks print what their comments say: ``# P('x', 'y', None), ~1e-6``
COMMENTED = ["getting-started.md", "guide/transforms.md", "guide/fft.md", "guide/multiprocess.md"]


@pytest.mark.parametrize("page", COMMENTED)
def test_printed_values_are_what_the_comments_say(page, tmp_path):
    """The page's Python blocks run as one session (8 CPU devices, JAX's defaults: float32); each ``print`` prints
    one line, and where its comment gives a sharding and an order of magnitude (``~1e-6``, ``about 1e-6``), the line
    shows that sharding and a last number within a factor of 10 of it; ``# n^6 / 16`` is that value, to float32
    round-off."""
    import os
    import subprocess
    import sys

    code = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), re.S)
    prints = [line for block in code for line in block.splitlines() if line.startswith(("print(", "xd.print0("))]
    (tmp_path / "session.py").write_text("\n".join(code))
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    env.pop("JAX_ENABLE_X64", None)
    out = subprocess.run([sys.executable, "session.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert prints and len(lines) == len(prints), (prints, lines)
    checked = 0
    for line, printed in zip(prints, lines):
        comment = line.partition("#")[2]
        if spec := re.search(r"(?:P|PartitionSpec)(\([^)]*\))", comment):
            assert re.search(r"(?:P|PartitionSpec)" + re.escape(spec[1]), printed), (comment, printed)
        if size := re.search(r"(?:~|about )(1e-\d+)", comment):
            value = abs(float(printed.split()[-1]))
            assert float(size[1]) / 10 < value < float(size[1]) * 10, (comment, printed)
            checked += 1
        if re.search(r"\bn\^6 / 16", comment):
            n = int(re.search(r"^n = (\d+)$", "\n".join(code), re.M)[1])
            assert abs(float(printed.split()[-1]) / (n ** 6 / 16) - 1) < 1e-5, (comment, printed)
            checked += 1
    assert checked, prints


def test_layouts_page_quotes_the_benchmark_files():
    """The layouts guide's 256^3 timings and page faults are those of ``benchmarks/results/fft*.json`` (medians
    in ms, rounded; glibc's defaults, memory kept, tcmalloc), not numbers of another run."""
    import json

    def case(name: str, file: str = "fft.json") -> dict:
        rows = json.loads((ROOT / "benchmarks" / "results" / file).read_text())["rows"]
        (row,) = [r for r in rows if r["case"] == name and r.get("n") == 256]
        return row

    def ms(name: str, file: str = "fft.json") -> str:
        return f"{case(name, file)['median_s'] * 1e3:.0f}"

    files = ("fft.json", "fft_keep.json", "fft_tcmalloc.json")
    three = {name: ", ".join(ms(name, f) for f in files[:2]) + " and " + ms(name, files[2]) for name in
             ("xfft3d slab", "xfft3d slab transposed", "jnp.fft.fftn 1 device", "xrfft3d slab",
              "jnp.fft.rfftn 1 device")}
    ratio = [case("xrfft3d slab", f)["median_s"] / case("jnp.fft.rfftn 1 device", f)["median_s"] for f in files[:2]]
    faults = {name: case(name)["page_faults_per_call"] for name in ("jnp.fft.fftn 1 device", "xfft3d slab",
                                                                     "xrfft3d slab")}
    expected = [
        f"the complex slab transform took {ms('xfft3d slab')} ms in natural order and {ms('xfft3d slab transposed')} ms"
        f" in transposed order, mpi4py-fft (FFTW and MPI, 8 ranks) {ms('mpi4py-fft slab c2c')} ms and one device's "
        f"`jnp.fft.fftn` {ms('jnp.fft.fftn 1 device')} ms",
        f"the complex pencil transform (2 x 4 devices) {ms('xfft3d pencil')} ms in natural and "
        f"{ms('xfft3d pencil transposed')} ms in transposed order, mpi4py-fft's pencil "
        f"{ms('mpi4py-fft pencil c2c')} ms",
        f"timed the complex slab transform in natural order at {three['xfft3d slab']} ms, in transposed order at "
        f"{three['xfft3d slab transposed']} ms, one device's `jnp.fft.fftn` at {three['jnp.fft.fftn 1 device']} ms, "
        f"the real slab transform (`xrfft3d`) at {three['xrfft3d slab']} ms and one device's `jnp.fft.rfftn` at "
        f"{three['jnp.fft.rfftn 1 device']} ms",
        f"({faults['jnp.fft.fftn 1 device']:,.0f} faults)",
        f"the complex slab transform about {round(faults['xfft3d slab'], -3):,.0f} over its 8",
        f"the real one, whose blocks are smaller (8 MiB per device), {round(faults['xrfft3d slab'], -2):,.0f}",
        f"{ratio[0]:.2f} times one device's time with glibc's defaults, {ratio[1]:.2f} times with memory kept",
    ]
    text = " ".join((ROOT / "docs" / "guide" / "layouts.md").read_text().split())
    missing = [e for e in expected if e not in text]
    assert not missing, missing
