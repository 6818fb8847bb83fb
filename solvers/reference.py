"""Reference solutions used to validate the solvers (tests, notebooks): closed forms and series."""

from __future__ import annotations

import numpy as np


def taylor_green_series(nu: float, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Taylor coefficients in ``t`` of the energy E(t) and enstrophy Z(t) of the Taylor-Green vortex.

    The flow ``u0 = (sin x cos y cos z, -cos x sin y cos z, 0)`` (V0 = 1, box 2 pi) is expanded in powers of t
    as Taylor & Green (1937, Proc. R. Soc. Lond. A 158, 499) did and Brachet et al. (1983, J. Fluid Mech. 130,
    411) continued to high order: ``(n+1) a_{n+1} = P[sum_{i+j=n} a_i x w_j] + nu lap a_n``. Computed in numpy
    with exact Fourier arithmetic (the order-n coefficient holds wavenumbers up to n + 1 only, so a 2(n + 2)-point
    grid is exact), independently of the solver. The first terms are the published
    ``E = 1/8 - (3 nu / 4) t + ...`` and ``Z / Z0 = 1 - 6 nu t + (18 nu^2 + 5/48) t^2 + ...`` with Z0 = 3/8.

    Args:
      nu: kinematic viscosity.
      order: highest power of t.

    Returns:
      ``(e, z)``: arrays of ``order + 1`` coefficients; ``E(t) = sum(e[n] t^n)``, ``Z(t) = sum(z[n] t^n)``.
    """
    m = 2 * (order + 2)
    x = np.arange(m) * 2 * np.pi / m
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    k, kz = np.fft.fftfreq(m, 1 / m), np.fft.rfftfreq(m, 1 / m)
    K = np.stack(np.meshgrid(k, k, kz, indexing="ij"))
    k2 = (K**2).sum(0)
    ik2 = np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0)

    def fft(f):
        return np.fft.rfftn(f, axes=(1, 2, 3))

    def ifft(f):
        return np.fft.irfftn(f, s=(m, m, m), axes=(1, 2, 3))

    def curl(h):
        return np.stack([1j * (K[1] * h[2] - K[2] * h[1]), 1j * (K[2] * h[0] - K[0] * h[2]),
                         1j * (K[0] * h[1] - K[1] * h[0])])

    def cross(a, b):
        return np.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

    u0 = np.stack([np.sin(X) * np.cos(Y) * np.cos(Z), -np.cos(X) * np.sin(Y) * np.cos(Z), 0 * X])
    a_hat, a, w = [fft(u0)], [u0], [ifft(curl(fft(u0)))]
    for n in range(order):  # (n+1) a_{n+1} = P[sum_{i+j=n} a_i x w_j] + nu lap a_n
        h = fft(sum(cross(a[i], w[n - i]) for i in range(n + 1)))
        h = (h - K * (K * h).sum(0) * ik2 - nu * k2 * a_hat[n]) / (n + 1)
        a_hat.append(h)
        a.append(ifft(h))
        w.append(ifft(curl(h)))
    e = [0.5 * sum((a[i] * a[n - i]).sum(0).mean() for i in range(n + 1)) for n in range(order + 1)]
    z = [0.5 * sum((w[i] * w[n - i]).sum(0).mean() for i in range(n + 1)) for n in range(order + 1)]
    return np.array(e), np.array(z)
