"""The physical reading of averaged profiles (:class:`~solvers.outputs.Statistics`' ``derive``): wall units of a
channel or Couette flow, Nusselt numbers of convection. Host arithmetic (numpy) on the wall-normal points."""

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
    c, a, b = _coefficients(y, f)
    return float(C.chebval(2 * (at - a) / (b - a) - 1, c))


def wall_mean(y: np.ndarray, f: np.ndarray) -> float:
    """The mean of ``f`` across the walls (Clenshaw-Curtis: the integral of the Chebyshev series)."""
    c, a, b = _coefficients(y, f)
    integral = C.chebint(c)
    return float((C.chebval(1.0, integral) - C.chebval(-1.0, integral)) / 2)


def channel(equation, y: np.ndarray, m: dict[str, np.ndarray], cov: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """Channel and Couette flow (fields ``u`` streamwise, ``v`` wall-normal, ``w`` spanwise; walls at ``y = -1, 1``;
    ``m`` the mean profiles, ``cov`` the covariances of the fluctuations, ``"uv"`` -> ``<u'v'>``):
    ``U``, ``W``, ``u_rms``, ``v_rms``, ``w_rms``, ``uv`` (``<u'v'>``), and in wall units ``y_plus`` (distance to the
    nearer wall), ``U_plus`` (velocity relative to that wall); scalars ``u_tau``, ``re_tau``, ``tau_wall``,
    ``tau_bottom``, ``tau_top``, ``pressure_gradient`` (the mean driving force per unit volume, ``tau_wall / h``),
    ``bulk_velocity``, ``c_f`` (``2 tau_wall / U_b^2``), ``U_b_plus``, ``U_c_plus`` (centreline)."""
    nu = float(equation.nu)
    U = m["u"]
    W = m.get("w", np.zeros_like(U))
    zero = np.zeros_like(U)
    cols = {"U": U, "W": W, "u_rms": np.sqrt(np.maximum(cov["uu"], 0)), "v_rms": np.sqrt(np.maximum(cov["vv"], 0)),
            "w_rms": np.sqrt(np.maximum(cov["ww"], 0)) if "ww" in cov else zero, "uv": cov["uv"]}
    d_bottom, d_top = derivative_at_walls(y, U)
    signs = getattr(equation, "wall_signs", (1.0, -1.0))
    tau_b, tau_t = signs[0] * nu * d_bottom, signs[1] * nu * d_top
    tau = 0.5 * (tau_b + tau_t)
    u_tau = float(np.sqrt(max(tau, 0.0)))
    ub = wall_mean(y, U)
    scalars = {"tau_bottom": tau_b, "tau_top": tau_t, "tau_wall": tau, "u_tau": u_tau, "re_tau": u_tau / nu,
               "pressure_gradient": tau, "bulk_velocity": ub, "c_f": 2 * tau / ub ** 2 if ub else float("nan")}
    if u_tau > 0:
        lower = y <= 0.5 * (y[0] + y[-1])
        dist = np.where(lower, y - y[0], y[-1] - y)
        wall_u = np.where(lower, U[0], U[-1])
        cols["y_plus"] = dist * u_tau / nu
        cols["U_plus"] = np.abs(U - wall_u) / u_tau
        scalars["U_b_plus"] = ub / u_tau
        scalars["U_c_plus"] = value_at(y, U, 0.5 * (y[0] + y[-1])) / u_tau
    return cols, scalars


def convection(equation, y: np.ndarray, m: dict[str, np.ndarray], cov: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """Convection between plates at ``z = 0, 1`` (fields ``temperature``, ``u``, ``w``, ...): ``z``, ``T``,
    ``T_rms``, ``wT`` (the convective heat flux ``<w T>``), scalars ``nusselt_bottom``, ``nusselt_top`` (``-dT/dz``
    at each plate; Chebyshev points only) and ``nusselt_volume`` (``1 + <w theta>``, ``theta = T - (1 - z)``), which a
    statistically steady state balances."""
    T, w = m["temperature"], m["w"]
    cols = {"z": y, "T": T, "T_rms": np.sqrt(np.maximum(cov["temperaturetemperature"], 0))}
    wt = (cov["wtemperature"] if "wtemperature" in cov else cov["temperaturew"]) + w * T
    cols["wT"] = wt
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
