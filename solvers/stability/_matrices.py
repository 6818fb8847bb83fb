"""Dense Chebyshev tau matrices (numpy) and the generalized eigenproblem of the stability references.

Polynomials of degree ``n`` are coefficient vectors of length ``n + 1`` in ``T_k(y)``, ``y in [-1, 1]``. The
problems are written in the D^2 (second-order system) tau form of Dongarra, Straughan & Walker (1996, Appl. Numer.
Math. 22, 399): a fourth-order field ``w`` gets a companion ``omega = (D^2 - k^2) w``, every equation holds for the
Chebyshev coefficients ``0 .. n-2`` and the boundary conditions fill the remaining rows. Its eigenvalue problem
``A x = lambda B x`` has a singular ``B``; the infinite eigenvalues it causes are exactly infinite, not the spurious
finite ones of the fourth-order tau form, and are removed by :func:`finite_eigenpairs`.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev as C


def derivative_matrix(n: int, scale: float = 1.0) -> np.ndarray:
    """``(n + 1) x (n + 1)`` matrix of ``d/dx`` on coefficients, ``x = y / scale`` (``scale`` = ``dy/dx``).

    ``(D a)_k = (2 / c_k) sum_{p > k, p + k odd} p a_p`` (``c_0 = 2``, else 1), times ``scale``.
    """
    k = np.arange(n + 1)
    d = np.where((k[None, :] > k[:, None]) & ((k[None, :] + k[:, None]) % 2 == 1), 2.0 * k[None, :], 0.0)
    d[0] /= 2
    return scale * d


def multiplication_matrix(poly: np.ndarray, n: int) -> np.ndarray:
    """``(n + 1) x (n + 1)`` matrix of the product with ``sum_j poly_j T_j``, truncated to degree ``n``.

    ``T_j T_k = (T_{j+k} + T_{|j-k|}) / 2``; rows ``0 .. n`` are exact, the product's higher coefficients are cut
    (the tau equations use rows ``0 .. n-2`` only).
    """
    m = np.zeros((n + 1 + len(poly), n + 1))
    for j, pj in enumerate(poly):
        for k in range(n + 1):
            m[j + k, k] += pj / 2
            m[abs(j - k), k] += pj / 2
    return m[: n + 1]


def wall_rows(n: int, order: int, scale: float = 1.0) -> np.ndarray:
    """Rows ``(2, n + 1)`` evaluating ``d^order / dx^order`` at ``y = +1`` and ``y = -1`` (``dy/dx = scale``)."""
    k = np.arange(n + 1)
    values = np.stack([np.ones(n + 1), (-1.0) ** k])
    return values @ np.linalg.matrix_power(derivative_matrix(n, scale), order)


def finite_eigenpairs(a: np.ndarray, b: np.ndarray, shift: complex, tol: float = 1e-11
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Finite eigenpairs of ``a x = lambda b x`` through the standard problem of ``(a - shift b)^{-1} b``.

    Its eigenvalues are ``mu = 1 / (lambda - shift)``; infinite ``lambda`` give ``mu = 0`` and are dropped where
    ``|mu| <= tol * max |mu|``. ``shift`` must not be an eigenvalue (a non-real shift for a real spectrum).

    Returns:
      ``(lambda, x)``: eigenvalues ``(m,)`` and eigenvectors as columns ``(len(a), m)``, unsorted.
    """
    mu, x = np.linalg.eig(np.linalg.solve(a - shift * b, b))
    keep = np.abs(mu) > tol * np.abs(mu).max()
    return shift + 1 / mu[keep], x[:, keep]


def peak_phase(coeffs: np.ndarray, points: int = 4001) -> tuple[float, complex]:
    """Where ``|f|`` of ``f = sum coeffs_k T_k`` peaks on ``[-1, 1]``, and ``f`` there.

    A Chebyshev–Lobatto grid of ``points`` locates the peak; three Newton steps on ``d|f|^2/dy = 0`` refine it. Of
    peaks equal to ``1e-9`` relative (symmetric modes have two) the lowest ``y`` wins, so the choice is
    reproducible.

    Returns:
      ``(y_peak, f(y_peak))``.
    """
    grid = np.cos(np.pi * np.arange(points)[::-1] / (points - 1))  # increasing
    size = np.abs(C.chebval(grid, coeffs))
    candidates = np.flatnonzero(size >= size.max() * (1 - 1e-6))
    d1, d2 = C.chebder(coeffs), C.chebder(coeffs, 2)
    peaks = []
    for y in grid[candidates]:
        for _ in range(3):
            f, f1, f2 = (C.chebval(y, c) for c in (coeffs, d1, d2))
            g = (np.conj(f) * f1).real  # (1/2) d|f|^2/dy
            dg = (np.abs(f1) ** 2 + np.conj(f) * f2).real
            if dg < 0 and -1 < y - g / dg < 1:
                y = y - g / dg
        peaks.append((float(y), complex(C.chebval(y, coeffs))))
    top = max(abs(f) for _, f in peaks)
    return min(((y, f) for y, f in peaks if abs(f) >= top * (1 - 1e-9)), key=lambda peak: peak[0])
