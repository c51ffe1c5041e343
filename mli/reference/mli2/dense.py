"""The multi-input dense block (SPEC_MLI2 section 7), ``fully_connected`` (section 8,
checks 13.2) and ``rnn_dense`` (section 9, checks 13.3)."""

import numpy as np

from .checks import (_bias_scale_ok, _check_quant, _check_reach, _check_tensor, _contig, _first, _inner1, _overlap,
                     _span)
from .codes import (BAD_FUNC_CFG, FX_8, INCOMPATEBLE_TENSORS, KIND_TYPES, OK, RELU_1, RELU_6, RELU_GEN,
                    RNN_MAX_INPUT, SA_8, SHAPE_MISMATCH, TYPE_MISMATCH)
from .fxmath import (add_sat, bias_preround, check_rounding, div_trunc, fcq, mult, ratio, req, rshr,
                     sat, shl, wrap)


# Section 7: the multi-input dense block.

def _is_sa_kind(kind):
    return kind.startswith("sa8")


def dense_part(kind, x, x_fmt, w, w_fmts, out_fmt, rounding, bias=None, bias_fmt=None):
    """One input of the section 7 block, requantised to the output format,
    for G independent weight sets at once (the gates of a cell).

    x (..., N) int64: leading axes are independent rows (the cells do every
    time step's input part in one call).  w (G, N, M) int64 and w_fmts its G
    formats, as for the element-wise steps (sa8: (0, scale, shift) of each
    gate).  The bias (G, M) goes into input 0's accumulator only, so it is
    passed with that input.  Returns the rounded parts, (G, ..., M)."""
    g = w.shape[0]

    def per_gate(a):                                      # (G, k) -> (G, 1, .., 1, k) against (G, ..., M)
        return a.reshape((g,) + (1,) * (x.ndim - 1) + a.shape[1:])

    dot = np.matmul(x, w)                                 # exact in int64 for these widths and sizes
    if _is_sa_kind(kind):
        acc = dot + (-x_fmt[0]) * per_gate(w.sum(axis=1))  # input zero point term
        if bias is not None:
            acc = acc + per_gate(bias_preround(bias))
        acc = wrap(acc, 32)                               # plain 32-bit additions [x86]
        r, shift = ratio(x_fmt[1], x_fmt[2], out_fmt[1], out_fmt[2], rounding)
        mults = [mult(r, shift, f[1], f[2]) for f in w_fmts]
        if len(set(mults)) == 1:                          # one multiplier for every gate
            m, sh = mults[0]
        else:
            m, sh = (per_gate(np.array(v, dtype=np.int64)[:, None]) for v in zip(*mults))
        return req(acc, m, sh, rounding)
    assert len(set(w_fmts)) == 1                          # FX: one frac_bits per tensor
    w_fmt = w_fmts[0]
    acc = dot
    if bias is not None:
        bs = x_fmt + w_fmt - bias_fmt                     # input 0's formats
        if kind == "fx16":
            acc = acc + per_gate(wrap(shl(bias, bs, 64), 32))   # shifted in 64 bits, truncated to 32 [x86]
        else:
            acc = acc + per_gate(shl(bias, bs, 32))
    sh = x_fmt + w_fmt - out_fmt
    if kind == "fx16":
        return rshr(acc, min(sh, 39), 64, rounding)
    return rshr(wrap(acc, 32), sh, 32, rounding)


def dense_sum(kind, parts, out_fmt):
    """Add the rounded parts with saturation, in input order from 0, then the final cast."""
    acc_bits = 64 if kind == "fx16" else 32
    res = np.zeros_like(parts[0])
    for part in parts:
        res = add_sat(res, part, acc_bits)
    if _is_sa_kind(kind):
        return sat(add_sat(sat(res, 16), out_fmt[0], 16), 8)
    return sat(res, 16)


def dense_block(kind, inputs, bias, bias_fmt, out_fmt, rounding):
    """Section 7 for one output vector: inputs is a list of (x, x_fmt, W, w_fmt).

    Returns the M outputs (int16 values for FX, int8 for sa8), before any
    activation.  Each input is rounded to the output format on its own."""
    parts = [dense_part(kind, x, x_fmt, w[None], [w_fmt], out_fmt, rounding,
                        *((bias[None], bias_fmt) if i == 0 else ()))[0]
             for i, (x, x_fmt, w, w_fmt) in enumerate(inputs)]
    return dense_sum(kind, parts, out_fmt)


# Section 8: fully_connected.

