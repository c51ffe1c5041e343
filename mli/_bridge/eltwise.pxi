# mli_krn_eltwise_* (csrc/src/kernels/mli_krn_eltwise.c).
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

ctypedef mli_status (*binary_fn)(const mli_tensor *, const mli_tensor *, mli_tensor *) noexcept nogil


cdef binary_fn ELTWISE[5][2]
ELTWISE[0][:] = [mli_krn_eltwise_add_fx8, mli_krn_eltwise_add_fx16]
ELTWISE[1][:] = [mli_krn_eltwise_sub_fx8, mli_krn_eltwise_sub_fx16]
ELTWISE[2][:] = [mli_krn_eltwise_mul_fx8, mli_krn_eltwise_mul_fx16]
ELTWISE[3][:] = [mli_krn_eltwise_max_fx8, mli_krn_eltwise_max_fx16]
ELTWISE[4][:] = [mli_krn_eltwise_min_fx8, mli_krn_eltwise_min_fx16]
ELTWISE_OPS = ("add", "sub", "mul", "max", "min")


cdef int _eltwise_run(int k, int variant, CTensor in1, CTensor in2, CTensor out) except -1:
    cdef binary_fn f = ELTWISE[k][_variant(variant, 2)]
    cdef mli_status st
    _prep(("in1", "in2", "out"), (in1, in2), (out,), True, True)
    cdef mli_tensor *p_in1 = tp(in1)
    cdef mli_tensor *p_in2 = tp(in2)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = f(p_in1, p_in2, p_out)
    return <int>st


def eltwise(op, int variant, CTensor in1, CTensor in2, CTensor out):
    return _eltwise_run(ELTWISE_OPS.index(op), variant, in1, in2, out)


def eltwise_api(int op, int variant, str fname, in1, in2, out, out_frac_bits):
    """mli.eltwise_<op>_<kind>(in1, in2, out=out, out_frac_bits=out_frac_bits); op indexes ELTWISE_OPS."""
    return _eltwise_api(op, variant, fname, in1, in2, out, out_frac_bits)


cdef object _eltwise_api(int op, int variant, str fname, in1, in2, out, out_frac_bits):
    cdef CTensor a = _arg(fname, "in1", in1)
    cdef CTensor b = _arg(fname, "in2", in2)
    cdef u64 na = _fits(_count(a), a) if a.t.rank else 1
    cdef u64 nb = _fits(_count(b), b) if b.t.rank else 1
    frac = a.t.el_params.fx.frac_bits if out_frac_bits is None else out_frac_bits
    cdef PyObject *args[3]
    args[0], args[1] = <PyObject *>a, <PyObject *>b
    cdef CTensor y = _out_arg(fname, out, na if na > nb else nb, variant, ("in1", "in2", "out"), args, 2, True, True)
    cdef uint8_t old = y.t.el_params.fx.frac_bits
    _frac_for(y, frac)
    try:
        _status(_eltwise_run(op, variant, a, b, y), fname)
    except BaseException:
        _frac_back(y, old)
        raise
    return y


def eltwise_kernel(int op, int variant, str fname):
    def fn(in1, in2, *, out=None, out_frac_bits=None):
        return _eltwise_api(op, variant, fname, in1, in2, out, out_frac_bits)
    return fn
