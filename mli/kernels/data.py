"""``mli_krn_permute_*``, ``mli_krn_concat_*``, ``mli_krn_padding2d_{chw,hwc}_*``
(csrc/src/kernels/mli_krn_data.c), fx8 / fx16, made from the table
mli/_variants_api.py, and the forms picking the kind from the input.

* ``permute_<kind>(x, cfg)``: :class:`mli.PermuteConfig`; output dim k is
  input dim ``perm_dim[k]``.
* ``concat_<kind>(inputs, cfg=None)``: a list of tensors joined along
  ``cfg.axis`` (:class:`mli.ConcatConfig`; ``tensors_num`` defaults to the
  number of inputs).
* ``padding2d_chw_<kind>(x, cfg)`` / ``_hwc_``: zero padding of a rank-3
  feature map (:class:`mli.Padding2dConfig`)."""
from ._base import kind_of, tensor_arg
from ._more import by_kind, export_family

__all__ = []
export_family(globals(), ("permute", "concat", "padding2d_chw", "padding2d_hwc"))


def _kind(x, *args, **kw):
    return kind_of(tensor_arg("in", x, "data"))


def _concat_kind(inputs, *args, **kw):
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("concat: inputs must be a non-empty list or tuple of mli.Tensor")
    return kind_of(tensor_arg("inputs[0]", inputs[0], "concat"))


for _n in ("permute", "padding2d_chw", "padding2d_hwc"):
    globals()[_n] = by_kind(_n, globals(), _kind)
    __all__.append(_n)
concat = by_kind("concat", globals(), _concat_kind)
__all__.append("concat")
