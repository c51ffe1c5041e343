# mli.graph's fused TensorIterator and the tensor binding it reuses.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

# ----------------------------------------- fused TensorIterator (mli.graph)
# A TensorIterator over a KernelBody whose port map is a recurrence runs one
# batch-to-batch call per row (mli/graph/kernel_body.py).  FusedSeq does that
# for C-contiguous arrays of the body's dtype, y concatenated (if at all) on
# the axis x is sliced on, in either direction: straight from the caller's
# arrays into the outputs, with no tensor wrappers; a row whose sequence is
# contiguous (x [..., L, N] sliced forward) is read in place and its y written
# in place in the concatenated output, others go through one scratch.  Any
# other input, a kernel function that is not the package's own (a test's spy)
# or a changed body returns None: the TensorIterator then takes its Python
# paths, which do the checks and raise the errors of stepping.

cdef enum:
    _OUT_Y_CONCAT = 0     # ConcatOutput of y on the sliced axis, part 1
    _OUT_Y_LAST = 1       # LastIterationOutput of y
    _OUT_H_LAST = 2       # LastIterationOutput of h_out
    _OUT_C_LAST = 3       # LastIterationOutput of c_out


cdef inline void _fill(mli_tensor *t, char *data, uint32_t d0, uint32_t d1, uint32_t rank, Py_ssize_t es,
                       int el_type, int frac) noexcept:
    """A dense rank-1 ([d0]) or rank-2 ([d0, d1]) tensor, every field as bind() sets it."""
    memset(t, 0, sizeof(mli_tensor))
    t.data = data
    t.shape[0] = d0
    t.shape[1] = d1 if rank == 2 else 0
    t.rank = rank
    t.capacity = d0 * (d1 if rank == 2 else 1) * es
    t.el_type = <mli_element_type>el_type
    t.el_params.fx.frac_bits = <uint8_t>frac


cdef inline bint _frac_ok(object v):
    return type(v) is int and 0 <= v <= 255


cdef inline bint _dense(Py_buffer *b, char code, Py_ssize_t es) noexcept:
    """A C-contiguous buffer of native `code` ('b' int8, 'h' int16) items."""
    return b.format != NULL and b.format[0] == code and b.format[1] == 0 and b.itemsize == es and \
        PyBuffer_IsContiguous(b, b'C')


