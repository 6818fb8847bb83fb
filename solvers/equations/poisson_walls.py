"""Poisson/Helmholtz ``lap(phi) - lambda phi = f`` on a box with Dirichlet, Neumann or periodic sides, per axis."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

import xfft

#: boundary condition of an axis -> transform kind (cell-centred grid: DST-II / DCT-II, Fourier)
BC_KINDS = {"dirichlet": "dst2", "neumann": "dct2", "periodic": "fft"}


class PoissonWalls:
    """Spectral solver of ``lap(phi) - helmholtz * phi = f`` with one boundary condition per axis.

    Grid: ``x_j = (j + 1/2) L / n`` on Dirichlet (``phi = 0``) and Neumann (``d phi / dn = 0``) axes, where the
    walls sit half a cell outside the first and last points; ``x_j = j L / n`` on periodic axes. ``phi`` is a
    sine (Dirichlet), cosine (Neumann) or Fourier (periodic) series, so ``f`` in the span of the series gives
    ``phi`` exact to round-off. One :func:`xfft.xr2rn` forward (``dst2``/``dct2``/``fft``, the last periodic axis
    ``rfft``), a division by ``-(|k|^2 + helmholtz)``, one inverse.

    With ``helmholtz = 0`` and no Dirichlet axis the problem fixes ``phi`` only up to a constant and needs
    zero-mean ``f``: the mean of ``f`` is ignored and ``phi`` has zero mean.

    Args:
      shape: grid points per axis (any number of axes >= 1, each >= 2).
      bc: ``"dirichlet"``, ``"neumann"`` or ``"periodic"``, one for all axes or one per axis.
      mesh: a mesh from :func:`xfft.make_mesh`, or None for one device.
      box_length: side length(s) (default 1).
      helmholtz: ``lambda >= 0``.

    Shardings: ``f`` and ``phi`` in :attr:`sharding` (canonical real layout of the mesh).

    Raises:
      ValueError: unknown boundary condition, bad shape, box length or ``helmholtz`` (naming the argument).
    """

    name = "poisson-walls"
    description = "Poisson/Helmholtz with Dirichlet, Neumann or periodic sides per axis (steady; solvers.PoissonWalls)"

    def __init__(self, shape: Sequence[int], bc: str | Sequence[str], mesh: Mesh | None = None, *,
                 box_length: float | Sequence[float] = 1.0, helmholtz: float = 0.0):
        self.shape = tuple(int(n) for n in shape)
        if not self.shape or any(n < 2 for n in self.shape):
            raise ValueError(f"shape must hold at least one axis, each with >= 2 points; got {shape!r}")
        nd = len(self.shape)
        bcs = (bc,) * nd if isinstance(bc, str) else tuple(bc)
        if len(bcs) != nd or any(b not in BC_KINDS for b in bcs):
            raise ValueError(f"bc must be one of {tuple(BC_KINDS)} or one per axis ({nd}), got {bc!r}")
        self.bc = bcs
        lengths = (box_length,) * nd if np.ndim(box_length) == 0 else tuple(box_length)
        if len(lengths) != nd or not all(float(v) > 0 for v in lengths):
            raise ValueError(f"box_length must be positive, one value or one per axis; got {box_length!r}")
        self.box_length = tuple(float(v) for v in lengths)
        if not (math.isfinite(helmholtz) and helmholtz >= 0):
            raise ValueError(f"helmholtz must be finite and >= 0, got {helmholtz!r}")
        self.helmholtz = float(helmholtz)
        self.mesh = mesh if mesh is not None else xfft.make_mesh((1,), devices=jax.devices()[:1])
        self.sharding = xfft.real_sharding(self.mesh, self.shape, ndim=nd)
        kinds = [BC_KINDS[b] for b in bcs]
        periodic = [d for d, b in enumerate(bcs) if b == "periodic"]
        if periodic:
            kinds[periodic[-1]] = "rfft"
        self.kinds = tuple(kinds)

    def coordinates(self) -> tuple[jax.Array, ...]:
        """Sharded grid points (cell-centred on wall axes)."""
        axes = [(np.arange(n) + (0.0 if b == "periodic" else 0.5)) * L / n
                for n, b, L in zip(self.shape, self.bc, self.box_length)]
        return xfft.xmeshgrid(*axes, sharding=self.sharding)

    def eigenvalues(self) -> jax.Array:
        """``|k|^2 + helmholtz`` on the transform's index grid (``-lap`` eigenvalues plus ``lambda``)."""
        total = self.helmholtz
        nd = len(self.shape)
        for d, (n, kind, L) in enumerate(zip(self.shape, self.kinds, self.box_length)):
            if kind == "dst2":
                k = np.arange(1, n + 1) * math.pi / L
            elif kind == "dct2":
                k = np.arange(n) * math.pi / L
            elif kind == "rfft":
                k = np.fft.rfftfreq(n, 1.0 / n) * 2 * math.pi / L
            else:
                k = np.fft.fftfreq(n, 1.0 / n) * 2 * math.pi / L
            total = total + (k ** 2).reshape([-1 if j == d else 1 for j in range(nd)])
        return jnp.asarray(total)

    def solve(self, f: jax.Array) -> jax.Array:
        """``phi`` from real ``f`` (shape ``self.shape``, leading axes batched); sharding in = sharding out."""
        f = jnp.asarray(f)
        axes = tuple(range(f.ndim - len(self.shape), f.ndim))
        f_hat = xfft.xr2rn(f, self.kinds, axes=axes)
        lam = self.eigenvalues().astype(jnp.finfo(f.dtype).dtype)
        phi_hat = jnp.where(lam > 0, -f_hat / jnp.where(lam > 0, lam, 1), 0)
        phi = xfft.ixr2rn(phi_hat, self.kinds, axes=axes, s=self.shape)
        return phi.real if jnp.iscomplexobj(phi) else phi
