"""A turbulent channel run's statistics against the direct numerical simulations of the field.

Reads a run directory of ``python -m solvers run channel ... --stats-every N`` (its ``statistics.h5`` and
``run.json``) and compares, in wall units and folded over the two halves of the channel:

- ``Re_tau``, ``u_tau / U_b`` and ``C_f = 2 (u_tau / U_b)^2`` with Lee & Moser (2015) at ``Re_tau = 182.088``
  (``u_tau = 0.0637309`` with ``U_b = 1``, ``C_f = 8.123e-3``), each with its standard error from batch means;
- ``U+(y+)`` with Moser, Kim & Mansour (1999) at ``Re_tau = 178.12`` (``benchmarks/reference/mkm180_mean.csv``),
  the run's profile evaluated at the reference points by its Chebyshev series (no interpolation error), for
  ``y+ < 40`` (the near-wall region, where the profile in wall units hardly depends on ``Re_tau`` or, in a minimal
  box, on the box) and across the half channel;
- the mean momentum balance, which holds exactly in a statistically steady state: the total shear stress
  ``nu dU/dy - <u'v'>`` is linear between the walls' values. Its largest deviation from that line (in units of the
  wall shear) measures how converged the averages are, independently of any reference data.

Writes ``OUT.json`` (the numbers, the run's grid, box and averaging window, the date and machine) and ``OUT.png``
(``U+`` against ``y+`` with the references, the sublayer and the log law; rms velocities and ``-<u'v'>+``; the
total stress).

Usage:
    python benchmarks/channel_reference.py RUN_DIR --out benchmarks/results/channel_minimal_cpu [--label TEXT]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
from pathlib import Path

import numpy as np
from numpy.polynomial import chebyshev as C

from solvers.outputs import open_statistics

HERE = Path(__file__).resolve().parent
#: Lee & Moser (2015), Re_tau = 180 case (units of the bulk velocity U_b = 1 and the half-height)
LEE_MOSER = {"re_tau": 182.088, "u_tau_over_U_b": 0.0637309, "c_f": 8.123e-3, "nu": 3.5e-4}
#: von Karman constant and intercept of Lee & Moser's log law
KAPPA, B = 0.384, 4.27


def reference_mean() -> np.ndarray:
    """MKM (1999) ``y+``, ``U+`` at 20 points (columns)."""
    return np.loadtxt(HERE / "reference" / "mkm180_mean.csv", delimiter=",", comments="#", skiprows=3)


def fold(f: np.ndarray, odd: bool = False) -> np.ndarray:
    """The lower half (wall to centre) of a profile on symmetric points, averaged with the mirrored upper half
    (``odd``: a quantity that changes sign under the mirror, ``<u'v'>``)."""
    n = (len(f) + 1) // 2
    return 0.5 * (f[:n] + (-1 if odd else 1) * f[::-1][:n])


def lower(y: np.ndarray) -> np.ndarray:
    """The points of the lower half, wall to centre (where :func:`fold` puts its values)."""
    return y[: (len(y) + 1) // 2]


def series(y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Chebyshev coefficients of ``f`` on Gauss-Lobatto points ``y`` of ``[-1, 1]``."""
    return C.chebfit(y, f, len(y) - 1)


