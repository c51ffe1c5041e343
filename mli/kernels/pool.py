"""``mli_krn_{avepool,maxpool}_{chw,hwc}_*`` (csrc/src/kernels/mli_krn_pool.c):
the dispatchers, ``_generic`` and every shape-specialised variant, one
function per C function, made from the table mli/_variants_api.py; the
dispatchers' debug twins; and ``avepool_chw`` ... picking the kind from the
input's element type (fx8, fx16, and sa8 for hwc).

``in`` [C, H, W] (chw) or [H, W, C] (hwc); ``cfg`` an :class:`mli.PoolConfig`.
The output takes in's element type and parameters (frac bits, or sa8's
asym parameters)."""
from ..enums import ElementType
from ._base import kind_of, tensor_arg
from ._more import by_kind, export_family

__all__ = []
export_family(globals(), ("avepool_chw", "maxpool_chw", "avepool_hwc", "maxpool_hwc"))


def _kind(x, *args, **kw):
    tensor_arg("in", x, "pool")
    return "sa8" if x.el_type == ElementType.ASYM_I8 else kind_of(x)


for _n in ("avepool_chw", "maxpool_chw", "avepool_hwc", "maxpool_hwc"):
    globals()[_n] = by_kind(_n, globals(), _kind)
    __all__.append(_n)
