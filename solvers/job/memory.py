"""Memory of a run, known before anything is allocated: XLA's own figures for the run's programs, compiled (never
run) for the same equation, integrator, dtype, dealiasing and mesh on a small grid of the same dimension and
scaled per grid point; the memory the devices have; the largest grid that fits.

Why per-point scaling is right: every buffer of the step program and of the initial condition is a field (a fixed
number of bytes per grid point: the state, stage values, nonlinear terms, the 3/2-padded products), a per-axis table
(bytes per point of one axis) or a scalar, and the wall-normal solves are banded (O(ny) per wavenumber). Scaling
the probe's bytes per point to a bigger grid therefore keeps the fields exact and over-counts the tables and
scalars: measured with jax 0.10.2 on the 8 CPU devices, the per-point figure of a 32^3 (or 192^2) probe is within
0 to +8 % of the same program compiled at 64^3 to 256^3 (``tests/solvers/test_memory_check.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import jax

#: grid points of the probe: 32^3 in 3D, 192^2 in 2D (axes already smaller are kept)
PROBE_POINTS = 32 ** 3
#: margin of an estimate scaled from the probe: XLA's buffer assignment depends on the grid's size, so the same
#: program can hold more per point at full size than at the probe's. Measured with jax 0.10.2 on 8 CPU devices
#: at the sizes where memory binds (2D 768^2-4096^2, 3D 128^3-256^3; the step programs of
#: navier-stokes(-2d), LSRK4/RK4/ETDRK4, float32/float64): the probe scaled came within 0.981 (navier-stokes-2d,
#: LSRK4, float64, 768^2) to 1.23 of the full compile
HEADROOM = 1.05
#: a run whose devices need at most this many bytes per grid point of their pool fits without a probe: twice the
#: heaviest registered configuration measured (rayleigh-benard, etdrk4, dealias 3/2, float64: 6.7 kB per point)
TRIVIAL_BYTES_PER_POINT = 16 * 1024

Make = Callable[[tuple[int, ...]], tuple]  # shape -> (equation, integrator) on the run's mesh; ValueError if not


@dataclass(frozen=True)
class Pool:
    """Memory that a run's devices draw on: each accelerator's own (``share = 1``), or the host's, shared by all
    of this process's CPU devices (``share`` of them)."""

    available: int
    share: int
    kind: str  # "device" or "host"


@dataclass(frozen=True)
class Estimate:
    """Peak bytes of one device for a run of ``shape``, from programs compiled on the grid ``probe``.

    ``programs`` holds each program's bytes per device on the probe (arguments + outputs + temporaries - donated
    and aliased); the peak is the largest, scaled by the ratio of grid points with :data:`HEADROOM` (exact where
    ``probe == shape``).
    """

    shape: tuple[int, ...]
    probe: tuple[int, ...]
    devices: int
    programs: dict[str, int] = field(default_factory=dict)

    @property
    def bytes_per_point(self) -> float:
        """Bytes of all devices together per grid point (with :data:`HEADROOM` where scaled from the probe)."""
        margin = 1.0 if self.probe == self.shape else HEADROOM
        return margin * max(self.programs.values()) * self.devices / math.prod(self.probe)

    @property
    def per_device(self) -> int:
        return math.ceil(self.bytes_per_point * math.prod(self.shape) / self.devices)

    def scaled(self, shape: tuple[int, ...]) -> Estimate:
        """The same programs' estimate for another grid."""
        return Estimate(tuple(shape), self.probe, self.devices, self.programs)


