"""``mli_krn_tanh_*``, ``mli_krn_sigm_*``, ``mli_krn_relu_*``, ``mli_krn_leaky_relu_*``,
``mli_krn_softmax_*``: the element-wise transforms (csrc/src/kernels/mli_krn_transform.c).

``leaky_relu_<kind>(x, slope)``: ``slope`` is MLI's ``slope_coeff``, a rank-0
tensor (``mli.Tensor(np.int8(102), 9)``, its value kept in the data field)
or a one-element tensor of in's element type; the output keeps in's format.
``softmax_<kind>(x)``: output frac bits 15 (fx16) or 7 (fx8).  Both may run
in place (``out=x``)."""
import numpy as np

from .. import _core
from .._status import Status, error
from ..enums import VARIANT, ReluType, parse_enum
from ._base import by_data, export, named, tensor_arg

__all__ = []
_unary = _core.unary_api


def _make_lut(op, kind):
    fname = f"{op}_{kind}"
    code = ("tanh", "sigm").index(op)
    fn = named(_core.unary_kernel(code, VARIANT[kind], fname), fname, __name__)
    fn.__doc__ = f"""``mli_krn_{op}_{kind}(in, out)``: {op} by MLI's Q15 lookup table with
    linear interpolation; output frac bits {15 if kind == 'fx16' else 7}.  ``out`` may be ``x`` (in place)."""
    return fn


def _make_relu(kind):
    variant = VARIANT[kind]
    fname = f"relu_{kind}"

    def fn(x, relu_type=ReluType.GEN, *, out=None):
        tensor_arg("in", x, fname)
        if isinstance(relu_type, str):  # a name: "gen", "relu_6", "MLI_RELU_1"
            try:
                relu_type = parse_enum(relu_type, ReluType, ("MLI_RELU_",))
            except ValueError as e:
                raise error(Status.BAD_FUNC_CFG, "mli_krn_" + fname, "cfg", "type", str(e)) from None
        elif isinstance(relu_type, bool) or not isinstance(relu_type, (int, np.integer)):
            raise TypeError(f"{fname}: relu_type must be an mli.ReluType, an int or a name, "
                            f"got {type(relu_type).__name__}")
        rt = int(relu_type)
        if not -2 ** 31 <= rt < 2 ** 31:
            raise error(Status.BAD_FUNC_CFG, "mli_krn_" + fname, "cfg", "type",
                        f"must be an mli_relu_type (an int32), got {rt}")
        return _unary(2, variant, fname, x, out, rt)

    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"``mli_krn_relu_{kind}(in, cfg, out)`` with ``cfg.type = relu_type`` (:class:`mli.ReluType`)."
    return fn


for _k in ("fx8", "fx16"):
    export(globals(), _make_lut("tanh", _k))
    export(globals(), _make_lut("sigm", _k))
    export(globals(), _make_relu(_k))
for _n in ("tanh", "sigm", "relu"):
    export(globals(), by_data(_n, globals()))


# leaky ReLU and softmax (the rest of MLI 1.1): made from mli/_variants_api.py
from ._more import export_family as _export_family  # noqa: E402

_export_family(globals(), ("leaky_relu", "softmax"))
for _n in ("leaky_relu", "softmax"):
    export(globals(), by_data(_n, globals()))