def compare(run: Path) -> tuple[dict, dict]:
    ds = open_statistics(run)
    info = json.loads((run / "run.json").read_text())
    a = dict(ds.attrs)
    y = np.asarray(ds.coords["y"].values, float)
    if abs(y[0] + 1) > 1e-12 or abs(y[-1] - 1) > 1e-12:
        raise SystemExit(f"{run}: walls at y = -1, 1 expected, got {y[0]}, {y[-1]}")
    params = info["physics"]["params"]
    nu = float(params["nu"]) if "nu" in params else 1 / float(params["Re"])
    U, uv = np.asarray(ds["U"].values, float), np.asarray(ds["uv"].values, float)
    u_tau, ub, re_tau = a["u_tau"], a["bulk_velocity"], a["re_tau"]
    se = lambda k: float(a.get(k + "_se", math.nan))  # noqa: E731 (no standard error before the first batch)

    # U+ at the reference points: the folded profile's Chebyshev series (U(y) + U(-y)) / 2 at y = -1 + y+ / Re_tau
    cU = series(y, 0.5 * (U + U[::-1]))
    ref = reference_mean()
    yp_ref, up_ref = ref[:, 0], ref[:, 1]
    inside = yp_ref < re_tau
    ours = C.chebval(-1 + yp_ref[inside] / re_tau, cU) / u_tau
    dev = ours - up_ref[inside]
    near = yp_ref[inside] < 40

    # mean momentum balance: nu dU/dy - <u'v'> is linear between the walls' values
    dU = C.chebval(y, C.chebder(series(y, U)))
    total = nu * dU - uv
    line = total[0] + (total[-1] - total[0]) * (y - y[0]) / (y[-1] - y[0])
    stress_dev = float(np.max(np.abs(total - line)) / a["tau_wall"])

    lm = LEE_MOSER
    rel = lambda ours_, theirs: (ours_ - theirs) / theirs  # noqa: E731
    numbers = {
        "run": {"dir": str(run), "n": info["config"]["n"], "box_length": info["physics"]["box_length"],
                "params": params, "preset": info["config"].get("applied_preset") or info["config"].get("preset"),
                "dtype": info["config"]["dtype"], "t": info["t"], "steps": info["steps"],
                "stats_start": a["start"], "samples": int(a["samples"]), "batches": int(a["batches"]),
                "window": info["t"] - a["start"], "window_eddy_turnovers": (info["t"] - a["start"]) * u_tau,
                "devices": info.get("devices"), "wall_s": info.get("wall_s")},
        "re_tau": {"ours": re_tau, "se": se("re_tau"), "lee_moser": lm["re_tau"],
                   "rel_dev": rel(re_tau, lm["re_tau"])},
        "u_tau_over_U_b": {"ours": u_tau / ub, "se": se("u_tau") / ub, "lee_moser": lm["u_tau_over_U_b"],
                           "rel_dev": rel(u_tau / ub, lm["u_tau_over_U_b"])},
        "c_f": {"ours": a["c_f"], "se": se("c_f"), "lee_moser": lm["c_f"], "rel_dev": rel(a["c_f"], lm["c_f"])},
        "U_c_plus": {"ours": a["U_c_plus"], "se": se("U_c_plus")},
        "U_b_plus": {"ours": a["U_b_plus"], "se": se("U_b_plus"), "lee_moser": 1 / lm["u_tau_over_U_b"]},
        "tau_walls": {"bottom": a["tau_bottom"], "top": a["tau_top"],
                      "asymmetry": (a["tau_bottom"] - a["tau_top"]) / a["tau_wall"]},
        "U_plus_vs_mkm": {
            "y_plus": yp_ref[inside].tolist(), "ours": ours.tolist(), "mkm": up_ref[inside].tolist(),
            "max_abs_dev_below_40": float(np.max(np.abs(dev[near]))),
            "max_rel_dev_below_40": float(np.max(np.abs(dev[near] / up_ref[inside][near]))),
            "max_abs_dev": float(np.max(np.abs(dev)))},
        "total_stress_max_dev_over_tau_wall": stress_dev,
        "u_rms_plus_peak": _peak(ds, "u_rms", u_tau, re_tau),
    }
    profiles = {"y": y, "U": U, "uv": uv, "total": total, "line": line, "tau_w": a["tau_wall"], "nu": nu,
                "u_tau": u_tau, "re_tau": re_tau, "rms": {k: np.asarray(ds[k].values, float)
                                                         for k in ("u_rms", "v_rms", "w_rms") if k in ds},
                "yp_ref": yp_ref, "up_ref": up_ref}
    return numbers, profiles


