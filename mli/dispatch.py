"""Which instruction-set path the C core's dot products and lookup tables
use: ``scalar`` (the definition), ``avx2`` or ``avx512_vnni``.  Chosen at
import from the CPU; the environment variable ``MLIPY_ISA`` forces one the
CPU supports.  Every path computes the same integers."""
import os

from . import _core

ISAS = ("scalar", "avx2", "avx512_vnni")


def isa():
    """The name of the path in use."""
    return ISAS[_core.get_isa()]


def supported_isas():
    """The paths this CPU can run, slowest first."""
    return [name for i, name in enumerate(ISAS) if _core.isa_supported(i)]


def set_isa(name=None):
    """Use path `name` (None: the best the CPU supports).  Raises ValueError
    for an unknown name or a path the CPU lacks."""
    if name is None:
        _core.set_isa(-1)
        return isa()
    if name not in ISAS:
        raise ValueError(f"isa: expected one of {ISAS}, got {name!r}")
    if _core.set_isa(ISAS.index(name)) < 0:
        raise ValueError(f"isa: this CPU does not support {name!r} (supported: {supported_isas()})")
    return name


class use_isa:
    """Use path `name` (None: the best the CPU supports) from now on, like
    :func:`set_isa`; used as a context manager (``with mli.use_isa("scalar"):``)
    it restores the previous path at the end of the block."""

    def __init__(self, name=None):
        self.previous = isa()
        set_isa(name)

    def __enter__(self):
        return isa()

    def __exit__(self, *exc):
        set_isa(self.previous)
        return False


# MLIPY_ISA is read by the C core, which ignores a name it does not know:
# a typo must not silently leave the default path in use.
_env = os.environ.get("MLIPY_ISA", "").strip()
if _env and _env not in ISAS:
    raise ImportError(f"MLIPY_ISA={_env!r}: unknown path (use one of {', '.join(ISAS)}, or unset it)")
if _env and not _core.isa_supported(ISAS.index(_env)):
    raise ImportError(f"MLIPY_ISA={_env!r}: this CPU does not support it (supported: {', '.join(supported_isas())})")
