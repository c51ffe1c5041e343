# What the recurrent families (rnn, lstm) share: argument names, the cfg, the
# C checks alone, the C call with workspace and Ctrl-C poll, the IR scratch.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

# argument names of the recurrent kernels (inputs, then outputs), for the bridge's messages
cdef tuple _RNN_NAMES = ("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "out")
cdef tuple _RNN_OUTS = ("cfg.ir_tsr", "out")
cdef tuple _LSTM_NAMES = ("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "cell", "out")
cdef tuple _LSTM_OUTS = ("cfg.ir_tsr", "cell", "out")


cdef inline void _cfg(mli_rnn_cell_cfg *cfg, int mode, int act, CTensor ir):
    cfg.mode = <mli_rnn_mode>mode
    cfg.act = <mli_rnn_out_activation>act
    cfg.ir_tsr = tp(ir)


cdef char _virtual_byte = 0


cdef inline void _virtual(mli_tensor *t) noexcept:
    """A stand-in for an output not allocated yet: it passes every output
    check (data somewhere, dense, the largest capacity) and is never written."""
    memset(t, 0, sizeof(mli_tensor))
    t.data = &_virtual_byte
    t.capacity = 0xFFFFFFFF


cdef int _check_cell_c(bint lstm, int variant, mli_tensor *inp, mli_tensor *prev_out, mli_tensor *weights,
                       mli_tensor *bias, int mode, int act, mli_tensor *ir, mli_tensor *cell, mli_tensor *out,
                       bint v_ir, bint v_out) noexcept:
    """The status of the kernel's argument checks alone (mlipy_check_*); v_ir,
    v_out: a stand-in (_virtual) for the ir / out the caller allocates later."""
    cdef mli_rnn_cell_cfg cfg
    cdef mli_tensor vir, vout
    _virtual(&vir)
    _virtual(&vout)
    cfg.mode = <mli_rnn_mode>mode
    cfg.act = <mli_rnn_out_activation>act
    cfg.ir_tsr = &vir if v_ir else ir
    if lstm:
        return <int>mlipy_check_lstm_cell(variant, inp, prev_out, weights, bias, &cfg, cell,
                                          &vout if v_out else out)
    return <int>mlipy_check_basic_rnn_cell(variant, inp, prev_out, weights, bias, &cfg, &vout if v_out else out)


def check_cell(bint lstm, int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias, int mode,
               int act, CTensor ir, CTensor cell, CTensor out):
    """The C checks of a basic RNN / LSTM call (MLI's order and status) before
    its outputs exist: `ir` or `out` None stands for the one the caller is
    about to allocate (sized from the shapes these checks have then vouched
    for).  The bridge's input checks run first, as in a call.  Returns the
    status (last_error() names the argument)."""
    _variant(variant, 3)
    _prep(("in", "prev_out", "weights", "bias") + (("cell",) if lstm else ()),
          (inp, prev_out, weights, bias) + ((cell,) if lstm else ()), (), False)
    return _check_cell_c(lstm, variant, tp(inp), tp(prev_out), tp(weights), tp(bias), mode, act, tp(ir),
                         tp(cell) if lstm else NULL, tp(out), ir is None, out is None)


cdef int _rec_call(bint lstm, int variant, mli_tensor *inp, mli_tensor *prev_out, CTensor weights, mli_tensor *bias,
                   mli_rnn_cell_cfg *cfg, mli_tensor *cell, mli_tensor *out, size_t nws) except -1:
    """The C call of a recurrent kernel (variant checked by the caller): with
    the GIL released, the thread's workspace of `nws` bytes (whose packing of
    the weights C reuses when they are byte for byte as last packed) and the
    Ctrl-C poll.  Returns the status (raises what interrupted the call)."""
    cdef lstm_fn fl = LSTM[variant]
    cdef rnn_fn fr = RNN[variant]
    cdef mli_status st
    cdef mli_tensor *p_weights = tp(weights)
    cdef _Workspace wsp = None
    cdef unsigned char *ws = NULL
    cdef bint reuse = False
    try:
        if nws:
            wsp = _workspace(weights, nws)
            ws, reuse = <unsigned char *>PyByteArray_AS_STRING(wsp.buf), wsp.reuse
        with nogil:
            if reuse:
                mlipy_set_workspace_reuse(ws, nws)
            else:
                mlipy_set_workspace(ws, nws)
            mlipy_set_poll(_poll)
            if lstm:
                st = fl(inp, prev_out, p_weights, bias, cfg, cell, out)
            else:
                st = fr(inp, prev_out, p_weights, bias, cfg, out)
            mlipy_set_poll(NULL)
            mlipy_set_workspace(NULL, 0)
    finally:
        if wsp is not None:
            wsp.busy = False
    _reraise(st)
    return <int>st


cdef size_t _SCRATCH_KEEP = 1 << 16   # bytes; larger scratch is made per call


cdef _Scratch _take_scratch():
    cdef _Scratch s = _this_thread().scratch
    if s.busy:
        return None
    s.busy = True
    return s


cdef inline void _give_back(_Scratch s) noexcept:
    if s is not None:
        s.busy = False


cdef int _scratch_buffer(CTensor t, size_t n) except -1:
    if not (t.has_view and t.nbytes >= <Py_ssize_t>n):
        t._attach_c(bytearray(n if n > 64 else 64), True)
    return 0


cdef CTensor _zero_ir(_Scratch s, u64 count, int variant):
    """Tensor(np.zeros(max(count, 1), dtype)): a call's cfg.ir, in the scratch when it fits."""
    cdef size_t el = 1 if variant == 0 else 2
    if count < 1:
        count = 1
    if s is None or count * el > _SCRATCH_KEEP:
        return _new_tensor(count, variant, count * el)
    cdef CTensor t = s.ir
    _scratch_buffer(t, count * el)
    memset(&t.t, 0, sizeof(mli_tensor))
    t.t.data = t.view.buf
    memset(t.t.data, 0, count * el)
    t.t.shape[0] = <uint32_t>count
    t.t.rank = 1
    t.t.capacity = <uint32_t>(count * el)
    t.t.el_type = MLI_EL_FX_8 if variant == 0 else MLI_EL_FX_16
    t.generation += 1
    return t


cdef CTensor _cell_copy(_Scratch s, CTensor cell):
    """cell.copy(): into the scratch when `s` is given and the cell has a
    buffer, else a new tensor (of the cell's class, as copy() makes)."""
    cdef CTensor t
    if s is not None and cell.t.data != NULL and not cell.data_is_value and not cell.is_null \
            and cell.t.capacity <= _SCRATCH_KEEP:
        t = s.cell
        _scratch_buffer(t, cell.t.capacity)
        memcpy(t.view.buf, cell.t.data, cell.t.capacity)
        t.t = cell.t
        t.t.data = t.view.buf
        t.generation += 1
        return t
    if type(cell) is _Tensor:   # what copy() makes, without running Tensor.__init__
        return cell._copy_into(CTensor.__new__(_Tensor))
    return cell.copy()


cdef int _vouch(bint lstm, int variant, str fname, u64 count, CTensor tx, CTensor th, CTensor tw, CTensor tb, cfg,
                CTensor tc) except -1:
    """Before a new output of `count` elements is allocated: when it is large,
    the kernel's checks (with stand-ins for out and a missing cfg.ir) see the
    shapes it comes from first, so that a shape the tensors merely claim ends
    in the checker's error naming the argument, not in a huge allocation (the
    product of two claimed sizes can pass _fits)."""
    if _mul(count, 1 if variant == 0 else 2) <= _SCRATCH_KEEP:
        return 0
    ir = cfg.ir
    _status(check_cell(lstm, variant, tx, th, tw, tb, _c_int(cfg.mode), _c_int(cfg.act),
                       None if ir is None else _ir_arg(ir), tc, None), fname)
    return 0
