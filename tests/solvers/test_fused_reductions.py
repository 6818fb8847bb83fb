"""The diagnostics row's sums over the devices in one all-reduce (:mod:`solvers.grids.reductions`, issue 18): the
same row as the sums taken one by one, one all-reduce of one buffer where there were five or six, and the
contract of :func:`solvers.grids.reductions.fused`."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec

import xfft
from solvers import RunConfig, SpectralGrid
from solvers.grids.reductions import fused, total
from solvers.job.build import build, validate
from solvers.simulation import RowFunction
from solvers.stepping import pack_dtype

CASES = {  # equation, n, params: spectral boxes in 2D and 3D, walls (Chebyshev Gram sums), complex fields
    "navier-stokes-2d": (16, {"nu": 0.01}),
    "navier-stokes": (8, {}),
    "channel": ((17, 8, 8), {}),
    "rayleigh-benard": ((17, 16), {"walls": "no-slip"}),
    "cahn-hilliard": (16, {}),
    "schrodinger-poisson": (8, {}),
}


def _recorder(name, mesh, tmp_path):
    n, params = CASES[name]
    n = n if isinstance(n, tuple) else (n,)
    cfg = RunConfig(equation=name, n=n, dtype="float64", params=params, out=str(tmp_path), progress=False,
                    plots=False, max_steps=1)
    parts = build(cfg, validate(cfg), mesh)
    return parts.grid, parts.equation, RowFunction(parts.equation, spectrum=True)


def _unfused(row, s, t, dt):
    """The row of ``row`` (a :class:`RowFunction`) with each sum taken on its own: the equation's diagnostics, CFL
    number and spectrum computed outside :func:`fused`, packed in the row's order."""
    eq = row.equation
    d = dict(eq.diagnostics(s, t, dt))
    if row.has_rate:
        d["cfl"] = dt * eq.max_rate(s)
    parts = [jnp.stack([jnp.reshape(d[k], ()).astype(pack_dtype()) for k in row.columns])]
    if row.has_spectrum:
        parts.append(jnp.ravel(eq.spectrum(s)).astype(pack_dtype()))
    return jnp.concatenate(parts)


def _all_reduces(text):
    """The operand lists of the all-reduces and all-gathers of a compiled program's text (the transforms'
    collectives are all-to-alls)."""
    return [line.split(f" {op}(")[1].split(")")[0] for line in text.splitlines()
            for op in ("all-reduce", "all-gather") if f" {op}(" in line]


def _rows(name, mesh, tmp_path):
    """The row of a perturbed initial state, fused and with each sum on its own, and their compiled texts."""
    grid, eq, rec = _recorder(name, mesh, tmp_path)
    def perturbed():
        state = eq.initial_state(next(iter(type(eq).initial_conditions)))
        return jax.tree.map(lambda a: a * (1 + 0.1 * jnp.cos(jnp.arange(a.size).reshape(a.shape) % 7)), state)

    with jax.set_mesh(grid.mesh):
        state = jax.jit(perturbed)()
        # each program compiled once, then run and read
        row = jax.jit(lambda s: rec(s, 0.0, 0.01)).lower(state).compile()
        plain = jax.jit(lambda s: _unfused(rec, s, 0.0, 0.01)).lower(state).compile()
        got, want = np.asarray(row(state)), np.asarray(plain(state))
    return got, want, row.as_text(), plain.as_text()


# Each equation on one of the two meshes (not both): the slab mesh and an Auto pencil mesh alternate, so that each
# mesh sees 2D and 3D boxes, and walls or complex fields.
MESH_OF = {"navier-stokes-2d": "pencil-auto", "navier-stokes": "slab", "channel": "slab",
           "rayleigh-benard": "pencil-auto", "cahn-hilliard": "slab", "schrodinger-poisson": "pencil-auto"}


@pytest.mark.parametrize("name", list(CASES))
def test_fused_row_equals_the_row_of_sums_taken_one_by_one(tmp_path, meshes, name):
    """Every value of the row (diagnostics and spectrum) equals the row whose sums each have their own
    all-reduce (float64, 1e-12), on the slab mesh or on an Auto pencil mesh (:data:`MESH_OF`); the fused row has
    fewer buffers in its all-reduces and all-gathers."""
    kind = MESH_OF[name]
    mesh = meshes["slab"] if kind == "slab" else xfft.make_mesh("pencil", axis_types="auto")
    got, want, text, text0 = _rows(name, mesh, tmp_path)
    assert np.all(np.isfinite(want)) and np.any(want != 0), (name, kind)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14 * np.max(np.abs(want)), err_msg=name)
    buffers = sum(len(ops.split(",")) for ops in _all_reduces(text))
    buffers0 = sum(len(ops.split(",")) for ops in _all_reduces(text0))
    assert buffers < buffers0, (name, kind, buffers, buffers0)
    if name.startswith("navier-stokes"):  # (test_navier_stokes_row_is_one_all_reduce_of_one_buffer: the fused row)
        assert buffers0 >= 5, (name, buffers0)  # each sum its own buffer: at least the row's 5 partials


