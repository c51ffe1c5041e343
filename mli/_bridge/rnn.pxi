# mli_krn_basic_rnn_cell_* (csrc/src/kernels/mli_krn_rnn.c).
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

ctypedef mli_status (*rnn_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                              const mli_rnn_cell_cfg *, mli_tensor *) noexcept nogil


cdef rnn_fn RNN[3]
RNN[:] = [mli_krn_basic_rnn_cell_fx8, mli_krn_basic_rnn_cell_fx16, mli_krn_basic_rnn_cell_fx8w16d]


cdef int _rnn_run(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                  int mode, int act, CTensor ir, CTensor out) except -1:
    _variant(variant, 3)
    cdef mli_rnn_cell_cfg cfg
    cdef PyObject *a[6]
    a[0], a[1], a[2], a[3] = <PyObject *>inp, <PyObject *>prev_out, <PyObject *>weights, <PyObject *>bias
    a[4], a[5] = <PyObject *>ir, <PyObject *>out
    _cfg(&cfg, mode, act, ir)
    _prep_a(_RNN_NAMES, a, 4, 6, False, False)
    cdef size_t nws = _ws_size(weights, prev_out, (bias.t.shape[0] if bias is not None and bias.t.rank == 2 else 1))
    cdef unsigned long keys = _claim_a(_RNN_OUTS, a + 4, 2)
    try:
        return _rec_call(False, variant, tp(inp), tp(prev_out), weights, tp(bias), &cfg, NULL, tp(out), nws)
    finally:
        _release(keys)


def basic_rnn_cell(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                   int mode, int act, CTensor ir, CTensor out):
    return _rnn_run(variant, inp, prev_out, weights, bias, mode, act, ir, out)


def rnn_api(int variant, str fname, x, prev_out, weights, bias, cfg, out, out_frac_bits):
    """mli.basic_rnn_cell_<kind>(x, prev_out, weights, bias, cfg, out=out, out_frac_bits=out_frac_bits)."""
    return _rnn_api(variant, fname, x, prev_out, weights, bias, cfg, out, out_frac_bits)


cdef object _rnn_api(int variant, str fname, x, prev_out, weights, bias, cfg, out, out_frac_bits):
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor th = _arg(fname, "prev_out", prev_out)
    cdef CTensor tw = _arg(fname, "weights", weights)
    cdef CTensor tb = _arg(fname, "bias", bias)
    cdef CTensor ir = None
    cdef _Scratch s = None
    if not isinstance(cfg, _Config):
        raise TypeError(f"{fname}: cfg must be an mli.RnnCellConfig")
    mode = cfg.mode
    cdef u64 K = _fits(_count(tb), tb)
    cdef u64 count = _fits(_mul(K, _batch(tx, mode)), tb, tx)
    if out is None:
        _vouch(False, variant, fname, count, tx, th, tw, tb, cfg, None)
    frac = th.t.el_params.fx.frac_bits if out_frac_bits is None else out_frac_bits
    cdef PyObject *a[5]
    a[0], a[1], a[2], a[3] = <PyObject *>th, <PyObject *>tw, <PyObject *>tb, <PyObject *>tx
    cdef CTensor y = _out_arg(fname, out, count, variant, ("prev_out", "weights", "bias", "in", "out"), a, 4)
    cdef uint8_t old = y.t.el_params.fx.frac_bits
    cdef bint set_frac
    cdef const mlipy_error_detail *d
    ir_obj = cfg.ir
    cdef bint b2l = ir_obj is None and mode == _B2L
    if b2l:
        s = _take_scratch()
    try:
        if ir_obj is None:
            if b2l:
                ir = _zero_ir(s, K, variant)
        else:
            ir = _ir_arg(ir_obj)
        act = cfg.act
        set_frac = act == _ACT_NONE   # the format the caller asks for, for this call
        if set_frac:
            _frac_for(y, frac)
        try:
            _status(_rnn_run(variant, tx, th, tw, tb, _c_int(mode), _c_int(act), ir, y), fname)
            # a basic RNN whose out is too short for its steps: MLI 1.1 returns OK
            # and writes past out's end; the C core writes nothing and flags it
            d = mlipy_last_error()
            if d.status == MLI_STATUS_OK and d.mlipy_safety:
                raise _error(5, "mli_krn_" + fname, d.argument.decode(), d.field.decode(), d.reason.decode(),
                             mlipy_safety=True)
        except BaseException:
            if set_frac:
                _frac_back(y, old)
            raise
        return y
    finally:
        _give_back(s)


def rnn_kernel(int variant, str fname):
    def fn(x, prev_out, weights, bias, cfg, *, out=None, out_frac_bits=None):
        return _rnn_api(variant, fname, x, prev_out, weights, bias, cfg, out, out_frac_bits)
    return fn
