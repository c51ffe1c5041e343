"""``mli_krn_depthwise_conv2d_chw_*`` (dispatcher, ``_generic`` and every
shape-specialised variant) and ``mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_*``
(csrc/src/kernels/mli_krn_depthwise_conv2d.c, mli_krn_conv_sa8.c), one
function per C function, made from the table mli/_variants_api.py, the
dispatchers' debug twins, and ``depthwise_conv2d_chw`` picking the kind from
the element types.

Layouts: ``in`` [C, H, W], ``weights`` [C, 1, KH, KW], ``bias`` [C] -> out
[C, Ho, Wo] (chw); ``in`` [H, W, C], ``weights`` [1, KH, KW, OC] -> out
[Ho, Wo, OC] (hwcn, sa8)."""
from ._base import kind_of, tensor_arg
from ._more import by_kind, export_family

__all__ = []
export_family(globals(), ("depthwise_conv2d_chw", "depthwise_conv2d_hwcn"))


def _kind(x, weights, *args, **kw):
    return kind_of(tensor_arg("in", x, "depthwise_conv2d"), tensor_arg("weights", weights, "depthwise_conv2d"))


depthwise_conv2d_chw = by_kind("depthwise_conv2d_chw", globals(), _kind)
__all__ += ["depthwise_conv2d_chw"]
