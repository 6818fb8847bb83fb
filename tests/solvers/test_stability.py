"""Linear-stability references (solvers.stability) against published values, closed forms and scipy.

Measured (2026-11-23, x86-64 CPU): Orr–Sommerfeld Re = 1e4, alpha = 1, n = 100: c = 0.23752648882047 +
0.00373967062298i (n = 80 agrees to 3e-15), 3.3e-9 from Orszag's 8-digit value; scipy's QZ agrees on the 20 least
stable eigenvalues to 1.1e-9 (n = 60). Rayleigh–Bénard no-slip onset (1707.76177710, 3.11632355);
free-slip growth rates within 2e-13 of the closed form, onset within 2e-15 relative of 27 pi^4 / 4 and 1.4e-10 of
pi / sqrt(2).
"""

import numpy as np
import pytest
import scipy.linalg
from numpy.polynomial import chebyshev as C

from solvers.stability import orr_sommerfeld as os_
from solvers.stability import rayleigh_benard as rb

ORSZAG = 0.23752649 + 0.00373967j  # Orszag 1971, J. Fluid Mech. 50, 689: Re = 10^4, alpha = 1


@pytest.fixture(scope="module")
def orszag_mode():
    return os_.least_stable_mode(1e4, 1.0)


def test_orr_sommerfeld_matches_orszag(orszag_mode):
    c, _ = orszag_mode
    assert abs(c - ORSZAG) <= 1e-8, c


def test_orr_sommerfeld_mode_solves_the_ode(orszag_mode):
    """Residual of the ODE on 2001 Chebyshev points (relative to its largest term) and the four wall conditions;
    ``max |u_hat| = 1``, real and positive at the peak."""
    c, v = orszag_mode
    alpha, re = 1.0, 1e4
    lap = C.chebsub(C.chebder(v, 2), alpha**2 * v)
    lap2 = C.chebsub(C.chebder(lap, 2), alpha**2 * lap)
    y = np.cos(np.linspace(0, np.pi, 2001))
    inertia = (1 - y**2 - c) * C.chebval(y, lap)
    residual = inertia + 2 * C.chebval(y, v) - C.chebval(y, lap2) / (1j * alpha * re)
    assert np.abs(residual).max() <= 1e-9 * np.abs(inertia).max()
    walls = np.array([1.0, -1.0])
    assert np.abs(C.chebval(walls, v)).max() < 1e-13 and np.abs(C.chebval(walls, C.chebder(v))).max() < 1e-12
    u, v_y = os_.mode_fields(v, alpha, y)
    np.testing.assert_allclose(v_y, C.chebval(y, v), rtol=0, atol=1e-15)
    assert 1 - 1e-5 < np.abs(u).max() <= 1 + 1e-12  # a grid point near the peak
    lower = y[np.where(y < 0, np.abs(u), 0).argmax()]  # of the two equal peaks (u_hat is odd) the lower one
    u_near = os_.mode_fields(v, alpha, np.linspace(lower - 2e-3, lower + 2e-3, 4001))[0]
    assert abs(u_near[np.abs(u_near).argmax()] - 1) < 1e-6


def test_orr_sommerfeld_eigenvalues_match_scipy_qz():
    a, b = os_.matrices(1e4, 1.0, 60)
    qz = scipy.linalg.eig(a, b, right=False)
    qz = qz[np.isfinite(qz) & (np.abs(qz) < 1e6)]  # QZ leaves one infinite eigenvalue at ~1e13
    qz = qz[np.argsort(-qz.imag)]
    ours = os_.eigenvalues(1e4, 1.0, 60)
    assert ours.shape == qz.shape == (57,)
    assert np.all(np.diff(ours.imag) <= 0) and abs(ours[0] - ORSZAG) <= 1e-8  # n = 60 suffices too
    assert np.abs(ours - qz)[:20].max() < 1e-8 and np.abs(ours - qz).max() < 1e-6


def free_slip_rate(k, ra, pr):
    big_k2 = k * k + np.pi**2
    b = (1 + pr) * big_k2
    return (-b + np.sqrt(b * b - 4 * (pr * big_k2**2 - ra * pr * k * k / big_k2))) / 2


@pytest.mark.parametrize("k, ra, pr", [(2.0, 1000.0, 0.7), (1.0, 500.0, 7.0), (3.0, 2e4, 1.0), (0.5, 100.0, 0.1)])
def test_free_slip_growth_rate_matches_closed_form(k, ra, pr):
    np.testing.assert_allclose(rb.growth_rate(k, ra, pr, "free-slip"), free_slip_rate(k, ra, pr), rtol=1e-10,
                               atol=1e-10)


def test_onset_matches_chandrasekhar_and_the_free_slip_closed_form():
    ra_c, k_c = rb.onset("no-slip")
    assert abs(ra_c / 1707.7618 - 1) <= 1e-6 and abs(k_c / 3.1163 - 1) <= 1e-4, (ra_c, k_c)
    ra_c, k_c = rb.onset("free-slip")
    np.testing.assert_allclose(ra_c, 27 * np.pi**4 / 4, rtol=1e-10)
    np.testing.assert_allclose(k_c, np.pi / np.sqrt(2), rtol=1e-6)


@pytest.mark.parametrize("pr", [0.7, 7.0])
def test_growth_rate_changes_sign_at_onset(pr):
    k_c = 3.1163
    ra = rb.critical_rayleigh(k_c)
    assert abs(rb.growth_rate(k_c, ra, pr)) < 1e-9
    assert rb.growth_rate(k_c, ra * (1 - 1e-3), pr) < 0 < rb.growth_rate(k_c, ra * (1 + 1e-3), pr)


def test_eigenmode_normalized_and_consistent():
    k, ra, pr = 3.1163, 2500.0, 0.7
    sigma, w, theta = rb.eigenmode(k, ra, pr)
    assert sigma == rb.growth_rate(k, ra, pr) and sigma > 0
    z = np.linspace(0, 1, 2001)
    th = rb.evaluate(theta, z)
    assert 1 - 1e-6 < np.abs(th).max() <= 1 + 1e-12 and th[np.argmax(np.abs(th))] > 0
    assert np.abs(th[np.argmax(np.abs(th))] - th[1000]) < 1e-6  # the peak of the first mode is mid-layer
    for f in (w, theta, C.chebder(w)):
        assert np.abs(C.chebval(np.array([-1.0, 1.0]), f)).max() < 1e-12
    lap_theta = C.chebsub(4 * C.chebder(theta, 2), k**2 * theta)  # d/dz = 2 d/dy
    np.testing.assert_allclose(rb.evaluate(C.chebsub(sigma * theta, lap_theta), z), rb.evaluate(w, z), atol=1e-9)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="walls"):
        rb.growth_rate(3.0, 1000.0, 1.0, walls="rigid")
    with pytest.raises(ValueError, match="Pr"):
        rb.growth_rate(3.0, 1000.0, 0.0)
    with pytest.raises(ValueError, match="k "):
        rb.critical_rayleigh(-1.0)
    with pytest.raises(ValueError, match="Re"):
        os_.eigenvalues(-1.0, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        os_.mode_fields(np.ones(4), 0.0, np.zeros(3))
    with pytest.raises(ValueError, match="n "):
        os_.least_stable_mode(1e4, 1.0, n=4)
