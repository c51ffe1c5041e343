# mli_krn_lstm_cell_* (csrc/src/kernels/mli_krn_lstm.c) and its step functions.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

ctypedef mli_status (*lstm_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                               const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *) noexcept nogil


cdef lstm_fn LSTM[3]
LSTM[:] = [mli_krn_lstm_cell_fx8, mli_krn_lstm_cell_fx16, mli_krn_lstm_cell_fx8w16d]


cdef int _lstm_run(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                   int mode, int act, CTensor ir, CTensor cell, CTensor out, bint cfg_null=False) except -1:
    _variant(variant, 3)
    cdef mli_rnn_cell_cfg cfg
    cdef mli_rnn_cell_cfg *pcfg = NULL if cfg_null else &cfg
    cdef PyObject *a[7]
    a[0], a[1], a[2], a[3] = <PyObject *>inp, <PyObject *>prev_out, <PyObject *>weights, <PyObject *>bias
    a[4], a[5], a[6] = <PyObject *>ir, <PyObject *>cell, <PyObject *>out
    _cfg(&cfg, mode, act, ir)
    _prep_a(_LSTM_NAMES, a, 4, 7, False, False)
    cdef size_t nws = _ws_size(weights, prev_out, 4)
    cdef unsigned long keys = _claim_a(_LSTM_OUTS, a + 4, 3)
    try:
        return _rec_call(True, variant, tp(inp), tp(prev_out), weights, tp(bias), pcfg, tp(cell), tp(out), nws)
    finally:
        _release(keys)


def lstm_cell(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
              int mode, int act, CTensor ir, CTensor cell, CTensor out, bint cfg_null=False):
    return _lstm_run(variant, inp, prev_out, weights, bias, mode, act, ir, cell, out, cfg_null)


def lstm_api(int variant, str fname, x, prev_out, weights, bias, cfg, cell, out, cell_out):
    """mli.lstm_cell_<kind>(x, prev_out, weights, bias, cfg, cell, out=out, cell_out=cell_out)."""
    return _lstm_api(variant, fname, x, prev_out, weights, bias, cfg, cell, out, cell_out)


cdef object _lstm_api(int variant, str fname, x, prev_out, weights, bias, cfg, cell, out, cell_out):
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor th = _arg(fname, "prev_out", prev_out)
    cdef CTensor tw = _arg(fname, "weights", weights)
    cdef CTensor tb = _arg(fname, "bias", bias)
    cdef CTensor tc = _arg(fname, "cell", cell)
    cdef CTensor tco = None, c, ir
    cdef _Scratch s = None
    cdef PyObject *a[7]
    if not isinstance(cfg, _Config):
        raise TypeError(f"{fname}: cfg must be an mli.RnnCellConfig")
    mode = cfg.mode
    cdef u64 M = _fits(_count(th), th)
    cdef u64 count = _fits(_mul(M, _batch(tx, mode)), th, tx)
    if out is None:
        _vouch(True, variant, fname, count, tx, th, tw, tb, cfg, tc)
    a[0], a[1], a[2], a[3], a[4] = <PyObject *>th, <PyObject *>tw, <PyObject *>tb, <PyObject *>tc, <PyObject *>tx
    cdef CTensor y = _out_arg(fname, out, count, variant,
                              ("prev_out", "weights", "bias", "cell", "in", "out"), a, 5)
    cdef bint apart = cell_out is not None and cell_out is not cell   # nothing is copied into an alias
    if apart:
        tco = _arg(fname, "cell_out", cell_out)
        a[0], a[1], a[2], a[3], a[4], a[5] = <PyObject *>tx, <PyObject *>th, <PyObject *>tw, <PyObject *>tb, \
            <PyObject *>tc, <PyObject *>y
        a[6] = <PyObject *>tco
        _prep_a(("in", "prev_out", "weights", "bias", "cell", "out", "cell_out"), a, 6, 7, False, False)
    # the kernel updates its cell in place: a private copy, unless the
    # caller passed its cell as cell_out (C writes nothing when it fails)
    ir_obj = cfg.ir
    if apart or ir_obj is None:
        s = _take_scratch()
    try:
        c = tc if cell_out is cell or (tc.t.data == NULL and not tc.data_is_value) else \
            _cell_copy(s if apart else None, tc)
        ir = _zero_ir(s, 4 * M, variant) if ir_obj is None else _ir_arg(ir_obj)
        _status(_lstm_run(variant, tx, th, tw, tb, _c_int(mode), _c_int(cfg.act), ir, c, y), fname)
        if apart:
            tco._copy_from(c)
            return y, cell_out
        return y, c
    finally:
        _give_back(s)