cdef class FusedSeq:
    """The fused run of one TensorIterator over one KernelBody (see above);
    made once per TensorIterator from its port map (KernelBody's _FusedPlan)."""
    cdef object body, kernels, kernel, xp, np_empty, ndarray, b2b, act_none
    cdef str fname
    cdef bint lstm
    cdef int variant
    cdef Py_ssize_t x_ext, h_ext, c_ext, n_ext, n_out
    cdef long long xp_axis, n_fixed
    cdef list kinds                 # per external output: (kind, concat axis, concat stride sign)
    cdef bint eligible
    cdef Py_ssize_t plan_L          # the last axis length planned and its plan
    cdef long long plan_n, plan_first, plan_step

    def __init__(self, body, kernels, str fname, bint lstm, int variant, Py_ssize_t x_ext, Py_ssize_t h_ext,
                 Py_ssize_t c_ext, Py_ssize_t n_ext, xp, long long xp_axis, n_fixed, list kinds, bint eligible,
                 np_empty, ndarray, b2b, act_none):
        self.body, self.kernels, self.fname, self.kernel = body, kernels, fname, kernels._OWN[fname]
        self.lstm, self.variant = lstm, _variant(variant, 3)
        self.x_ext, self.h_ext, self.c_ext, self.n_ext = x_ext, h_ext, c_ext, n_ext
        self.xp, self.xp_axis = xp, xp_axis
        self.n_fixed = -1 if n_fixed is None else n_fixed
        self.kinds, self.n_out, self.eligible = kinds, len(kinds), eligible
        self.np_empty, self.ndarray, self.b2b, self.act_none = np_empty, ndarray, b2b, act_none
        self.plan_L = -1

    def run(self, ti, tuple inputs):
        """The TensorIterator's outputs for `inputs`, or None: take the general paths."""
        if not self.eligible or len(inputs) != self.n_ext:
            return None
        body = self.body
        if ti.body is not body or not body.fuse or getattr(self.kernels, self.fname) is not self.kernel:
            return None
        x, h0 = inputs[self.x_ext], inputs[self.h_ext]
        c0 = inputs[self.c_ext] if self.lstm else None
        if type(x) is not self.ndarray or type(h0) is not self.ndarray or \
                (self.lstm and type(c0) is not self.ndarray):
            return None
        cdef Py_buffer bx, bh, bc
        cdef bint hx = False, hh = False, hc = False
        try:
            try:
                PyObject_GetBuffer(x, &bx, PyBUF_RECORDS_RO)
                hx = True
                PyObject_GetBuffer(h0, &bh, PyBUF_RECORDS_RO)
                hh = True
                if self.lstm:
                    PyObject_GetBuffer(c0, &bc, PyBUF_RECORDS_RO)
                    hc = True
            except (BufferError, ValueError, TypeError):
                return None
            return self._run(body, x, h0, c0, &bx, &bh, &bc if hc else NULL)
        finally:
            if hc:
                PyBuffer_Release(&bc)
            if hh:
                PyBuffer_Release(&bh)
            if hx:
                PyBuffer_Release(&bx)

    cdef object _run(self, body, x, h0, c0, Py_buffer *bx, Py_buffer *bh, Py_buffer *bc):
        cdef int variant = self.variant
        cdef Py_ssize_t es = 1 if variant == 0 else 2
        cdef char code = b'b' if variant == 0 else b'h'
        cdef int el = MLI_EL_FX_8 if variant == 0 else MLI_EL_FX_16
        cdef int nd = bx.ndim, i
        cdef Py_ssize_t N, M, L, B, P, Q, r, p, q, kind, sign, row_x, row_y
        cdef long long axis, n, first, step, ca, t, dst
        # the inputs: the body's dtype, C-contiguous; x [pre..., L, post..., N] sliced on L; h and c
        # [..., M] with the B = P*Q rows of x (P, Q: the elements of pre and post), in that order
        if not _dense(bx, code, es) or not _dense(bh, code, es) or nd < 2 or bh.ndim < 1:
            return None
        if bc != NULL:
            if not _dense(bc, code, es) or bc.ndim != bh.ndim:
                return None
            for i in range(bh.ndim):
                if bc.shape[i] != bh.shape[i]:
                    return None
        weights, bias = body.weights, body.bias
        if not isinstance(weights, _Tensor) or not isinstance(bias, _Tensor) or \
                not _live(<CTensor>weights) or not _live(<CTensor>bias):
            return None
        cdef CTensor tw = <CTensor>weights, tb = <CTensor>bias
        if tw.t.rank < 2 or tw.t.rank > 4:
            return None
        M = tw.t.shape[tw.t.rank - 2]
        N = <Py_ssize_t>tw.t.shape[tw.t.rank - 1] - M
        if M < 1 or N < 1 or bx.shape[nd - 1] != N or bh.shape[bh.ndim - 1] != M:
            return None
        if body.input_size != N or body.state_size != M:
            return None
        axis = self.xp_axis + nd if self.xp_axis < 0 else self.xp_axis
        if not 0 <= axis < nd - 1:
            return None
        L = bx.shape[axis]
        if L != self.plan_L:
            try:
                n, first, step = self.xp.plan(L)
            except ValueError:
                return None
            self.plan_L, self.plan_n, self.plan_first, self.plan_step = L, n, first, step
        else:
            n, first, step = self.plan_n, self.plan_first, self.plan_step
        if n < 1 or (step != 1 and step != -1) or (self.n_fixed >= 0 and n != self.n_fixed):
            return None
        P = Q = 1
        for i in range(axis):
            P *= bx.shape[i]
        for i in range(axis + 1, nd - 1):
            Q *= bx.shape[i]
        B = P * Q
        if B < 1 or bh.len != B * M * es or n * (N if N > M else M) * es > 0xFFFFFFFF:
            return None
        # the body's formats and configuration, read per call as the Python paths read them
        cfg = getattr(body, "_seq", None)       # its batch-to-batch cfg (anything else: the Python paths)
        in_frac, state_frac = body.in_frac, body.state_frac
        cell_frac = body.cell_frac if self.lstm else 0
        if not isinstance(cfg, _Config) or not _frac_ok(in_frac) or not _frac_ok(state_frac) or \
                not _frac_ok(cell_frac):
            return None
        mode = cfg.mode
        if cfg.ir is not None or not (mode is self.b2b or mode == self.b2b):
            return None
        act_obj = cfg.act
        if not isinstance(act_obj, int) or not -2 ** 31 <= act_obj < 2 ** 31:
            return None
        cdef int act = act_obj
        cdef int out_frac = 0
        if not self.lstm:      # out's frac bits: body.out_frac passed for act NONE, else prev_out's; set for act NONE
            frac = body.out_frac if body.act == self.act_none else state_frac
            if act_obj == self.act_none:
                if not _frac_ok(frac):
                    return None
                out_frac = frac
        # the outputs: y concatenated on the sliced axis (iteration order, or reversed), the last steps
        cdef list kinds = self.kinds
        shape = tuple([bx.shape[i] for i in range(nd - 1)])
        y = None
        sign = 1
        for i in range(self.n_out):
            kind, ca, t = kinds[i]
            if kind == _OUT_Y_CONCAT:
                ca = ca + nd if ca < 0 else ca
                if ca != axis:
                    return None
                y = self.np_empty(shape[:axis] + (n,) + shape[axis + 1:] + (M,), x.dtype)
                sign = t
        # x rows gathered (a strided or reversed sequence) and y rows scattered (strided or reversed)
        # through one scratch of this call; else each row is read and written in place
        cdef bint gather = Q > 1 or step < 0
        cdef bint direct = y is not None and Q == 1 and sign > 0
        cdef Py_ssize_t x_room = n * N * es if gather else 0
        cdef Py_ssize_t y_room = 0 if direct else n * M * es
        tmp = PyByteArray_FromStringAndSize(NULL, x_room + y_room + B * M * es)
        cdef char *xt = PyByteArray_AS_STRING(tmp)
        cdef char *yt = xt + x_room
        cdef char *last = yt + y_room        # each row's last step
        cdef Py_buffer by, bcell
        cdef bint hy = False, hcell = False
        cdef _Scratch s = None
        cdef CTensor ir
        cdef mli_tensor tx, th, tc, ty
        cdef mli_rnn_cell_cfg ccfg
        cdef char *xp = <char *>bx.buf
        cdef char *xrow
        cdef char *yrow
        cdef char *yp = NULL
        cdef char *cp = NULL
        cdef size_t nws
        cdef const mlipy_error_detail *d
        cdef uint32_t rows_per_state = 4 if self.lstm else (tb.t.shape[0] if tb.t.rank == 2 else 1)
        c = self.np_empty(h0.shape, x.dtype) if self.lstm else None
        try:
            if y is not None:
                PyObject_GetBuffer(y, &by, PyBUF_SIMPLE | PyBUF_WRITABLE)
                hy = True
                yp = <char *>by.buf
            if self.lstm:
                PyObject_GetBuffer(c, &bcell, PyBUF_SIMPLE | PyBUF_WRITABLE)
                hcell = True
                cp = <char *>bcell.buf
                memcpy(cp, bc.buf, B * M * es)
                s = _take_scratch()
            for r in range(B):
                if r:
                    PyErr_CheckSignals()
                p, q = r // Q, r % Q
                if gather:
                    for t in range(n):
                        memcpy(xt + t * N * es, xp + ((p * L + first + t * step) * Q + q) * N * es, N * es)
                    xrow = xt
                else:
                    xrow = xp + (p * L + first) * N * es
                yrow = yp + r * n * M * es if direct else yt
                _fill(&tx, xrow, <uint32_t>n, <uint32_t>N, 2, es, el, in_frac)
                _fill(&th, <char *>bh.buf + r * M * es, <uint32_t>M, 0, 1, es, el, state_frac)
                _fill(&ty, yrow, <uint32_t>n, <uint32_t>M, 2, es, el, out_frac)
                nws = _ws_size_s(&tw.t, &th, rows_per_state)
                if self.lstm:
                    _fill(&tc, cp + r * M * es, <uint32_t>M, 0, 1, es, el, cell_frac)
                    ir = _zero_ir(s, 4 * M, variant)
                    _cfg(&ccfg, 1, act, ir)
                    _status(_rec_call(True, variant, &tx, &th, tw, &tb.t, &ccfg, &tc, &ty, nws), self.fname)
                else:
                    _cfg(&ccfg, 1, act, None)
                    _status(_rec_call(False, variant, &tx, &th, tw, &tb.t, &ccfg, NULL, &ty, nws), self.fname)
                    d = mlipy_last_error()
                    if d.status == MLI_STATUS_OK and d.mlipy_safety:
                        raise _error(5, "mli_krn_" + self.fname, d.argument.decode(), d.field.decode(),
                                     d.reason.decode(), mlipy_safety=True)
                memcpy(last + r * M * es, yrow + (n - 1) * M * es, M * es)
                if y is not None and not direct:
                    for t in range(n):
                        dst = t if sign > 0 else n - 1 - t
                        memcpy(yp + ((p * n + dst) * Q + q) * M * es, yt + t * M * es, M * es)
            result = [None] * self.n_out
            y_last = h_last = None
            for i in range(self.n_out):
                kind, ca, t = kinds[i]
                if kind == _OUT_Y_CONCAT:
                    v = y
                elif kind == _OUT_C_LAST:
                    v = c
                else:
                    v = y_last if kind == _OUT_Y_LAST else h_last
                    if v is None:    # y of one iteration [pre..., 1, post..., M], h_out shaped like h
                        v = self.np_empty(shape[:axis] + (1,) + shape[axis + 1:] + (M,) if kind == _OUT_Y_LAST
                                          else h0.shape, x.dtype)
                        _copy_to(v, last, B * M * es)
                        if kind == _OUT_Y_LAST:
                            y_last = v
                        else:
                            h_last = v
                result[i] = v
            return tuple(result)
        finally:
            _give_back(s)
            if hcell:
                PyBuffer_Release(&bcell)
            if hy:
                PyBuffer_Release(&by)


