"""Per-axis bases of the spectral grids (target of issue K): Fourier, sine/cosine and a Chebyshev wall basis.

For now only the Chebyshev tau building blocks live here, in the private module :mod:`solvers.bases._tau`
(derivatives, boundary values, the quasi-tridiagonal Helmholtz solve and the clamped influence-matrix solve); the
package's public API is filled in when the bases are wired into the grids.
"""
