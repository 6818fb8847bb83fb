"""Linear stability of the conduction state of Rayleigh–Bénard convection (numpy reference for the solvers).

Units of the solvers: depth ``d``, thermal time ``d^2 / kappa``; plates at ``z = 0`` and ``z = 1``; linearized::

    u_t = -grad p + Pr lap u + Ra Pr theta z_hat,    theta_t = w + lap theta,    div u = 0.

A normal mode ``(w, theta)(z) exp(i k x + sigma t)`` (horizontal wavenumber ``k``) satisfies, with
``L = D^2 - k^2``, ``sigma L w = Pr L^2 w - Ra Pr k^2 theta`` and ``sigma theta = w + L theta``; ``theta = w = 0``
at the plates and ``Dw = 0`` (``walls="no-slip"``) or ``D^2 w = 0`` (``"free-slip"``). Discretization: Chebyshev
tau in ``y = 2z - 1`` (so ``d/dz = 2 d/dy``) in the D^2 form, unknowns ``(w, omega = L w, theta)`` each ``n + 1``
coefficients; the infinite eigenvalues of the singular mass matrix are dropped (see :mod:`._matrices`). The
spectrum is real (the operator is symmetrizable), so non-real shifts are never eigenvalues.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev as C

from ._matrices import derivative_matrix, finite_eigenpairs, peak_phase, wall_rows

WALLS = ("no-slip", "free-slip")
DEFAULT_N = 32


def _check(k: float, walls: str, n: int) -> None:
    if walls not in WALLS:
        raise ValueError(f"walls must be one of {WALLS}, got {walls!r}")
    if not k > 0:
        raise ValueError(f"k (the horizontal wavenumber) must be positive, got {k!r}")
    if not isinstance(n, (int, np.integer)) or n < 8:
        raise ValueError(f"n (the polynomial degree) must be an integer >= 8, got {n!r}")


def _system(k: float, walls: str, n: int, ra: float, pr: float, steady: bool) -> tuple[np.ndarray, np.ndarray]:
    """``A x = lambda B x`` for ``x = (w, omega, theta)``: ``lambda = sigma``, or ``Ra`` if ``steady``."""
    _check(k, walls, n)
    m, r = n + 1, n - 1
    eye = np.eye(m)
    lap = np.linalg.matrix_power(derivative_matrix(n, 2.0), 2) - k**2 * eye
    a, b = np.zeros((3 * m, 3 * m)), np.zeros((3 * m, 3 * m))
    rows = [slice(i * r, (i + 1) * r) for i in range(3)]
    w, om, th = (slice(i * m, (i + 1) * m) for i in range(3))
    a[rows[0], w], a[rows[0], om] = -lap[:r], eye[:r]  # omega = L w
    a[rows[2], w], a[rows[2], th] = eye[:r], lap[:r]  # sigma theta = w + L theta
    if steady:  # L omega = Ra k^2 theta (Pr divides out), 0 = w + L theta
        a[rows[1], om], b[rows[1], th] = lap[:r], k**2 * eye[:r]
    else:  # sigma omega = Pr L omega - Ra Pr k^2 theta
        a[rows[1], om], a[rows[1], th] = pr * lap[:r], -ra * pr * k**2 * eye[:r]
        b[rows[1], om], b[rows[2], th] = eye[:r], eye[:r]
    bc = 3 * r
    a[bc : bc + 2, w] = wall_rows(n, 0)
    a[bc + 2 : bc + 4, w] = wall_rows(n, 1 if walls == "no-slip" else 2, 2.0)
    a[bc + 4 :, th] = wall_rows(n, 0)
    return a, b


def _modes(k: float, Ra: float, Pr: float, walls: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    if not Pr > 0:
        raise ValueError(f"Pr must be positive, got {Pr!r}")
    sigma, x = finite_eigenpairs(*_system(k, walls, n, Ra, Pr, steady=False), shift=1j)
    order = np.argsort(-sigma.real)
    return sigma[order], x[:, order]


def growth_rate(k: float, Ra: float, Pr: float, walls: str = "no-slip", n: int = DEFAULT_N) -> float:
    """The largest real part of the growth rates ``sigma`` of horizontal wavenumber ``k``.

    Args:
      k: horizontal wavenumber ``> 0`` (units ``1/d``).
      Ra: Rayleigh number (any sign).
      Pr: Prandtl number ``> 0``.
      walls: ``"no-slip"`` or ``"free-slip"`` (both plates; temperature fixed on both).
      n: polynomial degree ``>= 8``.

    Returns:
      ``max Re sigma`` (units ``kappa / d^2``).

    Raises:
      ValueError: unknown ``walls``, non-positive ``k`` or ``Pr``, or ``n < 8``.
    """
    return float(_modes(k, Ra, Pr, walls, n)[0][0].real)


def critical_rayleigh(k: float, walls: str = "no-slip", n: int = DEFAULT_N) -> float:
    """The Rayleigh number at which wavenumber ``k`` is neutral (``sigma = 0``), independent of ``Pr``.

    The steady problem ``L^3 w = -Ra k^2 w`` (as ``L omega = Ra k^2 theta``, ``w + L theta = 0``) is a generalized
    eigenproblem in ``Ra``; the smallest positive eigenvalue is returned.

    Args:
      k, walls, n: as :func:`growth_rate`.

    Returns:
      The neutral Rayleigh number.

    Raises:
      ValueError: as :func:`growth_rate`.
    """
    ra = finite_eigenpairs(*_system(k, walls, n, 0.0, 1.0, steady=True), shift=1000j)[0]
    real = ra[(np.abs(ra.imag) <= 1e-8 * np.abs(ra)) & (ra.real > 0)].real
    return float(real.min())


def onset(walls: str = "no-slip", n: int = DEFAULT_N, bracket: tuple[float, float] = (1.0, 6.0)
          ) -> tuple[float, float]:
    """``(Ra_c, k_c)``: the minimum over ``k`` of :func:`critical_rayleigh`.

    Eleven wavenumbers across ``bracket`` locate the minimum; then parabolas through three points ``k0 - h, k0,
    k0 + h`` move ``k0`` to their vertex while ``h`` shrinks tenfold to ``5e-5`` (``k_c`` to about ``1e-7``).

    Args:
      walls, n: as :func:`growth_rate`.
      bracket: wavenumbers around the minimum.

    Returns:
      ``(Ra_c, k_c)``; no-slip about ``(1707.762, 3.1163)``, free-slip ``(27 pi^4 / 4, pi / sqrt(2))``.

    Raises:
      ValueError: as :func:`growth_rate`.
    """
    ks = np.linspace(*bracket, 11)
    k0 = float(ks[np.argmin([critical_rayleigh(k, walls, n) for k in ks])])
    h = (ks[1] - ks[0]) / 2
    while h > 1e-5:
        f_minus, f0, f_plus = (critical_rayleigh(k0 + d, walls, n) for d in (-h, 0.0, h))
        step = h * (f_minus - f_plus) / (2 * (f_plus - 2 * f0 + f_minus))
        k0, h = k0 + float(np.clip(step, -h, h)), h / 10
    return critical_rayleigh(k0, walls, n), k0


def eigenmode(k: float, Ra: float, Pr: float, walls: str = "no-slip", n: int = DEFAULT_N
              ) -> tuple[float, np.ndarray, np.ndarray]:
    """The fastest-growing mode: ``(sigma, w_coeffs, theta_coeffs)``.

    Coefficients are Chebyshev series in ``y = 2z - 1``: ``theta(z) = sum_j theta_coeffs_j T_j(2z - 1)``.
    Normalization: ``max |theta| = 1`` on ``[0, 1]``, ``theta`` real and positive there (the lowest ``z`` of equal
    peaks); ``w`` is scaled alike, so ``w = (sigma - L) theta``.

    Args:
      k, Ra, Pr, walls, n: as :func:`growth_rate`.

    Returns:
      ``sigma`` (real), and ``w``, ``theta`` coefficients ``(n + 1,)`` (real).

    Raises:
      ValueError: as :func:`growth_rate`.
    """
    sigma, x = _modes(k, Ra, Pr, walls, n)
    m = n + 1
    w, theta = x[:m, 0], x[2 * m :, 0]
    _, peak = peak_phase(theta)
    return float(sigma[0].real), (w / peak).real, (theta / peak).real


def evaluate(coeffs: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A field of :func:`eigenmode` at heights ``z in [0, 1]`` (``C.chebval(2z - 1, coeffs)``)."""
    return C.chebval(2 * np.asarray(z) - 1, coeffs)