def _relu_limits(out, relu_type):
    """(lower, upper) of 10.4 from out's format and type."""
    lo, hi = (-128, 127) if out.el_type in (FX_8, SA_8) else (-32768, 32767)
    if out.is_sa():
        zero, scale, shift = out.sa()
    else:
        zero, scale, shift = 0, 1, int(out.frac_bits)
    if relu_type == RELU_GEN:
        return max(zero, lo), hi
    if relu_type == RELU_6:
        if 0 <= shift < 28:
            six = div_trunc(6 << shift, scale)
        elif shift >= 28:
            six = hi
        elif -3 < shift < 0:
            six = div_trunc(6 >> -shift, scale)
        else:
            six = 0
        return max(zero, lo), min(six + zero, hi)
    if relu_type == RELU_1:
        if 0 <= shift < 30:
            one = div_trunc(1 << shift, scale)
        elif shift >= 30:
            one = hi
        else:
            one = 0
        return max(-one + zero, lo), min(one + zero, hi)
    return lo, hi


def _check_fc(kind, inp, weights, bias, cfg, out, rounding):
    """13.2."""
    sa = _is_sa_kind(kind)
    if not sa:
        if (inp.el_type, weights.el_type, bias.el_type) != KIND_TYPES[kind]:
            return TYPE_MISMATCH
        if bias.frac_bits > inp.frac_bits + weights.frac_bits:
            return INCOMPATEBLE_TENSORS
        if out.frac_bits > inp.frac_bits + weights.frac_bits:
            return INCOMPATEBLE_TENSORS
    st = _first(_check_tensor(t) for t in (inp, weights, bias, out))
    if st:
        return st
    if out.el_type != inp.el_type:
        return TYPE_MISMATCH
    if cfg is None:
        return BAD_FUNC_CFG
    if (weights.rank != 2 or bias.rank != 1 or out.rank != 1 or inp.count() != weights.shape[0]
            or bias.shape[0] != weights.shape[1] or out.shape[0] != weights.shape[1]):
        return SHAPE_MISMATCH
    if not _contig(inp) or not _inner1(weights) or not _contig(bias) or out.mem_stride[0] != 1:
        return INCOMPATEBLE_TENSORS
    if _overlap(inp, out):
        return INCOMPATEBLE_TENSORS
    if not sa:
        return OK
    if (inp.el_type, weights.el_type, bias.el_type) != KIND_TYPES[kind]:
        return TYPE_MISMATCH
    st = _first(_check_quant(t, data) for t, data in
                ((inp, True), (out, True), (weights, False), (bias, False)))
    if st:
        return st
    if ((not weights.per_axis() and bias.per_axis())
            or (weights.per_axis() and (weights.sa_dim != 1 or bias.sa_dim != 0))):
        return INCOMPATEBLE_TENSORS
    if inp.per_axis() or out.per_axis():
        return INCOMPATEBLE_TENSORS
    if not _bias_scale_ok(inp, weights, bias, rounding):
        return INCOMPATEBLE_TENSORS
    return OK


def fully_connected(kind, inp, weights, bias, cfg, out, rounding="convergent"):
    """``mli_krn_fully_connected_<kind>(in, weights, bias, cfg, out)``.

    kind: "fx16", "fx16_fx8_fx8", "fx8", "sa8_sa8_sa32" or
    "sa8_sa8_sa32_ext_bias".  Writes out's M elements only."""
    check_rounding(rounding)
    if kind not in KIND_TYPES:
        raise ValueError(f"unknown fully_connected kind {kind!r}")
    st = _check_fc(kind, inp, weights, bias, cfg, out, rounding)
    if st:
        return st
    _check_reach("fully_connected", (inp, weights.shape[0]), (weights, _span(weights)), (bias, _span(bias)),
                 (out, out.shape[0]))
    x = inp.read().reshape(-1)
    w = weights.read()                                    # (N, M)
    b = bias.read()
    n_out = w.shape[1]
    if _is_sa_kind(kind):
        zp_in = 0 if kind.endswith("ext_bias") else inp.sa()[0]   # ext_bias: folded into the bias
        acc = wrap(x @ w + (-zp_in) * w.sum(axis=0), 32)
        acc = add_sat(acc, bias_preround(b), 32)          # bias last, saturating
        _, s_in, f_in = inp.sa()
        zp_out, s_out, f_out = out.sa()
        r, shift = ratio(s_in, f_in, s_out, f_out, rounding)
        mults = [mult(r, shift, *weights.sa(o)[1:]) for o in range(n_out)]
        m = np.array([v[0] for v in mults], dtype=np.int64)
        sh = np.array([v[1] for v in mults], dtype=np.int64)
        y = sat(add_sat(fcq(acc, m, sh, rounding), zp_out, 16), 8)
    else:
        bits = 64 if kind == "fx16" else 32
        bs = inp.frac_bits + weights.frac_bits - bias.frac_bits
        bias_term = wrap(shl(b, bs, 64), 32) if kind == "fx16" else shl(b, bs, 32)
        acc = add_sat(wrap(x @ w, bits), bias_term, bits)
        y = rshr(acc, inp.frac_bits + weights.frac_bits - out.frac_bits, bits, rounding)
        y = sat(y, 8 if kind == "fx8" else 16)
    lo, hi = _relu_limits(out, cfg.relu_type)
    out.write(np.clip(y, lo, hi))
    return OK


