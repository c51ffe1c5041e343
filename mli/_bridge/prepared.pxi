# Prepared calls (mli.prepare): a call's structs bound once.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

# ------------------------------------------------------------ prepared calls
cdef inline unsigned long _gen(CTensor t):
    return t.generation if t is not None else 0


cdef class PreparedCall:
    """A basic RNN or LSTM kernel call with its tensors bound once: calling
    it runs the kernel on the tensors' current contents with no marshalling
    and no allocation (weights stay packed between calls).  Raises through
    `on_error(status)` when the kernel returns a non-OK status."""
    cdef int lstm, variant
    cdef CTensor inp, prev_out, weights, bias, ir, cell, out
    cdef mli_rnn_cell_cfg cfg
    cdef object ws_buf
    cdef unsigned char *ws
    cdef size_t nws
    cdef object on_error
    cdef PyThread_type_lock lock  # one call at a time: the calls share the workspace and out
    cdef unsigned long gens[7]

    cdef inline bint _changed(self):
        return (_gen(self.inp) != self.gens[0] or _gen(self.prev_out) != self.gens[1] or
                _gen(self.weights) != self.gens[2] or _gen(self.bias) != self.gens[3] or
                _gen(self.ir) != self.gens[4] or _gen(self.cell) != self.gens[5] or _gen(self.out) != self.gens[6])

    cdef int _check(self) except -1:
        if self.lstm:
            _prep(("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "cell", "out"),
                  (self.inp, self.prev_out, self.weights, self.bias), (self.ir, self.cell, self.out), False)
        else:
            _prep(("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "out"),
                  (self.inp, self.prev_out, self.weights, self.bias), (self.ir, self.out), False)
        self.gens[0], self.gens[1], self.gens[2] = _gen(self.inp), _gen(self.prev_out), _gen(self.weights)
        self.gens[3], self.gens[4], self.gens[5], self.gens[6] = _gen(self.bias), _gen(self.ir), _gen(self.cell), _gen(self.out)
        return 0

    def __init__(self, bint lstm, int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                 int mode, int act, CTensor ir, CTensor cell, CTensor out, on_error):
        cdef unsigned char[::1] mv
        _variant(variant, 3)
        self.lstm, self.variant = lstm, variant
        self.inp, self.prev_out, self.weights, self.bias = inp, prev_out, weights, bias
        self.ir, self.cell, self.out = ir, cell, out
        self.on_error = on_error
        if self.lock == NULL:
            self.lock = PyThread_allocate_lock()
            if self.lock == NULL:
                raise MemoryError()
        _cfg(&self.cfg, mode, act, ir)
        self._check()
        self.nws = _ws_size(weights, prev_out, 4 if lstm else
                            (bias.t.shape[0] if bias is not None and bias.t.rank == 2 else 1))
        self.ws_buf = bytearray(max(self.nws, 1))
        mv = self.ws_buf
        self.ws = &mv[0] if self.nws else NULL
        mlipy_set_workspace(NULL, 0)

    def __dealloc__(self):
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    def __call__(self):
        """Concurrent calls from several threads run one after the other."""
        if not PyThread_acquire_lock(self.lock, NOWAIT_LOCK):
            with nogil:  # another thread's call is running: wait with the GIL released
                PyThread_acquire_lock(self.lock, WAIT_LOCK)
        try:
            self._call()
        finally:
            PyThread_release_lock(self.lock)

    cdef _call(self):
        cdef mli_status st
        if self._changed():  # a tensor was changed since: check again
            self._check()
        cdef mli_tensor *a = tp(self.inp)
        cdef mli_tensor *b = tp(self.prev_out)
        cdef mli_tensor *c = tp(self.weights)
        cdef mli_tensor *d = tp(self.bias)
        cdef mli_tensor *e = tp(self.cell)
        cdef mli_tensor *o = tp(self.out)
        cdef lstm_fn fl = LSTM[self.variant]
        cdef rnn_fn fr = RNN[self.variant]
        with nogil:
            mlipy_set_workspace_reuse(self.ws, self.nws)
            mlipy_set_poll(_poll)
            if self.lstm:
                st = fl(a, b, c, d, &self.cfg, e, o)
            else:
                st = fr(a, b, c, d, &self.cfg, o)
            mlipy_set_poll(NULL)
            mlipy_set_workspace(NULL, 0)
        _reraise(st)
        if st != MLI_STATUS_OK:
            self.on_error(<int>st)