@pytest.mark.parametrize("ndim", [2, 3])
def test_navier_stokes_row_is_one_all_reduce_of_one_buffer(tmp_path, meshes, ndim):
    """The Navier-Stokes row takes one collective of one array on 8 devices: in 2D (energy, enstrophy,
    palinstrophy, resolution's two sums, the spectrum) an all-reduce, in 3D (with the maximum divergence) an
    all-gather of the devices' partials. XLA's combiner made one all-reduce of 5 or 6 buffers (each a rendezvous
    of all device threads on XLA:CPU), and 3D one more for the maximum (the rows whose sums are each taken on their
    own: test_fused_row_equals_the_row_of_sums_taken_one_by_one)."""
    name = "navier-stokes-2d" if ndim == 2 else "navier-stokes"
    grid, eq, rec = _recorder(name, meshes["slab"], tmp_path)
    with jax.set_mesh(grid.mesh):
        like = eq.abstract_state()
        text = jax.jit(lambda s: rec(s, 0.0, 0.01, rate=jnp.float64(1.0))).lower(like).compile().as_text()
    ops = _all_reduces(text)
    assert len(ops) == 1 and "," not in ops[0], ops
    shape = re.search(r"f64\[([\d,]+)\]\{[\d,]+\} all-(?:reduce|gather)\(", text).group(1)
    # the spectrum's shells and 5 partials (2D: energy, enstrophy, palinstrophy, resolution's two sums; 3D:
    # energy, enstrophy, resolution's two, the maximum divergence), in 3D gathered from the 8 devices
    assert shape == (f"{grid.num_shells + 5}" if ndim == 2 else f"8,{grid.num_shells + 5}"), shape


def test_fused_contract(meshes):
    """One device: ``fn`` is called as it is. A function that takes other sums the second time is refused.
    :func:`total` outside ``fused`` is the given plain reduction; inside, each value is the sum."""
    mesh = meshes["slab"]
    spec = PartitionSpec("x")
    x = jax.device_put(jnp.arange(64.0), jax.NamedSharding(mesh, spec))
    one = SpectralGrid(8, None, ndim=2, dtype=jnp.float64)
    assert fused(lambda a: a + 1, one.mesh, 1.0) == 2.0

    def sums(a):
        return total(jnp.sum, mesh, (spec,), a), total(jnp.sum, mesh, (spec,), a * a), \
            total(lambda b: jnp.stack([jnp.max(b) * 0 + b.size, b[0]]), mesh, (spec,), a)

    with jax.set_mesh(mesh):
        s, q, v = jax.jit(lambda a: fused(sums, mesh, a))(x)
        plain = jax.jit(lambda a: total(jnp.sum, mesh, (spec,), a, plain=lambda a: jnp.sum(a) + 100))(x)
    assert float(s) == 2016.0 and float(q) == float(np.sum(np.arange(64.0) ** 2))
    np.testing.assert_array_equal(np.asarray(v), [64.0, sum(range(0, 64, 8))])
    assert float(plain) == 2116.0

    def two_of_three(a):  # the maximum is taken but unused: it stays out of the collective, which sums two
        s, q = total(jnp.sum, mesh, (spec,), a), total(jnp.sum, mesh, (spec,), a * a)
        total(jnp.max, mesh, (spec,), a, op="max")
        return s + 0 * q, q

    with jax.set_mesh(mesh):
        f = jax.jit(lambda a: fused(two_of_three, mesh, a))
        s2, q2 = f(x)
        text = f.lower(x).compile().as_text()
    assert (float(s2), float(q2)) == (2016.0, float(q))
    assert len(_all_reduces(text)) == 1 and re.search(r"f64\[2\]\{0\} all-reduce\(", text)
    with pytest.raises(ValueError, match="op must be one of"):
        total(jnp.sum, mesh, (spec,), x, op="min")
    grid = SpectralGrid(8, mesh, ndim=2, dtype=jnp.float64)  # spectra (8, 4), physical fields (8, 8)
    with pytest.raises(ValueError, match=r"total: x must end with the grid's spectral shape \(8, 4\), got shape \(8,"):
        grid.total(jnp.ones((8, 8)))
    with pytest.raises(ValueError, match=r"maximum: x must end with the grid's physical shape \(8, 8\)"):
        grid.maximum(jnp.ones((3,)))
    with pytest.raises(TypeError, match="maximum: x must be real, got complex128"):
        grid.maximum(jnp.ones((8, 8), jnp.complex128))
    assert float(grid.total(jnp.ones((2, 8, 4)))) == 64.0 and float(grid.maximum(jnp.eye(8), spectral=False)) == 1.0

    calls = []

    def changing(a):
        calls.append(1)
        return [total(jnp.sum, mesh, (spec,), a) for _ in range(len(calls) + 1)]

    with jax.set_mesh(mesh), pytest.raises(RuntimeError, match="more reductions than the first"):
        jax.jit(lambda a: fused(changing, mesh, a))(x)