cdef int _copy_to(object dst, const char *src, Py_ssize_t nbytes) except -1:
    """The first `nbytes` of dst (a new C-contiguous array) = src."""
    cdef Py_buffer b
    PyObject_GetBuffer(dst, &b, PyBUF_SIMPLE | PyBUF_WRITABLE)
    try:
        memcpy(b.buf, src, nbytes)
    finally:
        PyBuffer_Release(&b)
    return 0


def bind(CTensor t, arr, int frac):
    """Point `t` at the C-contiguous int8/int16 array `arr` (rank 1..4) with
    every field as Tensor(arr, frac) sets it: for wrappers kept and reused
    from call to call (mli.graph's fused TensorIterator)."""
    cdef int nd = arr.ndim
    cdef int i
    if not 1 <= nd <= 4 or not 0 <= frac <= 255:
        raise ValueError("bind: needs an array of rank 1 to 4 and frac bits in 0..255")
    shape = arr.shape
    t._attach_c(arr, False)
    memset(t.t.shape, 0, sizeof(t.t.shape))
    memset(t.t.mem_stride, 0, sizeof(t.t.mem_stride))
    for i in range(nd):
        t.t.shape[i] = <uint32_t>shape[i]
    t.t.rank = nd
    t.t.capacity = <uint32_t>t.nbytes
    t.t.el_type = MLI_EL_FX_8 if arr.itemsize == 1 else MLI_EL_FX_16
    t.t.el_params.fx.frac_bits = <uint8_t>frac
    t.is_null = False
    return t


def unbind(tuple tensors):
    """Let go of the arrays that bind() pointed the tensors at."""
    for t in tensors:
        (<CTensor?>t)._detach_c()
