"""JAX's persistent compilation cache for runs: a repeated run loads its programs instead of compiling them."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_MAX_SIZE", "cache_directory", "enable_compilation_cache"]

#: the default cap of the cache directory (JAX evicts the least recently used programs beyond it)
DEFAULT_MAX_SIZE = 2 << 30
#: programs that compile faster than this are not stored (they cost more to load than to compile)
MIN_COMPILE_SECONDS = 0.2


def cache_directory() -> Path:
    """``$XFFT_CACHE_DIR/jax``, else ``$XDG_CACHE_HOME/xfft/jax``, else ``~/.cache/xfft/jax``."""
    base = os.environ.get("XFFT_CACHE_DIR")
    if base:
        return Path(base) / "jax"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "xfft" / "jax"


def enable_compilation_cache(directory: str | os.PathLike | None = None,
                             max_size: int = DEFAULT_MAX_SIZE) -> Path | None:
    """Turn on JAX's persistent compilation cache, before the first compile (what ``python -m solvers run`` does).

    Settings a user made win: nothing changes where ``JAX_COMPILATION_CACHE_DIR`` (or ``jax_compilation_cache_dir``)
    is set already. Off switches: ``XFFT_COMPILATION_CACHE=0`` or ``JAX_ENABLE_COMPILATION_CACHE=false`` (and the
    command line's ``--no-compile-cache``).

    Args:
      directory: where the programs go (default :func:`cache_directory`).
      max_size: the cap in bytes (JAX evicts beyond it; the cap also makes JAX lock the directory, which
        concurrent runs need).

    Returns:
      The directory in use, or None where the cache stays off.
    """
    import jax

    if os.environ.get("XFFT_COMPILATION_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    if os.environ.get("JAX_ENABLE_COMPILATION_CACHE", "true").strip().lower() in ("0", "false", "no", "off"):
        return None
    current = jax.config.values.get("jax_compilation_cache_dir")
    if current:
        return Path(current)
    path = Path(directory) if directory is not None else cache_directory()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # an unwritable cache is no reason to fail a run
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    if jax.config.values.get("jax_compilation_cache_max_size", -1) in (-1, None):
        jax.config.update("jax_compilation_cache_max_size", int(max_size))
    return path
