"""Which instruction-set path the C core's dot products and lookup tables
use: ``scalar`` (the definition), ``avx2`` or ``avx512_vnni``.  Chosen at
import from the CPU; the environment variable ``MLIPY_ISA`` forces one the
CPU supports.  Every path computes the same integers."""
import contextlib

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


@contextlib.contextmanager
def use_isa(name):
    """Context manager: run a block on path `name`, then restore."""
    old = isa()
    set_isa(name)
    try:
        yield
    finally:
        set_isa(old)
