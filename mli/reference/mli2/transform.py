"""``tanh`` and ``sigm`` (SPEC_MLI2 section 5, checks 13.5), and the activation the
cells use."""

import numpy as np

from .checks import _check_quant, _check_reach, _check_tensor, _inner1, _span
from .codes import FX_8, FX_16, INCOMPATEBLE_TENSORS, OK, SA_8, SHAPE_MISMATCH, TYPE_MISMATCH
from .fxmath import _arr, check_rounding, rshr, sat, wrap
from .lut import lut_lookup
from .tensor import _offsets


# Section 5: tanh and sigm.

#: sa8 output parameters of the two kernels (5.2).
SA_TANH_OUT = (0, 1, 7)
SA_SIGM_OUT = (-128, 1, 8)


def activation(func, x, fmt, lut, rounding):
    """The transfer of a kernel of function `func` on values x of format `fmt`.

    FX (fmt = frac bits): the Q15 lookup.  sa8 (fmt = triple): 5.2's sa8 path,
    output in the parameters of `func` whatever table `lut` holds."""
    if not isinstance(fmt, tuple):
        return lut_lookup(x, fmt, lut, rounding)
    zp, s, f = fmt
    big_f = 8 + lut.in_frac_bits                          # 13 (tanh table) or 12 (sigm table)
    v = wrap(_arr(x) - zp, 16) * s
    r = lut_lookup(rshr(v, f - big_f, 32, rounding), big_f, lut, rounding)
    if func == "tanh":
        return sat(rshr(r, 8, 32, rounding), 8)
    return sat(rshr(r, 7, 32, rounding) - 128, 8)


def _check_transfer(kind, inp, out):
    """13.5."""
    st = _check_tensor(inp) or _check_tensor(out)
    if st:
        return st
    if out.el_type != inp.el_type:
        return TYPE_MISMATCH
    if inp.rank != out.rank or inp.dims() != out.dims():
        return SHAPE_MISMATCH
    if not _inner1(inp) or not _inner1(out):
        return INCOMPATEBLE_TENSORS
    if inp.el_type != {"fx8": FX_8, "fx16": FX_16, "sa8": SA_8}[kind]:
        return TYPE_MISMATCH
    if kind == "sa8":
        st = _check_quant(inp, True)
        if st:
            return st
        if inp.per_axis():
            return INCOMPATEBLE_TENSORS
    return OK


def _transfer(func, kind, inp, lut, out, rounding):
    check_rounding(rounding)
    st = _check_transfer(kind, inp, out)
    if st:
        return st
    if inp.rank == 0:
        raise ValueError("rank-0 tanh/sigm: MLI uses the stored value as an address (SPEC 3.4)")
    _check_reach(func, (inp, _span(inp)), (out, _span(out)))

    def transfer(x):
        if kind == "sa8":
            return activation(func, x, inp.sa(), lut, rounding).reshape(x.shape)
        y = lut_lookup(x, int(inp.frac_bits), lut, rounding).reshape(x.shape)
        return sat(rshr(y, 8, 16, rounding), 8).reshape(x.shape) if kind == "fx8" else y

    x = inp.read()
    y = transfer(x)
    src, dst = _offsets(inp.dims(), inp.strides()).reshape(-1), _offsets(out.dims(), out.strides()).reshape(-1)
    if out.buf is inp.buf and not np.array_equal(src, dst):
        # In place with other strides: element by element in logical order, MLI reads
        # element i after writing elements 0..i-1, which may have overwritten it.
        # writer[i]: the last k < i whose output lands on input i (-1: none).  The
        # system is triangular, so iterating to a fixed point gives the one answer.
        last = {}
        writer = np.full(src.size, -1)
        for i in range(src.size):
            writer[i] = last.get(int(src[i]), -1)
            last[int(dst[i])] = i
        x, y = x.reshape(-1), y.reshape(-1)
        hit = writer >= 0
        for _ in range(src.size):
            y_next = transfer(np.where(hit, y[writer], x))
            if np.array_equal(y_next, y):
                break
            y = y_next
    out.buf.view(out.el_type)[dst] = y.reshape(-1)
    if kind == "sa8":
        zp, s, f = SA_TANH_OUT if func == "tanh" else SA_SIGM_OUT
        out.sa_dim, out.zero_point, out.scale, out.scale_frac_bits = -1, [zp], [s], [f]
    else:
        out.frac_bits = 15 if kind == "fx16" else 7
    return OK


def tanh(kind, inp, lut, out, rounding="convergent"):
    """``mli_krn_tanh_<kind>(in, lut, out)``; kind "fx8", "fx16" or "sa8"."""
    return _transfer("tanh", kind, inp, lut, out, rounding)


def sigm(kind, inp, lut, out, rounding="convergent"):
    """``mli_krn_sigm_<kind>(in, lut, out)``."""
    return _transfer("sigm", kind, inp, lut, out, rounding)
