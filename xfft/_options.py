"""Lowering options: how a plan becomes a program on a given kind of device, as one frozen value.

The plan (which all-to-alls, which local transforms) is the same on every device; how its steps are lowered is
not. On CPU devices a transpose that changes the minor-most axis costs more than a small matrix product, and
XLA's CPU backend stacks received chunks in a strided pass that a transpose on the sending side avoids; on
accelerators the FFT library and a transpose (a memory-bound copy) are the faster route. :class:`LoweringOptions`
holds these choices. The native backend takes one (``xfft.backends.native.NativeBackend(lowering=...)``) and
otherwise uses :meth:`LoweringOptions.for_platform` of the array's devices; the options are passed to
:func:`xfft._lower.lower_plan` and are part of the key under which lowered programs are cached, so two choices
never share a program.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

#: platforms whose defaults are the CPU lowering; every other platform (``"gpu"``, ``"cuda"``, ``"rocm"``,
#: ``"tpu"``) gets the accelerator lowering
_CPU_PLATFORMS = ("cpu",)


@dataclass(frozen=True)
class LoweringOptions:
    """How the native backend lowers a transform's plan to local operations (a frozen, hashable value).

    Both choices give the same numbers (to round-off for ``matrix_dft``, to the bit for ``send_transposed``) and
    the same all-to-alls; they differ in the local passes around them. The defaults of a platform come from
    :meth:`for_platform`; build one to compare lowerings side by side::

        from xfft.backends.native import NativeBackend

        accel = NativeBackend(lowering=xfft.LoweringOptions(matrix_dft=False, send_transposed=False))
        k = xfft.xfft3d(x, backend=accel)

    Attributes:
      matrix_dft: a natural-order forward transform runs its last stage in natural axis order, each axis that is
        not minor-most transformed where it lies by matrix products of its factors (the first stage of an
        inverse from natural order likewise), so natural order costs no transpose of its own. False: an FFT op
        after a transpose and a transpose back, as on accelerators.
      send_transposed: an all-to-all that a transpose follows runs as one step that transposes on the sending
        side (each destination chunk in the output's axis order, then contiguous chunks exchanged). False: the
        exchange, then the transpose, left for XLA to place.

    Raises:
      TypeError: an attribute is not a bool.
    """

    matrix_dft: bool = False
    send_transposed: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, bool):
                raise TypeError(f"LoweringOptions: {f.name} must be a bool, got {type(value).__name__}")

    @classmethod
    def for_platform(cls, platform: str) -> LoweringOptions:
        """The default options for devices of ``platform`` (``jax.Device.platform``: ``"cpu"``, ``"gpu"``, ...).

        Args:
          platform: the platform name.

        Returns:
          On ``"cpu"`` both choices on (``matrix_dft`` and ``send_transposed``: fewer strided passes where
          memory traffic of the host's cores is the cost); elsewhere both off (the FFT library and XLA's
          transposes).

        Raises:
          TypeError: ``platform`` is not a string.
        """
        if not isinstance(platform, str):
            raise TypeError(f"LoweringOptions.for_platform: platform must be a string, got {type(platform).__name__}")
        on_cpu = platform.lower() in _CPU_PLATFORMS
        return cls(matrix_dft=on_cpu, send_transposed=on_cpu)
