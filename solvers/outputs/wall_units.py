"""The physical reading of averaged profiles (:class:`~solvers.outputs.Statistics`' ``derive``): outer and wall
units of a channel or Couette flow, temperature, heat flux and Nusselt numbers of convection. Host arithmetic
(numpy) on the wall-normal points; the column names are the contract of ``statistics.csv``."""

from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev as C

__all__ = ["channel", "convection", "derivative_at_walls", "wall_mean"]

#: the log law ``U+ = ln(y+) / KAPPA + B`` drawn on the plots (von Karman constant and intercept of Lee & Moser 2015)
KAPPA, B = 0.384, 4.27


def _coefficients(y: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Chebyshev coefficients of ``f`` on the points ``y`` (Gauss-Lobatto of ``[a, b]``), and ``a``, ``b``."""
    a, b = float(y[0]), float(y[-1])
    x = 2 * (y - a) / (b - a) - 1
    return C.chebfit(x, f, len(y) - 1), a, b


def derivative_at_walls(y: np.ndarray, f: np.ndarray) -> tuple[float, float]:
    """``df/dy`` at the first and the last point of ``y`` (the walls), by the Chebyshev series through the points."""
    c, a, b = _coefficients(y, f)
    d = C.chebder(c) * 2 / (b - a)
    return float(C.chebval(-1.0, d)), float(C.chebval(1.0, d))


def value_at(y: np.ndarray, f: np.ndarray, at: float) -> float:
    """``f`` at ``at`` by the Chebyshev series through the points ``y``."""
    c, a, b = _coefficients(y, f)
    return float(C.chebval(2 * (at - a) / (b - a) - 1, c))


def wall_mean(y: np.ndarray, f: np.ndarray) -> float:
    """The mean of ``f`` across the walls (Clenshaw-Curtis: the integral of the Chebyshev series)."""
    c, a, b = _coefficients(y, f)
    integral = C.chebint(c)
    return float((C.chebval(1.0, integral) - C.chebval(-1.0, integral)) / 2)


def _rms(cov: dict[str, np.ndarray], a: str) -> np.ndarray:
    """The rms of field ``a``'s fluctuations (its variance, clipped at zero against round-off)."""
    return np.sqrt(np.maximum(cov[a + a], 0))


def _cov(cov: dict[str, np.ndarray], a: str, b: str) -> np.ndarray:
    """``<a'b'>`` whichever order the fields were named in."""
    return cov[a + b] if a + b in cov else cov[b + a]


def channel(equation, y: np.ndarray, m: dict[str, np.ndarray], cov: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """The columns and scalars of channel and Couette flow: outer units and wall units.

    Args:
      equation: the flow (its viscosity ``nu``; ``wall_signs``: the sign of ``dU/dy`` that is a positive shear at
        each wall, default ``(1, -1)``).
      y: the wall-normal points, walls at the first and the last.
      m: field -> mean profile (``u`` streamwise, ``v`` wall-normal, ``w`` spanwise in 3D).
      cov: ``"uv"`` -> ``<u'v'>`` (the covariances of the fluctuations, fields named in order).

    Returns:
      ``(columns, scalars)``. Columns in outer units (the velocity and length scales of the equation): ``U``,
      ``W`` (3D), ``u_rms``, ``v_rms``, ``w_rms`` (3D), ``uv`` (``<u'v'>``); in wall units (``u_tau``,
      ``nu / u_tau``; NaN where the mean wall shear is not positive): ``y_plus`` (distance to the nearer wall),
      ``U_plus`` (velocity relative to that wall), ``u_rms_plus``, ``v_rms_plus``, ``w_rms_plus`` (3D),
      ``uv_plus`` (``<u'v'> / u_tau^2``). Scalars: ``tau_bottom``, ``tau_top``, ``tau_wall`` (their mean),
      ``u_tau``, ``re_tau``, ``pressure_gradient`` (the mean driving force per unit volume, ``tau_wall / h``),
      ``bulk_velocity``, ``c_f`` (``2 tau_wall / U_b^2``), ``U_b_plus``, ``U_c_plus`` (centreline).
    """
    nu = float(equation.nu)
    U = m["u"]
    spanwise = "w" in m
    cols = {"U": U, **({"W": m["w"]} if spanwise else {}), "u_rms": _rms(cov, "u"), "v_rms": _rms(cov, "v"),
            **({"w_rms": _rms(cov, "w")} if spanwise else {}), "uv": _cov(cov, "u", "v")}
    d_bottom, d_top = derivative_at_walls(y, U)
    signs = getattr(equation, "wall_signs", (1.0, -1.0))
    tau_b, tau_t = signs[0] * nu * d_bottom, signs[1] * nu * d_top
    tau = 0.5 * (tau_b + tau_t)
    u_tau = float(np.sqrt(max(tau, 0.0)))
    ub = wall_mean(y, U)
    scalars = {"tau_bottom": tau_b, "tau_top": tau_t, "tau_wall": tau, "u_tau": u_tau, "re_tau": u_tau / nu,
               "pressure_gradient": tau, "bulk_velocity": ub, "c_f": 2 * tau / ub ** 2 if ub else float("nan")}
    scale = u_tau if u_tau > 0 else float("nan")  # no wall units without a positive wall shear
    lower = y <= 0.5 * (y[0] + y[-1])
    dist = np.where(lower, y - y[0], y[-1] - y)
    wall_u = np.where(lower, U[0], U[-1])
    cols["y_plus"] = dist * scale / nu
    cols["U_plus"] = np.abs(U - wall_u) / scale
    for k in [k for k in cols if k.endswith("_rms")]:
        cols[f"{k}_plus"] = cols[k] / scale
    cols["uv_plus"] = cols["uv"] / scale ** 2
    scalars["U_b_plus"] = ub / scale
    scalars["U_c_plus"] = value_at(y, U, 0.5 * (y[0] + y[-1])) / scale
    return cols, scalars


def convection(equation, y: np.ndarray, m: dict[str, np.ndarray], cov: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """The columns and scalars of convection between plates at ``z = 0, 1`` (units: depth, thermal diffusion
    time, temperature difference).

    Args:
      equation: the flow (unused).
      y: the vertical points ``z``.
      m: field -> mean profile (``temperature``, ``u``, ``v`` in 3D, ``w`` vertical).
      cov: ``"uw"`` -> ``<u'w'>`` (the covariances of the fluctuations, fields named in order).

    Returns:
      ``(columns, scalars)``. Columns: ``T`` (mean temperature), ``T_rms``, ``wT`` (the convective heat flux
      ``<w T>``), ``U``, ``V`` (3D; mean horizontal velocities), ``u_rms``, ``v_rms`` (3D), ``w_rms`` (the mean
      vertical velocity is zero between impermeable plates: no column). Scalars: ``nusselt_bottom``,
      ``nusselt_top`` (``-dT/dz`` at each plate; Chebyshev points only) and ``nusselt_volume`` (``1 + <w theta>``,
      ``theta = T - (1 - z)``), which a statistically steady state balances.
    """
    T, w = m["temperature"], m["w"]
    wt = _cov(cov, "w", "temperature") + w * T
    cols = {"T": T, "T_rms": _rms(cov, "temperature"), "wT": wt, "U": m["u"], **({"V": m["v"]} if "v" in m else {}),
            **{f"{a}_rms": _rms(cov, a) for a in ("u", "v", "w") if a in m}}
    theta_flux = wt - (1 - y) * w  # <w theta> on each plane
    if not _gauss_lobatto(y):  # cell-centred points (free-slip plates): no plate values, the volume mean only
        return cols, {"nusselt_volume": 1 + float(np.mean(theta_flux))}
    d_bottom, d_top = derivative_at_walls(y, T)
    return cols, {"nusselt_bottom": -d_bottom, "nusselt_top": -d_top, "nusselt_volume": 1 + wall_mean(y, theta_flux)}


def _gauss_lobatto(y: np.ndarray) -> bool:
    """Whether ``y`` are Gauss-Lobatto points of their interval (walls included), not cell centres."""
    n = len(y) - 1
    ref = y[0] + (y[-1] - y[0]) * (1 - np.cos(np.pi * np.arange(n + 1) / n)) / 2
    return bool(np.allclose(y, ref, rtol=0, atol=1e-12 * abs(y[-1] - y[0])))
