"""``mli_krn_eltwise_{add,sub,mul,max,min}_*`` (csrc/src/kernels/mli_krn_eltwise.c)."""
from .. import _core
from ..enums import VARIANT
from ._base import by_data, export, named

__all__ = []
OPS = ("add", "sub", "mul", "max", "min")


def _make(op, kind):
    fname = f"eltwise_{op}_{kind}"
    code = _core.ELTWISE_OPS.index(op)
    fn = named(_core.eltwise_kernel(code, VARIANT[kind], fname), fname, __name__)
    fn.__doc__ = (f"``mli_krn_eltwise_{op}_{kind}(in1, in2, out)``; a one-element (or rank-0) operand "
                  "is broadcast." + (" ``out_frac_bits`` (default in1's) sets the product's format."
                                     if op == "mul" else " Both inputs need the same frac bits."))
    return fn


for _k in ("fx8", "fx16"):
    for _op in OPS:
        export(globals(), _make(_op, _k))
for _op in OPS:
    export(globals(), by_data(f"eltwise_{_op}", globals()))
