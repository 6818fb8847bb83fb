"""Host memory on CPU devices: make the C library keep freed blocks for the next call of a program.

On CPU devices, device memory is host memory: every call of a compiled program takes its outputs and temporaries
from the process's ``malloc`` and frees them afterwards. glibc's ``malloc`` serves blocks above a threshold (at
most 32 MiB) with fresh ``mmap`` calls and unmaps them when freed, and gives the top of its heaps back to the
system; each call then faults its buffers in again page by page, which at large grids costs as much as a pass of
the transform. :func:`keep_host_memory` sets glibc's own parameters (``mallopt``) so that freed blocks stay in
the process for reuse: the effect of preloading tcmalloc, without a package or a restart.
"""

from __future__ import annotations

import ctypes
import sys

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -2, -4, -8
_INT_MAX = 2**31 - 1

#: what :func:`keep_host_memory` sets, in order: one arena (threads started afterwards share the main heap, which
#: has no size cap), no ``mmap`` for large blocks (they come from the heap and return to it when freed), the heap's
#: top kept up to 2 GiB when freed and grown by 64 MiB at a time
SETTINGS = ((_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, _INT_MAX), (_M_TOP_PAD, 64 << 20))


def _glibc():
    """The C library the running process is linked with, if it is glibc; else None (another system or C library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the symbols the process has loaded: its own C library's
        libc.gnu_get_libc_version  # noqa: B018  (glibc only)
    except (OSError, AttributeError):
        return None
    return libc


def keep_host_memory() -> bool:
    """Make glibc's ``malloc`` keep the memory programs free, so the next call of a program reuses it.

    On CPU devices every call of a compiled program (a transform, a solver step) allocates its outputs and
    temporaries from the host's ``malloc``. glibc's default returns large blocks to the operating system when they
    are freed, and the next call faults them in again page by page: at 256^3 on 8 CPU devices that costs about as
    much as the transform's own passes. After this call freed blocks stay in the process (its resident memory
    stays at the peak the programs reached) and the same computations return the same bits, faster. The effect of
    preloading tcmalloc (``LD_PRELOAD``), set from Python.

    Call it once, at the start of a program, before JAX's first computation: threads started afterwards (JAX's
    CPU devices) share one heap; called later, it still keeps freed memory, but the threads that already took a
    heap of their own keep it. It changes the whole process's ``malloc``: it is for programs that run
    transforms or simulations (a simulation script, a benchmark, a batch job), not for a library to call on
    import. Accelerators keep their own pool of device memory and do not need it.

    Returns:
      True if glibc accepted every setting; False where the C library is not glibc (macOS, musl-based Linux)
      or refused one, in which case nothing of the process changes beyond the settings it accepted.
    """
    libc = _glibc()
    if libc is None:
        return False
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    return all([libc.mallopt(param, value) == 1 for param, value in SETTINGS])
