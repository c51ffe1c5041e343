# mli_krn_tanh_*, mli_krn_sigm_*, mli_krn_relu_* (csrc/src/kernels/mli_krn_transform.c).
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

ctypedef mli_status (*unary_fn)(const mli_tensor *, mli_tensor *) noexcept nogil
ctypedef mli_status (*relu_fn)(const mli_tensor *, const mli_relu_cfg *, mli_tensor *) noexcept nogil


cdef unary_fn TANH[2]
TANH[:] = [mli_krn_tanh_fx8, mli_krn_tanh_fx16]
cdef unary_fn SIGM[2]
SIGM[:] = [mli_krn_sigm_fx8, mli_krn_sigm_fx16]
cdef relu_fn RELU[2]
RELU[:] = [mli_krn_relu_fx8, mli_krn_relu_fx16]


cdef int _unary_run(unary_fn *table, int variant, CTensor inp, CTensor out) except -1:
    cdef unary_fn f = table[_variant(variant, 2)]
    cdef mli_status st
    _prep(("in", "out"), (inp,), (out,), True)
    cdef mli_tensor *p_inp = tp(inp)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = f(p_inp, p_out)
    return <int>st


def tanh(int variant, CTensor inp, CTensor out):
    return _unary_run(TANH, variant, inp, out)


def sigm(int variant, CTensor inp, CTensor out):
    return _unary_run(SIGM, variant, inp, out)


cdef int _relu_run(int variant, CTensor inp, int relu_type, CTensor out) except -1:
    cdef relu_fn f = RELU[_variant(variant, 2)]
    cdef mli_relu_cfg cfg
    cdef mli_status st
    cfg.type = <mli_relu_type>relu_type
    _prep(("in", "out"), (inp,), (out,), True)
    cdef mli_tensor *p_inp = tp(inp)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = f(p_inp, &cfg, p_out)
    return <int>st


def relu(int variant, CTensor inp, int relu_type, CTensor out):
    return _relu_run(variant, inp, relu_type, out)


def unary_api(int op, int variant, str fname, x, out, relu_type=None):
    """mli.tanh_<kind> (op 0), sigm_<kind> (op 1) or relu_<kind> (op 2; relu_type already checked)."""
    return _unary_api(op, variant, fname, x, out, relu_type)


cdef object _unary_api(int op, int variant, str fname, x, out, relu_type=None):
    cdef CTensor tx = _arg(fname, "in", x)
    cdef PyObject *a[2]
    a[0] = <PyObject *>tx
    cdef CTensor y = _out_arg(fname, out, _fits(_count(tx), tx), variant, ("in", "out"), a, 1, True)
    if op == 2:
        _status(_relu_run(variant, tx, relu_type, y), fname)
    elif op == 1:
        _status(_unary_run(SIGM, variant, tx, y), fname)
    else:
        _status(_unary_run(TANH, variant, tx, y), fname)
    return y


def unary_kernel(int op, int variant, str fname):
    def fn(x, *, out=None):
        return _unary_api(op, variant, fname, x, out, None)
    return fn
