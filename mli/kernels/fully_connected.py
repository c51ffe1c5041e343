"""``mli_krn_fully_connected_*`` (csrc/src/kernels/mli_krn_fully_connected.c)."""
from .. import _core
from ..enums import VARIANT
from ._base import export, kind_of, named, tensor_arg

__all__ = []


def _make(kind):
    fname = f"fully_connected_{kind}"
    fn = named(_core.fc_kernel(VARIANT[kind], fname), fname, __name__)
    fn.__doc__ = f"""``mli_krn_fully_connected_{kind}(in, weights, bias, out)``: y = W x + b.

    ``out_frac_bits`` (default: in's) is the output format the caller asks for.
    Raises the MliError subclass of the C status."""
    return fn


for _k in ("fx8", "fx16", "fx8w16d"):
    export(globals(), _make(_k))


def fully_connected(x, weights, bias, **kw):
    """:func:`fully_connected_fx8`/``_fx16``/``_fx8w16d`` picked from the element types."""
    tensor_arg("in", x, "fully_connected")
    tensor_arg("weights", weights, "fully_connected")
    return globals()["fully_connected_" + kind_of(x, weights)](x, weights, bias, **kw)


__all__ += ["fully_connected"]

# mli_krn_fully_connected_sa8_sa8_sa32 (the rest of MLI 1.1), made from mli/_variants_api.py:
# a new output gets the asym parameters out_zero_point, out_scale, out_scale_frac_bits
from ._more import export_family as _export_family  # noqa: E402

_export_family(globals(), ("fully_connected",))
