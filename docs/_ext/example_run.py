"""Run one example as ``python examples/NAME.py`` would, with its defaults, and draw its final state.

``python docs/_ext/example_run.py EXAMPLE.py OUT.png``: prints what the example prints, and draws the temperature
(and, with a third field, the salinity) of the last state its ``solvers.simulate`` call returned, on the grid's
points. Used by the gallery (``examples_page``), in a process of its own.
"""

import importlib.util
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import solvers  # noqa: E402


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
    module.main([])
    eq, sol = seen["equation"], seen["solution"]
    g = eq.grid
    z, x = (np.asarray(c) for c in g.coordinates())
    z, x = np.broadcast_arrays(z, x)
    scalars = np.asarray(g.to_physical(sol.state[1:]))  # the fields after the velocity block: theta (, salt)
    names = ["temperature $T = 1 - z + \\theta$", "salinity $S = 1 - z + s$"][: len(scalars)]
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.2), squeeze=False)
    for ax, field, name in zip(axes[0], scalars, names):
        m = ax.pcolormesh(x, z, 1 - z + field, shading="gouraud", cmap="RdBu_r")
        ax.set(xlabel="x", ylabel="z", title=f"{name}, t = {sol.t:g}", aspect="equal")
        fig.colorbar(m, ax=ax, shrink=0.8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:3])