def _peak(ds, name, u_tau, re_tau) -> dict:
    f = fold(np.asarray(ds[name].values, float)) / u_tau
    y = lower(np.asarray(ds["y"].values, float))
    i = int(np.argmax(f))
    return {"value": float(f[i]), "y_plus": float((1 + y[i]) * re_tau)}


def plot(profiles: dict, numbers: dict, path: Path, label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = profiles
    y, u_tau, re_tau = p["y"], p["u_tau"], p["re_tau"]
    yl = lower(y)
    yp = (1 + yl) * re_tau
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4))
    up = fold(p["U"]) / u_tau
    ax[0].semilogx(yp[1:], up[1:], "o-", ms=3, label=f"{label} (Re_tau = {re_tau:.1f})")
    ax[0].semilogx(p["yp_ref"], p["up_ref"], "ks", mfc="none", ms=5, label="Moser, Kim & Mansour 1999 (178)")
    s = np.geomspace(0.2, 15, 50)
    ax[0].semilogx(s, s, "k:", lw=1, label="U+ = y+")
    s = np.geomspace(20, 200, 50)
    ax[0].semilogx(s, np.log(s) / KAPPA + B, "k--", lw=1, label=f"ln(y+)/{KAPPA} + {B}")
    ax[0].set(xlabel="y+", ylabel="U+", title="mean velocity (both halves folded)")
    ax[0].legend(fontsize=8)
    for k, st in zip(p["rms"], ("-", "--", "-.")):  # (no w_rms in 2D)
        ax[1].plot(yp, fold(p["rms"][k]) / u_tau, st, label=k + "+")
    ax[1].plot(yp, -fold(p["uv"], odd=True) / u_tau ** 2, ":", label="-<u'v'>+")
    ax[1].set(xlabel="y+", title="rms velocities and Reynolds stress (wall units)")
    ax[1].legend(fontsize=8)
    ax[2].plot(y, p["total"] / p["tau_w"], label="nu dU/dy - <u'v'>")
    ax[2].plot(y, p["line"] / p["tau_w"], "k--", lw=1,
               label="linear (steady mean balance)")
    ax[2].plot(y, -p["uv"] / p["tau_w"], ":", label="-<u'v'>")
    ax[2].set(xlabel="y", title=f"total shear stress / tau_w (max dev "
                                f"{numbers['total_stress_max_dev_over_tau_wall']:.3f})")
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="the run directory (statistics.h5, run.json)")
    ap.add_argument("--out", type=Path, required=True, help="OUT.json and OUT.png are written")
    ap.add_argument("--label", default="xfft", help="the run's name on the plot")
    ap.add_argument("--machine", default=None, help="where the run ran (default: this machine)")
    args = ap.parse_args(argv)
    for f in ("statistics.h5", "run.json"):
        if not (args.run / f).exists():
            ap.error(f"{args.run / f} not found (a finished or stopped run of `solvers run channel --stats-every N`)")
    numbers, profiles = compare(args.run)
    numbers["date"] = datetime.date.today().isoformat()
    numbers["machine"] = args.machine or f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})"
    numbers["load_at_analysis"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(numbers, indent=2) + "\n")
    plot(profiles, numbers, args.out.with_suffix(".png"), args.label)
    r, c, u = numbers["re_tau"], numbers["c_f"], numbers["U_plus_vs_mkm"]
    print(f"Re_tau {r['ours']:.1f} +- {r['se']:.1f} (Lee & Moser {r['lee_moser']}, {100 * r['rel_dev']:+.1f}%); "
          f"C_f {c['ours']:.3e} +- {c['se']:.1e} ({100 * c['rel_dev']:+.1f}%); U+ vs MKM below y+ = 40: max "
          f"{u['max_abs_dev_below_40']:.2f} ({100 * u['max_rel_dev_below_40']:.1f}%); total stress off its line by "
          f"{numbers['total_stress_max_dev_over_tau_wall']:.3f} tau_w")
    if not math.isfinite(r["ours"]):
        raise SystemExit("not a turbulent run (Re_tau not finite)")


if __name__ == "__main__":
    main()
