"""``mli_krn_conv2d_chw_*`` (dispatcher, ``_generic`` and every shape-specialised
variant), ``mli_krn_conv2d_hwc_*`` and ``mli_krn_conv2d_nhwc_sa8_sa8_sa32_*``
(csrc/src/kernels/mli_krn_conv2d.c, mli_krn_conv_sa8.c), one function per C
function, made from the table mli/_variants_api.py; their dispatchers' debug
twins (``debug_conv2d_chw_fx8`` ...: the C name of the variant the dispatcher
would call); and ``conv2d_chw`` / ``conv2d_hwc`` picking fx8 / fx16 / fx8w16d
from the element types.

Layouts: ``in`` [C, H, W], ``weights`` [OC, C, KH, KW], ``bias`` [OC] ->
out [OC, Ho, Wo] (chw); ``in`` [H, W, C], ``weights`` [OC, KH, KW, C] ->
out [Ho, Wo, OC] (hwc, nhwc).  ``cfg`` is an :class:`mli.Conv2dConfig`.  The
output (new, or the caller's ``out``) gets ``out_frac_bits`` (default in's),
the format MLI reads from ``out`` (as ``fully_connected``); a new sa8 output
gets the asym parameters ``out_zero_point``, ``out_scale``,
``out_scale_frac_bits`` (a caller's ``out`` keeps its own)."""
from ._base import kind_of, tensor_arg
from ._more import by_kind, export_family

__all__ = []
export_family(globals(), ("conv2d_chw", "conv2d_hwc", "conv2d_nhwc"))


def _kind(x, weights, *args, **kw):
    return kind_of(tensor_arg("in", x, "conv2d"), tensor_arg("weights", weights, "conv2d"))


conv2d_chw = by_kind("conv2d_chw", globals(), _kind)
conv2d_hwc = by_kind("conv2d_hwc", globals(), _kind)
__all__ += ["conv2d_chw", "conv2d_hwc"]
