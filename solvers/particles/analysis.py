"""Measurements on particle runs: the frequency and damping rate of an oscillating mode, an exponential growth
rate, and the power spectrum of a density contrast on a sharded mesh."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["fit_damped_oscillation", "fit_growth_rate", "power_spectrum"]


def fit_damped_oscillation(t, y, *, t_min: float | None = None, t_max: float | None = None) -> tuple[float, float]:
    """The frequency ``omega`` and rate ``gamma`` of ``y(t) = A exp(gamma t) cos(omega t + phi)`` fitted to
    samples by least squares (a signed, real signal: e.g. the real part of a Landau-damped mode's amplitude).

    The start values come from the signal's zero crossings (``omega``) and a straight-line fit of the logarithm of
    its extrema (``gamma``).

    Args:
      t, y: the samples (1D, same length). t_min, t_max: the window fitted (default: all of it).

    Returns:
      ``(omega, gamma)``.

    Raises:
      ValueError: fewer than two zero crossings or three extrema in the window.
    """
    from scipy.optimize import curve_fit

    t, y = np.asarray(t, float), np.asarray(y, float)
    keep = (t >= (t.min() if t_min is None else t_min)) & (t <= (t.max() if t_max is None else t_max))
    t, y = t[keep], y[keep]
    s = np.signbit(y)
    cross = np.nonzero(s[1:] != s[:-1])[0]
    if len(cross) < 2:
        raise ValueError("fit_damped_oscillation: fewer than two zero crossings in the window")
    tc = t[cross] - y[cross] * (t[cross + 1] - t[cross]) / (y[cross + 1] - y[cross])
    omega0 = math.pi / np.mean(np.diff(tc))
    ext = [i + int(np.argmax(np.abs(y[i:j]))) for i, j in zip(cross[:-1] + 1, cross[1:] + 1)]
    if len(ext) < 3:
        raise ValueError("fit_damped_oscillation: fewer than three extrema in the window")
    gamma0 = np.polyfit(t[ext], np.log(np.abs(y[ext])), 1)[0]
    a0 = abs(y[ext[0]]) * math.exp(-gamma0 * t[ext[0]])
    phi0 = -omega0 * t[ext[0]] + (math.pi if y[ext[0]] < 0 else 0.0)

    def model(tt, a, g, w, p):
        return a * np.exp(g * tt) * np.cos(w * tt + p)

    (a, g, w, p), _ = curve_fit(model, t, y, p0=(a0, gamma0, omega0, phi0), maxfev=20000)
    return float(abs(w)), float(g)


def fit_growth_rate(t, amplitude, *, low: float, high: float) -> float:
    """The exponential growth rate of ``amplitude(t)``: a straight-line fit of ``log(amplitude)`` over the samples
    between the first time it passes ``low`` and the first time it passes ``high`` (the linear phase).

    Raises:
      ValueError: the amplitude never passes ``low`` and then ``high``, or fewer than three samples between.
    """
    t, a = np.asarray(t, float), np.abs(np.asarray(amplitude, float))
    above = np.nonzero(a >= low)[0]
    if not len(above):
        raise ValueError(f"fit_growth_rate: the amplitude never reaches low={low:g} (largest {a.max():.3g})")
    i = above[0]
    top = np.nonzero(a[i:] >= high)[0]
    if not len(top):
        raise ValueError(f"fit_growth_rate: the amplitude never reaches high={high:g} after low")
    j = i + top[0]
    if j - i < 3:
        raise ValueError("fit_growth_rate: fewer than three samples between low and high")
    return float(np.polyfit(t[i:j], np.log(a[i:j]), 1)[0])


def power_spectrum(delta: jax.Array, box_length, *, bins: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The isotropic power spectrum ``P(k) = V <|delta_k|^2>`` of a real density contrast on a periodic mesh,
    averaged in shells of width ``2 pi / L`` (the fundamental), with ``delta_k`` the Fourier coefficients
    normalized by the number of cells (the cosmologists' convention: ``P`` in units of volume).

    Args:
      delta: the contrast (2D or 3D, sharded or not; :meth:`~solvers.particles.ParticleMesh.contrast`).
      box_length: the box's side (one number: a cube). bins: the number of shells (default: up to the Nyquist
        wavenumber of the smallest axis).

    Returns:
      ``(k, P)``: the mean wavenumber of each non-empty shell and its mean power (host arrays, shells from the
      fundamental up).
    """
    shape = tuple(delta.shape)
    lengths = np.broadcast_to(np.asarray(box_length, float), (len(shape),))
    sharding = getattr(delta, "sharding", None)
    spread = isinstance(sharding, jax.sharding.NamedSharding) and sharding.mesh.size > 1 and len(shape) > 1
    nbins = bins if bins is not None else min(shape) // 2
    count, ksum, psum = (np.asarray(a) for a in _shell_sums(delta, tuple(float(v) for v in lengths), nbins,
                                                                          sharding if spread else None))
    keep = count > 0
    return ksum[keep] / count[keep], psum[keep] / count[keep]


@partial(jax.jit, static_argnums=(1, 2, 3))
def _shell_sums(delta: jax.Array, lengths: tuple[float, ...], nbins: int, sharding):
    """The count, wavenumber sum and power sum of each shell ``1..nbins`` (one program: eager op-by-op calls
    compiled one program per operation and shell)."""
    import xfft

    shape = tuple(delta.shape)
    kf = 2 * math.pi / min(lengths)
    if sharding is not None:  # (a sharded mesh of more than one axis: the distributed transform)
        d_hat = xfft.xrfftn(delta, ndim=len(shape))
        ks = xfft.wavenumbers(sharding, shape, real=True, box_length=lengths, dtype=delta.dtype)
    else:
        d_hat = jnp.fft.rfftn(delta)
        freqs = [np.fft.fftfreq(n, L / n) for n, L in zip(shape[:-1], lengths[:-1])]
        freqs.append(np.fft.rfftfreq(shape[-1], lengths[-1] / shape[-1]))
        ks = tuple(jnp.asarray(2 * np.pi * f, delta.dtype).reshape([-1 if i == d else 1 for i in range(len(shape))])
                   for d, f in enumerate(freqs))
    kmag = jnp.sqrt(sum(k * k for k in ks))
    half = jnp.abs(ks[-1])
    nyq = math.pi * shape[-1] / lengths[-1]
    pair = jnp.where((half == 0) | (half >= nyq * (1 - 1e-12)), 1.0, 2.0)  # each conjugate pair once in half
    power = (d_hat.real**2 + d_hat.imag**2) * (math.prod(lengths) / math.prod(shape) ** 2)
    shell = jnp.floor(kmag / kf + 0.5).astype(jnp.int32)
    return tuple(jnp.stack([jnp.sum(jnp.where(shell == b, w, 0)) for b in range(1, nbins + 1)])
                 for w in (pair, pair * kmag, pair * power))
