"""Linear theory the particle simulations are checked against: the Landau root of a Maxwellian plasma, the cold
two-stream growth rate, and the Zel'dovich solution of a plane wave in an Einstein-de Sitter universe."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["landau_root", "two_stream_growth", "zeldovich_plane_wave"]


def _z(zeta: complex) -> complex:
    """The plasma dispersion function ``Z(zeta) = i sqrt(pi) w(zeta)`` (Faddeeva ``w``; analytic continuation
    below the real axis, as Landau's contour asks)."""
    from scipy.special import wofz

    return 1j * math.sqrt(math.pi) * complex(wofz(zeta))


def landau_root(k: float, guess: complex | None = None, tol: float = 1e-13) -> complex:
    """The least-damped root ``omega = omega_r + i gamma`` of ``1 + (1 + zeta Z(zeta)) / k^2 = 0``,
    ``zeta = omega / (sqrt(2) k)``: electron Langmuir waves in a Maxwellian plasma, plasma units (``omega_p = 1``,
    ``lambda_D = 1``, ``k`` in ``1 / lambda_D``). ``landau_root(0.5)`` is ``1.4156 - 0.1533i``.

    Args:
      k: the wavenumber (> 0). guess: the start of the Newton iteration (default: Bohm-Gross
        ``sqrt(1 + 3 k^2)``). tol: the relative step at which it stops.

    Raises:
      ValueError: ``k`` not positive, or no convergence in 100 steps.
    """
    if not k > 0:
        raise ValueError(f"k must be positive, got {k!r}")

    def eps(w: complex) -> complex:
        zeta = w / (math.sqrt(2) * k)
        return 1 + (1 + zeta * _z(zeta)) / k**2

    w = complex(guess) if guess is not None else complex(math.sqrt(1 + 3 * k * k), -0.01)
    for _ in range(100):
        h = 1e-7 * max(abs(w), 1)
        step = eps(w) / ((eps(w + h) - eps(w - h)) / (2 * h))
        w -= step
        if abs(step) < tol * max(abs(w), 1):
            return w
    raise ValueError(f"landau_root: no convergence at k = {k}")


def two_stream_growth(k: float, v0: float) -> float:
    """The growth rate of two cold counter-streaming beams at ``+-v0``, each of half the density (plasma frequency
    1 in all): the root of ``1 = (1/2) / (omega - k v0)^2 + (1/2) / (omega + k v0)^2``, i.e.
    ``gamma^2 = (sqrt(1 + 8 a^2) - 1 - 2 a^2) / 2`` for ``a = k v0`` (unstable for ``a < 1``; largest,
    ``1 / (2 sqrt(2))``, at ``a = sqrt(3/8)``). Returns 0 where stable."""
    a2 = (k * v0) ** 2
    g2 = (math.sqrt(1 + 8 * a2) - 1 - 2 * a2) / 2
    return math.sqrt(g2) if g2 > 0 else 0.0


def zeldovich_plane_wave(q: np.ndarray, a: float, amplitude: float, k: float) -> tuple[np.ndarray, np.ndarray]:
    """Position and canonical momentum ``p = a^2 dx/dt`` (units ``H_0 = 1``) at scale factor ``a`` of the particle
    of Lagrangian coordinate ``q`` in a plane wave, Einstein-de Sitter: ``x = q - a (A / k) sin(k q)``,
    ``p = a^(3/2) dx/da`` (growth ``D = a``). Exact until the first shell crossing, at ``a = 1 / A``.

    Args:
      q: Lagrangian coordinates along the wave (any shape). a: the scale factor. amplitude: ``A`` (the density
        contrast ``delta = A a cos(k q)`` while linear). k: the wavenumber.
    """
    psi = -(amplitude / k) * np.sin(k * np.asarray(q))
    return np.asarray(q) + a * psi, a**1.5 * psi
