"""What the LSTM and GRU cells share (SPEC_MLI2 sections 11 and 12): their checks
(13.4), the gate weight formats, the input halves of the gates, the output metadata."""

from .checks import (_bias_scale_ok, _check_quant, _check_reach, _check_tensor, _contig, _first, _inner1,
                     _ranges_overlap, _span)
from .codes import (_EL_SIZE, BAD_FUNC_CFG, BAD_TENSOR, INCOMPATEBLE_TENSORS, KIND_TYPES, NOT_ENGH_MEM,
                    OK, RNN_DIR_BACKWARD, RNN_OUT_ALL, SHAPE_MISMATCH, TYPE_MISMATCH)
from .dense import _is_sa_kind, dense_part
from .fxmath import _i, wrap
from .lut import get_lut_size


# Sections 11 and 12: LSTM and GRU cells.

def _check_cell(kernel, kind, inp, prev_out, w_in, w_out, bias, tanh_lut, sigm_lut, cfg, cell, out,
                rounding):
    """13.4 (cell is None for GRU; `kernel` "lstm_cell" or "gru_cell")."""
    lstm = kernel == "lstm_cell"
    g = 4 if lstm else 3
    if tanh_lut.capacity < get_lut_size("tanh") or sigm_lut.capacity < get_lut_size("sigm"):
        return NOT_ENGH_MEM
    st = _check_tensor(inp) or _check_tensor(prev_out)
    if st:
        return st
    if inp.rank != 2 or prev_out.rank != 1:
        return SHAPE_MISMATCH
    if not _contig(inp) or not _inner1(prev_out):
        return INCOMPATEBLE_TENSORS
    if cfg is None:
        raise ValueError(f"{kernel} with a NULL cfg: MLI dereferences it (SPEC 13.4)")
    n, m = inp.shape[1], prev_out.count()
    t_out = inp.shape[0] if cfg.results == RNN_OUT_ALL else 1
    st = _check_tensor(w_in) or _check_tensor(w_out)
    if st:
        return st
    if (w_in.rank != 3 or w_out.rank != 3 or w_in.dims() != [g, n, m]
            or w_out.dims() != [g, m, m]):
        return SHAPE_MISMATCH
    if not _inner1(w_in) or not _inner1(w_out):
        return INCOMPATEBLE_TENSORS
    st = _check_tensor(bias)
    if st:
        return st
    if bias.rank != 2 or bias.dims() != [g, m]:
        return SHAPE_MISMATCH
    if lstm:
        st = _check_tensor(cell)
        if st:
            return st
        if cell.rank != 1 or cell.shape[0] != m:
            return SHAPE_MISMATCH
    st = _check_tensor(out)
    if st:
        return st
    if out.el_type != inp.el_type:
        return TYPE_MISMATCH
    # the size test uses out's element size in LSTM and in's in GRU
    # both sizes are 32-bit products (wrapping), compared unsigned
    if (t_out * m * _EL_SIZE.get((out if lstm else inp).el_type, 0)) % 2 ** 32 > out.capacity:
        return BAD_TENSOR
    if cfg.scratch_buf is None or cfg.scratch_capacity < (g * m * _EL_SIZE.get(inp.el_type, 0)) % 2 ** 32:
        return BAD_FUNC_CFG
    if (lstm and not _inner1(cell)) or not _inner1(bias) or not _contig(out):
        return INCOMPATEBLE_TENSORS
    if _ranges_overlap(inp.buf, inp.capacity, cfg.scratch_buf, cfg.scratch_capacity):
        return INCOMPATEBLE_TENSORS
    data = [inp, out, prev_out] + ([cell] if lstm else [])
    d_type, w_type, b_type = KIND_TYPES[kind]
    if (any(t.el_type != d_type for t in data) or w_in.el_type != w_type
            or w_out.el_type != w_type or bias.el_type != b_type):
        return TYPE_MISMATCH
    if not _is_sa_kind(kind):
        if bias.frac_bits > inp.frac_bits + w_in.frac_bits:
            return INCOMPATEBLE_TENSORS
        return OK
    if (any(t.per_axis() for t in data)
            or (not w_in.per_axis() and (w_out.per_axis() or bias.per_axis()))
            or (w_in.per_axis() and (w_in.sa_dim != 0 or w_out.sa_dim != 0 or bias.sa_dim != 0))):
        return INCOMPATEBLE_TENSORS
    st = _first(_check_quant(t, is_data) for t, is_data in
               [(t, True) for t in data] + [(t, False) for t in (w_in, w_out, bias)])
    if st:
        return st
    if not _bias_scale_ok(inp, w_in, bias, rounding):
        return INCOMPATEBLE_TENSORS
    return OK


