"""Orr–Sommerfeld eigenproblem of plane Poiseuille and plane Couette flow (numpy reference for the wall solvers).

Base flow ``U = 1 - y^2`` (Poiseuille, the default) or ``U = y`` (Couette: walls moving at ``-1`` and ``+1``) on
``[-1, 1]``, perturbations ``v(y) exp(i alpha (x - c t))`` with ``v = v' = 0`` at the walls::

    (U - c)(D^2 - alpha^2) v - U'' v = (D^2 - alpha^2)^2 v / (i alpha Re)

Discretization: Chebyshev tau in the D^2 form (``omega = (D^2 - alpha^2) v`` as a second unknown; Dongarra,
Straughan & Walker 1996), which has no spurious eigenvalues; the generalized problem ``A x = c B x`` goes to
standard form as ``(A - s B)^{-1} B`` for ``numpy.linalg.eig`` with a shift ``s`` that is never an eigenvalue
(Poiseuille: every ``c`` has ``0 < Re c < 1``, ``s = -1``; Couette: ``-1 < Re c < 1`` and ``Im c < 0``, ``s = 2i``),
and the infinite eigenvalues of the singular ``B`` are dropped. ``Re = 10^4``, ``alpha = 1``:
the least stable ``c`` differs from the ``n = 100`` value by 8e-7, 3e-11, 3e-15 at ``n = 40, 60, 80``.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev as C

from ._matrices import derivative_matrix, finite_eigenpairs, multiplication_matrix, peak_phase, wall_rows

DEFAULT_N = 100
#: base flows: Chebyshev coefficients of ``U`` and of ``U''`` on ``[-1, 1]``, and the shift of the eigensolver
PROFILES = {"poiseuille": (np.array([0.5, 0.0, -0.5]), np.array([-2.0]), -1.0),
            "couette": (np.array([0.0, 1.0]), np.array([0.0]), 2.0j)}


def _check(re: float, alpha: float, n: int, profile: str = "poiseuille") -> None:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {tuple(PROFILES)}, got {profile!r}")
    if not re > 0:
        raise ValueError(f"Re must be positive, got {re!r}")
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha!r}")
    if not isinstance(n, (int, np.integer)) or n < 8:
        raise ValueError(f"n (the polynomial degree) must be an integer >= 8, got {n!r}")


def matrices(Re: float, alpha: float, n: int = DEFAULT_N, profile: str = "poiseuille"
             ) -> tuple[np.ndarray, np.ndarray]:
    """The tau matrices ``A, B`` of ``A x = c B x``, ``x = (v, omega)`` (each ``n + 1`` Chebyshev coefficients).

    Rows ``0 .. n-2``: ``omega - (D^2 - alpha^2) v = 0``; rows ``0 .. n-2`` of
    ``U omega - U'' v - (D^2 - alpha^2) omega / (i alpha Re) = c omega``; then ``v(+-1) = 0``, ``v'(+-1) = 0``.

    Args:
      Re: Reynolds number (centreline velocity of Poiseuille flow or wall velocity of Couette flow, half width)
        ``> 0``.
      alpha: streamwise wavenumber ``> 0``.
      n: polynomial degree ``>= 8``.
      profile: ``"poiseuille"`` (``U = 1 - y^2``) or ``"couette"`` (``U = y``).

    Returns:
      ``(A, B)``, complex ``(2n + 2, 2n + 2)``.

    Raises:
      ValueError: a non-positive ``Re`` or ``alpha``, ``n < 8``, an unknown profile.
    """
    _check(Re, alpha, n, profile)
    base, curvature, _ = PROFILES[profile]
    m, r = n + 1, n - 1
    eye = np.eye(m)
    lap = np.linalg.matrix_power(derivative_matrix(n), 2) - alpha**2 * eye
    a, b = np.zeros((2 * m, 2 * m), complex), np.zeros((2 * m, 2 * m), complex)
    a[:r, :m], a[:r, m:] = -lap[:r], eye[:r]
    u = multiplication_matrix(base, n)
    a[r : 2 * r, :m] = -multiplication_matrix(curvature, n)[:r]
    a[r : 2 * r, m:] = (u - lap / (1j * alpha * Re))[:r]
    b[r : 2 * r, m:] = eye[:r]
    a[2 * r :, :m] = np.concatenate([wall_rows(n, 0), wall_rows(n, 1)])
    return a, b


def _eigenpairs(Re: float, alpha: float, n: int, profile: str = "poiseuille") -> tuple[np.ndarray, np.ndarray]:
    c, x = finite_eigenpairs(*matrices(Re, alpha, n, profile), shift=PROFILES[profile][2])
    order = np.argsort(-c.imag)
    return c[order], x[: n + 1, order]


def eigenvalues(Re: float, alpha: float, n: int = DEFAULT_N, profile: str = "poiseuille") -> np.ndarray:
    """Phase speeds ``c`` (``omega = alpha c``), finite ones only, sorted by decreasing imaginary part.

    The well-resolved ones are the first; the last, most damped, are discretization modes of no physical meaning
    (their number grows with ``n``).

    Args:
      Re, alpha, n, profile: as :func:`matrices`.

    Returns:
      Complex array of ``n - 3`` eigenvalues.

    Raises:
      ValueError: as :func:`matrices`.
    """
    return _eigenpairs(Re, alpha, n, profile)[0]


def least_stable_mode(Re: float, alpha: float, n: int = DEFAULT_N, profile: str = "poiseuille"
                      ) -> tuple[complex, np.ndarray]:
    """The eigenvalue of largest ``Im c`` and its ``v_hat`` as Chebyshev coefficients.

    Normalization: ``u_hat = i v_hat' / alpha`` (continuity) has ``max |u_hat| = 1`` on ``[-1, 1]`` and is real and
    positive where that maximum is reached (the lowest such ``y`` where two peaks are equal, as for these
    symmetric modes).

    Args:
      Re, alpha, n, profile: as :func:`matrices`.

    Returns:
      ``(c, coeffs)``: ``coeffs`` complex ``(n + 1,)``; ``v_hat(y) = sum_k coeffs_k T_k(y)``.

    Raises:
      ValueError: as :func:`matrices`.
    """
    c, v = _eigenpairs(Re, alpha, n, profile)
    coeffs = v[:, 0]
    _, u_peak = peak_phase(1j * C.chebder(coeffs) / alpha)
    return complex(c[0]), coeffs / u_peak


def mode_fields(coeffs: np.ndarray, alpha: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``u_hat(y) = i v_hat'(y) / alpha`` and ``v_hat(y)`` of a mode given by its Chebyshev coefficients.

    Args:
      coeffs: ``v_hat`` coefficients ``(n + 1,)``.
      alpha: streamwise wavenumber ``> 0``.
      y: points in ``[-1, 1]`` (any shape).

    Returns:
      ``(u_hat, v_hat)``, complex arrays of the shape of ``y``.

    Raises:
      ValueError: a non-positive ``alpha``.
    """
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha!r}")
    coeffs, y = np.asarray(coeffs), np.asarray(y)
    return 1j * C.chebval(y, C.chebder(coeffs)) / alpha, C.chebval(y, coeffs)