def size_text(nbytes: float) -> str:
    """``12.1 GiB``, ``340 MiB``."""
    for unit, scale in (("EiB", 2 ** 60), ("PiB", 2 ** 50), ("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 2 ** 10:.3g} KiB"


def shape_text(shape: tuple[int, ...]) -> str:
    """``4096^3`` for a cube, ``256x128x64`` otherwise."""
    return f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(map(str, shape))


# ----- what there is -------------------------------------------------------------------------------------------
def host_available() -> int | None:
    """Bytes the host can still give this process: ``MemAvailable`` of ``/proc/meminfo``, lowered to what the
    process's cgroup (a Slurm job's, a container's) has left; None where neither is known."""
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    left = _cgroup_left()
    if left is not None:
        avail = left if avail is None else min(avail, left)
    return avail


def _cgroup_left() -> int | None:
    """The memory limit of this process's cgroup minus its usage (cgroup v2 or v1), or None without a limit."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, ctrl, path = line.split(":", 2)
        if ctrl == "":  # v2
            files = Path("/sys/fs/cgroup" + path) / "memory.max", Path("/sys/fs/cgroup" + path) / "memory.current"
        elif "memory" in ctrl.split(","):
            base = Path("/sys/fs/cgroup/memory" + path)
            files = base / "memory.limit_in_bytes", base / "memory.usage_in_bytes"
        else:
            continue
        try:
            limit, used = (f.read_text().strip() for f in files)
        except OSError:
            continue
        if limit.isdigit() and int(limit) < 2 ** 60:
            return max(0, int(limit) - int(used))
    return None


def memory_pool(mesh) -> Pool | None:
    """The memory this process's devices of ``mesh`` draw on: the smallest free ``bytes_limit`` of an accelerator
    (``memory_stats()``), or the host's available memory shared by its CPU devices; None where unknown."""
    local = [d for d in mesh.devices.flat if d.process_index == jax.process_index()]
    if not local:
        return None
    stats = [d.memory_stats() for d in local]
    if all(s and "bytes_limit" in s for s in stats):
        return Pool(min(s["bytes_limit"] - s.get("bytes_in_use", 0) for s in stats), 1, "device")
    if local[0].platform == "cpu":
        avail = host_available()
        return Pool(avail, len(local), "host") if avail is not None else None
    return None


# ----- what the run needs ---------------------------------------------------------------------------------------
def _bytes(compiled) -> int:
    m = compiled.memory_analysis()
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)


def program_bytes(eq, stepper, ic: str, ic_params: dict) -> dict[str, int]:
    """Bytes per device of the programs that hold the most at once, compiled (not run) on ``eq``'s grid: the
    run's step program (``stepper``, the run's :class:`~solvers.simulation.loop.Loop`: the steps of a segment with their
    dt choice and diagnostics rows, the state donated as the driver does; the coefficients are arguments, so they
    count while the loop keeps them) and the initial condition (where it compiles on this grid; else left out).

    The step program, not the bare step: under CFL control it holds more (with jax 0.10.2 on 8 CPU
    devices, float32: 54.2 against 44.5 bytes per point for navier-stokes-2d, LSRK4, at 1024^2). The
    first row's and the spectrum's programs run with the state alive but need less than the step program.
    """
    out = {"step": _bytes(stepper.lower().compile())}
    with jax.set_mesh(eq.grid.mesh):
        try:
            out["initial condition"] = _bytes(jax.jit(lambda: eq.initial_state(ic, **ic_params)).lower().compile())
        except Exception:  # noqa: BLE001  (an IC that rejects this small grid: the run's own check reports it)
            pass
    return out


def _near(side: int, n: int) -> int:
    """A probe size for an axis of ``n`` points: ``side`` rounded up to a multiple of 16, with ``n``'s parity (odd
    sizes are Chebyshev axes with both walls)."""
    return -(-side // 16) * 16 + n % 2


def estimate(shape: tuple[int, ...], devices: int, make: Make, ic: str, ic_params: dict,
             stepper: Callable, run_points: tuple[int, ...] | None = None) -> Estimate:
    """Compile the run's programs on a probe grid (the run's own grid where it has at most
    :data:`PROBE_POINTS` points: exact) and return the estimate for ``shape``.

    ``make(probe)`` builds the equation and integrator on the run's mesh, raising ValueError/TypeError for a
    grid the mesh cannot hold; the probe grows (x2, x4) until one is held, else the run's own grid is compiled
    (compiling allocates nothing). ``stepper(eq, integ)`` is the run's step programs on it (an object with
    ``lower()``; its errors are the run's own, not the probe's). ``run_points``: the run's points, for equations
    whose programs depend on the grid's size (:attr:`~solvers.model.VelocityEquation.planned_points`, and
    :attr:`~solvers.WallVelocity.planned_points` of the parts a wall equation's ``planned_parts()`` returns).
    """
    candidates = []
    if math.prod(shape) <= PROBE_POINTS:
        candidates.append(tuple(shape))
    side = round(PROBE_POINTS ** (1 / len(shape)))
    for scale in (1, 2, 4):
        probe = tuple(n if n <= side * scale else _near(side * scale, n) for n in shape)
        if probe not in candidates and math.prod(probe) <= math.prod(shape):
            candidates.append(probe)
    candidates.append(tuple(shape))
    for probe in candidates:
        try:
            eq, integ = make(probe)
        except (ValueError, TypeError):
            continue
        if run_points is not None:  # the run's programs, not the probe grid's own
            parts = eq.planned_parts() if callable(getattr(eq, "planned_parts", None)) else (eq,)
            for part in parts:  # the equation and the parts it names (a wall equation's velocity machinery)
                if hasattr(part, "planned_points"):
                    part.planned_points = tuple(run_points)
        return Estimate(tuple(shape), probe, devices, program_bytes(eq, stepper(eq, integ), ic, ic_params))
    raise ValueError(f"no grid of the proportions {shape_text(shape)} can be built on this mesh")


def trivially_fits(shape: tuple[int, ...], devices: int, pool: Pool | None) -> bool:
    """True where the run's pool could hold :data:`TRIVIAL_BYTES_PER_POINT` per grid point (no probe needed), or
    where nothing is known of the memory (nothing to compare with)."""
    if pool is None:
        return True
    points = math.prod(shape) * pool.share / devices
    return points * TRIVIAL_BYTES_PER_POINT <= pool.available


def fits(est: Estimate, pool: Pool) -> bool:
    return est.per_device * pool.share <= pool.available


def largest_fitting(est: Estimate, pool: Pool, valid: Callable[[tuple[int, ...]], bool],
                    tries: int = 4096) -> tuple[int, ...] | None:
    """The largest grid of the proportions of ``est.shape`` that ``valid`` accepts and ``pool`` holds (each axis
    scaled alike, keeping its parity), or None."""
    shape = est.shape
    big = max(shape)
    ratio = (pool.available / max(est.per_device * pool.share, 1)) ** (1 / len(shape))
    last = None
    first = min(big, int(big * ratio) + 1)
    for top in range(first, max(first - tries, 3), -1):
        cand = tuple(top if n == big else max(4 + n % 2, _parity(round(n * top / big), n)) for n in shape)
        if cand == last:
            continue
        last = cand
        if fits(est.scaled(cand), pool) and valid(cand):
            return cand
    return None


def _parity(m: int, n: int) -> int:
    return m if m % 2 == n % 2 else m - 1


def refusal(est: Estimate, pool: Pool, label: str, largest: tuple[int, ...] | None, detail: str = "",
            fit: str | None = None) -> str:
    """The one line that refuses a run too big for the machine (names the field ``n``); ``detail`` follows the need
    (e.g. that it counts the state alone), ``fit`` replaces what is said of the largest grid that fits."""
    need = est.per_device
    if pool.kind == "device":
        have = f"each device has {size_text(pool.available)} available"
    else:
        have = f"this host has {size_text(pool.available)} available for its {pool.share} devices"
    shape = est.shape
    what = {True: {2: "square", 3: "cube"}.get(len(shape), "grid"), False: "grid of these proportions"}[
        len(set(shape)) == 1]
    if largest is None:
        fit_text = f"no {what} fits"
    else:
        fit_text = f"the largest {what} that fits is about {shape_text(largest)}"
    fit = fit if fit is not None else fit_text
    return (f"n: a {shape_text(shape)} {label} run needs about {size_text(need)} per device "
            f"({size_text(need * est.devices)} on {est.devices} devices){detail}, {have}; {fit}")


def state_estimate(shape: tuple[int, ...], devices: int, state_bytes: int) -> Estimate:
    """The memory of the state alone (a lower bound of any run's, known without compiling) on a grid of ``shape``,
    as an estimate for :func:`refusal` and :func:`largest_fitting`."""
    return Estimate(tuple(shape), tuple(shape), devices, {"state": math.ceil(state_bytes / devices)})


def describe_bounds(pool: Pool | None, shape: tuple[int, ...], devices: int, state_bytes: int) -> str:
    """One line for ``--dry-run``, with nothing compiled: where the grid trivially fits, the bound that says so;
    else the memory per device between the state's (below) and :data:`TRIVIAL_BYTES_PER_POINT` per point (above)."""
    if pool is not None and trivially_fits(shape, devices, pool):
        return describe(None, pool, shape, devices)
    have = describe(None, pool).split("; ", 1)[1]
    low, high = state_bytes / devices, math.prod(shape) * TRIVIAL_BYTES_PER_POINT / devices
    return (f"between {size_text(low)} (the state) and {size_text(high)} per device (at most "
            f"{TRIVIAL_BYTES_PER_POINT // 1024} KiB per grid point; nothing compiled: the run compiles its programs "
            f"on a probe grid and refuses what does not fit); {have}")


def describe(est: Estimate | None, pool: Pool | None, shape: tuple[int, ...] | None = None, devices: int = 1) -> str:
    """One line for ``--dry-run``: the estimate per device, how it was found, and what there is. Without an
    estimate (a grid far below what the devices hold: nothing compiled), the bound that made it unnecessary."""
    have = "available memory unknown" if pool is None else (
        f"{size_text(pool.available)} available per device" if pool.kind == "device" else
        f"{size_text(pool.available)} available on the host for {pool.share} devices")
    if est is None:
        if shape is None or pool is None:
            return f"not estimated; {have}"
        bound = math.prod(shape) * TRIVIAL_BYTES_PER_POINT / devices
        return (f"fits: under {size_text(bound)} per device (at most {TRIVIAL_BYTES_PER_POINT // 1024} KiB per grid "
                f"point, twice the heaviest equation measured; nothing compiled); {have}")
    how = "exact: compiled on this grid" if est.probe == est.shape else \
        f"scaled from a {shape_text(est.probe)} compile, +{round(100 * (HEADROOM - 1))}%"
    return (f"about {size_text(est.per_device)} per device ({size_text(est.per_device * est.devices)} on "
            f"{est.devices} devices, {est.bytes_per_point:.0f} B per grid point; {how}); {have}")
