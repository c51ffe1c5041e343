"""``gru_cell`` (SPEC_MLI2 section 12)."""

from .cells import _check_cell, _check_cell_reach, _input_parts, _gate_weight_fmts, _set_cell_out_meta, _step_input_part
from .codes import OK, RNN_OUT_ALL
from .dense import _is_sa_kind, dense_part, dense_sum
from .eltwise import elt_add, elt_mul
from .fxmath import check_rounding
from .transform import SA_SIGM_OUT, SA_TANH_OUT, activation


def gru_cell(kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, out,
             rounding="convergent"):
    """``mli_krn_gru_cell_<kind>``: gates z, r, n; h' = z*h + (1 - z)*n."""
    check_rounding(rounding)
    st = _check_cell("gru_cell", kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut,
                     sigm_lut, cfg, None, out, rounding)
    if st:
        return st
    _check_cell_reach("gru_cell", inp, prev_out, weights_in, weights_out, bias, cfg, None, out)
    x_all, h = inp.read(), prev_out.read()
    t_len, m = x_all.shape[0], h.shape[0]
    x_fmt, h_fmt, out_fmt = inp.fmt(), prev_out.fmt(), out.fmt()
    if _is_sa_kind(kind):
        ir_fmt = (0, 21, 9)                               # about +-5.2
        sig_fmt, tanh_fmt = SA_SIGM_OUT, SA_TANH_OUT
        one = 127                                         # 255/256 in the sigmoid format
    else:
        ir_fmt = min(11, inp.frac_bits + weights_in.frac_bits)
        sig_fmt = tanh_fmt = 15
        one = 32767                                       # the largest Q15 value, not 1
    _set_cell_out_meta(out, t_len if cfg.results == RNN_OUT_ALL else 1, m)
    aliased = out.buf is inp.buf
    if not aliased:
        x_parts = _input_parts(kind, x_all, x_fmt, weights_in, bias, ir_fmt, cfg.direction, rounding, True)
    w_out = weights_out.read()
    zr_fmts = _gate_weight_fmts(weights_out, (0, 1), gru=True)
    n_fmts = _gate_weight_fmts(weights_out, (2,), gru=True)
    for step in range(t_len):
        at = (step if cfg.results == RNN_OUT_ALL else 0) * m
        x_zr = (_step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, cfg.direction, step, rounding, True,
                                 (0, 1)) if aliased else x_parts[:2, step])
        zr = dense_sum(kind, [x_zr, dense_part(kind, h, h_fmt, w_out[:2], zr_fmts, ir_fmt, rounding)], ir_fmt)
        z, r = activation("sigm", zr, ir_fmt, sigm_lut, rounding)
        rh = elt_mul(r, sig_fmt, h, h_fmt, h_fmt, rounding)   # reset applied to h before W_hn
        zh = elt_mul(h, h_fmt, z, sig_fmt, h_fmt, rounding)
        zc = elt_add(one, sig_fmt, z, sig_fmt, sig_fmt, rounding, sub=True)
        if aliased:      # MLI keeps z*h in the step's output row, then reads the input for the new gate
            out.write(zh, at)
        x_n = (_step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, cfg.direction, step, rounding, True,
                                (2,)) if aliased else x_parts[2:, step])
        dn = dense_sum(kind, [x_n,
                              dense_part(kind, rh, h_fmt, w_out[2:], n_fmts, ir_fmt, rounding)], ir_fmt)
        n = activation("tanh", dn[0], ir_fmt, tanh_lut, rounding)
        y = elt_add(elt_mul(n, tanh_fmt, zc, sig_fmt, out_fmt, rounding), out_fmt,
                    zh, h_fmt, out_fmt, rounding)
        out.write(y, at)
        h, h_fmt = y, out_fmt
    return OK
