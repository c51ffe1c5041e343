"""``lstm_cell`` (SPEC_MLI2 section 11)."""

from .cells import _check_cell, _check_cell_reach, _input_parts, _gate_weight_fmts, _set_cell_out_meta, _step_input_part
from .codes import OK, RNN_ACT_NONE, RNN_ACT_TANH, RNN_OUT_ALL
from .dense import _is_sa_kind, dense_part, dense_sum
from .eltwise import elt_add, elt_mul
from .fxmath import check_rounding
from .transform import SA_SIGM_OUT, SA_TANH_OUT, activation


def lstm_cell(kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out,
              rounding="convergent"):
    """``mli_krn_lstm_cell_<kind>``; kind "fx16", "fx16_fx8_fx8" or "sa8_sa8_sa32".

    Updates `cell` in place, writes the outputs and rewrites out's rank,
    shape[0..1] and mem_stride[0..1]."""
    check_rounding(rounding)
    st = _check_cell("lstm_cell", kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut,
                     sigm_lut, cfg, cell, out, rounding)
    if st:
        return st
    _check_cell_reach("lstm_cell", inp, prev_out, weights_in, weights_out, bias, cfg, cell, out)
    x_all, h, c = inp.read(), prev_out.read(), cell.read()
    t_len, m = x_all.shape[0], h.shape[0]
    x_fmt, h_fmt, c_fmt, out_fmt = inp.fmt(), prev_out.fmt(), cell.fmt(), out.fmt()
    if _is_sa_kind(kind):
        ir_fmt = (0, 1, 4)                                # +-7.94 in steps of 1/16
        sig_fmt, tanh_fmt = SA_SIGM_OUT, SA_TANH_OUT
    else:
        ir_fmt = min(10, inp.frac_bits + weights_in.frac_bits)
        sig_fmt = tanh_fmt = 15
    _set_cell_out_meta(out, t_len if cfg.results == RNN_OUT_ALL else 1, m)
    aliased = out.buf is inp.buf
    if not aliased:
        x_parts = _input_parts(kind, x_all, x_fmt, weights_in, bias, ir_fmt, cfg.direction, rounding, False)
    w_out, w_out_fmts = weights_out.read(), _gate_weight_fmts(weights_out, range(4))
    for step in range(t_len):
        x_part = (_step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, cfg.direction, step, rounding, False,
                                   range(4)) if aliased else x_parts[:, step])
        h_parts = dense_part(kind, h, h_fmt, w_out, w_out_fmts, ir_fmt, rounding)
        d = dense_sum(kind, [x_part, h_parts], ir_fmt)   # (4, M): gates i, g, f, o
        sig = activation("sigm", d, ir_fmt, sigm_lut, rounding)  # row 1 unused: g takes tanh
        gi, gf, go = sig[0], sig[2], sig[3]
        gg = activation("tanh", d[1], ir_fmt, tanh_lut, rounding)
        c = elt_mul(c, c_fmt, gf, sig_fmt, c_fmt, rounding)
        gg = elt_mul(gg, tanh_fmt, gi, sig_fmt, tanh_fmt, rounding)
        c = elt_add(c, c_fmt, gg, tanh_fmt, c_fmt, rounding)
        if cfg.act == RNN_ACT_NONE:
            y = elt_mul(c, c_fmt, go, sig_fmt, out_fmt, rounding)
        else:
            func, lut, a_fmt = (("tanh", tanh_lut, tanh_fmt) if cfg.act == RNN_ACT_TANH
                                else ("sigm", sigm_lut, sig_fmt))
            a = activation(func, c, c_fmt, lut, rounding)
            y = elt_mul(a, a_fmt, go, sig_fmt, out_fmt, rounding)
        out.write(y, (step if cfg.results == RNN_OUT_ALL else 0) * m)
        h, h_fmt = y, out_fmt                             # later steps read h in out's format
    cell.write(c)
    return OK
