"""Run one example as ``python examples/NAME.py`` would, with its defaults, and draw its final state.

``python docs/_ext/example_run.py EXAMPLE.py OUT.png``: prints what the example prints, and draws the last state its
``solvers.simulate`` call returned: the fields of ``equation.physical_fields`` on the grid's points (a 2D field as an
image, a profile along the first axis otherwise), or, for particles (a state with ``positions`` and
``velocities``), their phase space along the first axis, coloured by weight where the weights differ; an example
with a ``--plot FILE`` option draws its own figure instead. Used by the gallery (``examples_page``), in a process
of its own.
"""

import contextlib
import importlib.util
import io
import sys

import matplotlib

matplotlib.use("Agg")
import jax  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import solvers  # noqa: E402
from solvers.particles import plot_phase_space  # noqa: E402

MAX_POINTS = 20000  # particles drawn at most (an even subsample)


def _particles(state, t, out):
    x = np.asarray(state.positions)[:, 0]
    v = np.asarray(state.velocities)[:, 0]
    w = None if getattr(state, "weights", None) is None else np.asarray(state.weights)
    keep = slice(None, None, max(1, x.size // MAX_POINTS))
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    plot_phase_space(ax, x[keep], v[keep], None if w is None else w[keep], title=f"phase space, t = {t:g}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def _fields(eq, state, t, out):
    with jax.set_mesh(eq.grid.mesh):
        fields = {k: np.asarray(v) for k, v in jax.jit(eq.physical_fields)(state).items()}
    names = [k for k, v in fields.items() if v.ndim >= 1][:3]
    coords = [np.asarray(c) for c in eq.grid.coordinates()]
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.2), squeeze=False)
    axis = eq.grid.axis_names if hasattr(eq.grid, "axis_names") else ("x", "y", "z")
    for ax, name in zip(axes[0], names):
        f = fields[name]
        if f.ndim == 2:
            a, b = np.broadcast_arrays(*coords[:2])
            m = ax.pcolormesh(b, a, f, shading="gouraud", cmap="RdBu_r")
            ax.set(xlabel=axis[1], ylabel=axis[0], aspect="equal")
            fig.colorbar(m, ax=ax, shrink=0.8)
        else:  # the mean profile along the first axis
            ax.plot(np.ravel(coords[0])[: f.shape[0]], f.reshape(f.shape[0], -1).mean(axis=1))
            ax.set(xlabel=axis[0], ylabel=f"mean {name}")
        ax.set_title(f"{name}, t = {t:g}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def _has_plot_option(module) -> bool:
    """Whether the example's command line has ``--plot FILE`` (its own figure)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        module.main(["--help"])
    return "--plot" in buf.getvalue()


def main(example: str, out: str) -> None:
    seen = {}
    simulate = solvers.simulate

    def spy(equation, *args, **kwargs):  # the example's own run, recorded
        sol = simulate(equation, *args, **kwargs)
        seen["equation"], seen["solution"] = equation, sol
        return sol

    solvers.simulate = spy
    spec = importlib.util.spec_from_file_location("example", example)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if _has_plot_option(module):  # the example draws the figure its readers expect
        module.main(["--plot", out])
        return
    module.main([])
    eq, sol = seen["equation"], seen["solution"]
    if hasattr(sol.state, "positions") and hasattr(sol.state, "velocities"):
        _particles(sol.state, sol.t, out)
    else:
        _fields(eq, sol.state, sol.t, out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