def _check_cell_reach(kernel, inp, prev_out, w_in, w_out, bias, cfg, cell, out):
    m = prev_out.count()
    t_out = inp.shape[0] if cfg.results == RNN_OUT_ALL else 1
    pairs = [(inp, _span(inp)), (prev_out, m), (w_in, _span(w_in)), (w_out, _span(w_out)), (bias, _span(bias)),
             (out, t_out * m)] + ([(cell, m)] if cell is not None else [])
    _check_reach(kernel, *pairs)
    if cfg.scratch_capacity < (4 if cell is not None else 3) * m * _EL_SIZE.get(inp.el_type, 0):
        raise ValueError(f"{kernel}: a scratch below gates * M elements passes MLI's 32-bit size check "
                         "(it would write outside the buffer)")


def _gate_weight_fmt(w, gate, gru_new_gate=False):
    """The format of weights `w` for `gate`: FX frac bits or (0, scale, shift).

    GRU quirk (12.4): with per-tensor sa8 weights the new gate reads scale + 4
    (16-bit wrap) and scale_frac_bits + 2 (8-bit wrap)."""
    if not w.is_sa():
        return int(w.frac_bits)
    _, s, f = w.sa(gate)
    if gru_new_gate and not w.per_axis():
        s = _i(wrap(s + 4, 16))
        f = _i(wrap(f + 2, 8))
    return 0, s, f


def _gate_weight_fmts(w, gates, gru=False):
    """The formats of weights `w` for each of `gates` (see _gate_weight_fmt)."""
    return [_gate_weight_fmt(w, g, gru and g == 2) for g in gates]


def _input_parts(kind, x_all, x_fmt, weights_in, bias, ir_fmt, direction, rounding, gru):
    """The input half of every gate's dense block, for all steps at once.

    It does not depend on h, and each input of a dense block is rounded on
    its own (section 7), so rounding all rows together is exact.  Returns a
    (G, T, M) array in processing order (BACKWARD reads row T-1 first)."""
    if direction == RNN_DIR_BACKWARD:
        x_all = x_all[::-1]
    gates = range(weights_in.shape[0])
    return dense_part(kind, x_all, x_fmt, weights_in.read(), _gate_weight_fmts(weights_in, gates, gru),
                      ir_fmt, rounding, bias.read(), bias.shift())


def _step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, direction, step, rounding, gru, gates):
    """The input half of `gates` for one step, read from in's buffer as it is now:
    with out over in's container MLI reads each step's row after writing the
    outputs before it (and, in the GRU, z*h of the step; section 16.5)."""
    x_all = inp.read()
    row = x_all.shape[0] - 1 - step if direction == RNN_DIR_BACKWARD else step
    w = weights_in.read()[list(gates)]
    return dense_part(kind, x_all[row][None], x_fmt, w, _gate_weight_fmts(weights_in, gates, gru), ir_fmt,
                      rounding, bias.read()[list(gates)], bias.shift())[:, 0]


def _set_cell_out_meta(out, rows, m):
    """11.4: rank 2, shape[0..1] = (rows, M), strides (M, 1); entries 2..3 kept."""
    out.rank = 2
    out.shape = [rows, m] + list(out.shape[2:4])
    out.mem_stride = [m, 1] + list(out.mem_stride[2:4])