def lstm_kernel(int variant, str fname):
    def fn(x, prev_out, weights, bias, cfg, cell, *, out=None, cell_out=None):
        return _lstm_api(variant, fname, x, prev_out, weights, bias, cfg, cell, out, cell_out)
    return fn


# ------------------------------------------------------- LSTM step access
def _step_sizes(gates, M, cell, h):
    """Sizes checked in Python integers (no C int overflow)."""
    if M < 1 or len(gates) < 4 * M:
        raise BridgeError("gates", f"needs 4*M values with M >= 1 (M={M}, {len(gates)} given)")
    if cell is not None and len(cell) < M:
        raise BridgeError("cell", f"needs M={M} values")
    if h is not None and len(h) < M:
        raise BridgeError("h", f"needs M={M} values")
def lstm_gates(int variant, gates, int M, int f_ir):
    """Activate 4*M dense gate values in place (int8 for fx8, else int16)."""
    cdef int8_t[::1] g8
    cdef int16_t[::1] g16
    _variant(variant, 3)
    _step_sizes(gates, M, None, None)
    if variant == 0:
        g8 = gates
        mlipy_lstm_gates_fx8(&g8[0], M, f_ir)
    else:
        g16 = gates
        (mlipy_lstm_gates_fx16 if variant == 1 else mlipy_lstm_gates_fx8w16d)(&g16[0], M, f_ir)


def lstm_cell_update(int variant, gates, int M, cell, int ir_shift):
    """Update M cell values in place from activated gates (i, g, f, o)."""
    cdef const int8_t[::1] g8
    cdef int8_t[::1] c8
    cdef const int16_t[::1] g16
    cdef int16_t[::1] c16
    _variant(variant, 3)
    _step_sizes(gates, M, cell, None)
    if not -64 <= ir_shift <= 64: raise BridgeError("ir_shift", "must be in -64..64")
    if variant == 0:
        g8 = gates; c8 = cell
        mlipy_lstm_cell_update_fx8(&g8[0], M, &c8[0], ir_shift)
    else:
        g16 = gates; c16 = cell
        (mlipy_lstm_cell_update_fx16 if variant == 1 else mlipy_lstm_cell_update_fx8w16d)(&g16[0], M, &c16[0], ir_shift)


def lstm_hidden(int variant, gates, int M, cell, int f_c, int act, int mshift, h):
    """h[m] = out(p[m] * o[m]) with p = cell or its activation."""
    cdef const int8_t[::1] g8, c8
    cdef int8_t[::1] h8
    cdef const int16_t[::1] g16, c16
    cdef int16_t[::1] h16
    _variant(variant, 3)
    if not 0 <= act <= 2: raise BridgeError("act", "must be 0, 1 or 2")
    _step_sizes(gates, M, cell, h)
    if not 0 <= f_c <= 255: raise BridgeError("f_c", "must be in 0..255")
    if not -64 <= mshift <= 64: raise BridgeError("mshift", "must be in -64..64")
    if variant == 0:
        g8 = gates; c8 = cell; h8 = h
        mlipy_lstm_hidden_fx8(&g8[0], M, &c8[0], f_c, <mli_rnn_out_activation>act, mshift, &h8[0])
    else:
        g16 = gates; c16 = cell; h16 = h
        (mlipy_lstm_hidden_fx16 if variant == 1 else mlipy_lstm_hidden_fx8w16d)(
            &g16[0], M, &c16[0], f_c, <mli_rnn_out_activation>act, mshift, &h16[0])