# Section 9: rnn_dense.

def _check_rnn_dense(kind, ins, weights, bias, cfg, out, rounding):
    """13.3."""
    if cfg is None or not 1 <= cfg.inputs_num <= RNN_MAX_INPUT:
        return BAD_FUNC_CFG
    n = cfg.inputs_num
    for i in range(n):
        st = _check_tensor(ins[i]) or _check_tensor(weights[i])
        if st:
            return st
        w = weights[i]
        if w.rank != 2 or ins[i].count() != w.shape[0] or w.shape[1] != weights[0].shape[1]:
            return SHAPE_MISMATCH
        if not _contig(ins[i]) or not _inner1(w):
            return INCOMPATEBLE_TENSORS
        if out is None:
            raise ValueError("rnn_dense with a NULL out: MLI dereferences it (SPEC 13.3)")
        if out.buf is not None and _overlap(ins[i], out):
            return INCOMPATEBLE_TENSORS
    st = _check_tensor(bias)
    if st:
        return st
    if bias.rank != 1 or bias.shape[0] != weights[0].shape[1]:
        return SHAPE_MISMATCH
    st = _check_tensor(out)
    if st:
        return st
    if out.rank != 1 or out.shape[0] != bias.shape[0]:
        return SHAPE_MISMATCH
    if out.el_type != ins[0].el_type:
        return TYPE_MISMATCH
    if not _inner1(bias) or not _contig(out):
        return INCOMPATEBLE_TENSORS
    d_type, w_type, b_type = KIND_TYPES[kind]
    if (any(ins[i].el_type != d_type for i in range(n))
            or any(weights[i].el_type != w_type for i in range(n)) or bias.el_type != b_type):
        return TYPE_MISMATCH
    if not _is_sa_kind(kind):
        if any(out.frac_bits > ins[i].frac_bits + weights[i].frac_bits for i in range(n)):
            return INCOMPATEBLE_TENSORS
        if bias.frac_bits > ins[0].frac_bits + weights[0].frac_bits:
            return INCOMPATEBLE_TENSORS
        return OK
    order = [(t, data) for i in range(n) for t, data in ((ins[i], True), (weights[i], False))]
    st = _first(_check_quant(t, data) for t, data in order + [(out, True), (bias, False)])
    if st:
        return st
    if any(t.per_axis() for t in (*ins[:n], *weights[:n], out, bias)):
        return INCOMPATEBLE_TENSORS
    if not _bias_scale_ok(ins[0], weights[0], bias, rounding):
        return INCOMPATEBLE_TENSORS
    return OK


def rnn_dense(kind, ins, weights, bias, cfg, out, rounding="convergent"):
    """``mli_krn_rnn_dense_<kind>(in[], weights[], bias, cfg, out)``.

    ins, weights: sequences of up to 4 tensors (None entries = NULL)."""
    check_rounding(rounding)
    ins = list(ins) + [None] * (RNN_MAX_INPUT - len(ins))
    weights = list(weights) + [None] * (RNN_MAX_INPUT - len(weights))
    st = _check_rnn_dense(kind, ins, weights, bias, cfg, out, rounding)
    if st:
        return st
    _check_reach("rnn_dense", *[(t, e) for i in range(cfg.inputs_num)
                                for t, e in ((ins[i], weights[i].shape[0]), (weights[i], _span(weights[i])))],
                 (bias, _span(bias)), (out, out.shape[0]))
    parts = [(ins[i].read().reshape(-1), ins[i].fmt(), weights[i].read(), weights[i].fmt())
             for i in range(cfg.inputs_num)]
    y = dense_block(kind, parts, bias.read(), bias.fmt(), out.fmt(), rounding)
    out.write(y)
    return OK
