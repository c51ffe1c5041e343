# float32 recurrent sequences (beyond MLI): mlipy_float_rnn_sequence.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

# --- float32 recurrent sequences (beyond MLI): mlipy_float_rnn_sequence -------------------

from libc.stdint cimport int64_t

cdef extern from "mlipy_ext.h" nogil:
    int mlipy_float_rnn_sequence(int cell, int act, int lbr, float clip, int B, int T, int N,
                                 int M, int nd, const int *reverse, const float *x,
                                 const float *h0, const float *c0, const int64_t *lengths,
                                 const float *w, const float *r, const float *bias, float *y,
                                 float *h_out, float *c_out)

FRNN_CELLS = {"rnn": 0, "gru": 1, "lstm": 2}
FRNN_ACTS = {"tanh": 0, "sigmoid": 1, "relu": 2}


def float_rnn_sequence(str cell, str act, bint lbr, double clip, directions,
                       const float[:, :, ::1] x, const float[:, :, ::1] h0, c0,
                       const int64_t[::1] lengths, const float[:, :, ::1] w,
                       const float[:, :, ::1] r, const float[:, ::1] b,
                       float[:, :, :, ::1] y, float[:, :, ::1] h_out, c_out):
    """Run a float32 LSTM/GRU/RNN sequence in C (see mlipy_float_rnn.c for the
    order of operations).  `directions`: a list of booleans (reverse?), one per
    direction.  x [B, T, N]; h0, c0, h_out, c_out [B, nd, M] (c0/c_out: LSTM
    only, else None); lengths int64 [B]; w [nd, G*M, N], r [nd, G*M, M],
    b [nd, NB*M]; y [B, nd, T, M] (written whole).  Raises ValueError on
    inconsistent shapes, MemoryError when the scratch cannot be allocated."""
    cdef int kind = FRNN_CELLS[cell], a = FRNN_ACTS[act]
    cdef int G = 4 if kind == 2 else (3 if kind == 1 else 1)
    cdef int NB = 4 if (kind == 1 and lbr) else G
    cdef Py_ssize_t B = x.shape[0], T = x.shape[1], N = x.shape[2], M = h0.shape[2]
    cdef Py_ssize_t nd = len(directions)
    cdef int rev[2]
    cdef const float[:, :, ::1] c0v
    cdef float[:, :, ::1] cov
    cdef const float *c0p = NULL
    cdef float *cop = NULL
    cdef int st
    if nd < 1 or nd > 2:
        raise ValueError(f"directions: 1 or 2, got {nd}")
    for i in range(nd):
        rev[i] = 1 if directions[i] else 0
    if max(B, T, N, M) > 0x7fffffff:
        raise ValueError(f"sizes B={B} T={T} N={N} M={M} exceed the C int range")
    if M <= 0 or h0.shape[0] != B or h0.shape[1] != nd:
        raise ValueError(f"h0: [{B}, {nd}, M>0], got [{h0.shape[0]}, {h0.shape[1]}, {h0.shape[2]}]")
    if lengths.shape[0] != B:
        raise ValueError(f"lengths: [{B}], got {lengths.shape[0]}")
    if (w.shape[0], w.shape[1], w.shape[2]) != (nd, G * M, N) or \
            (r.shape[0], r.shape[1], r.shape[2]) != (nd, G * M, M) or \
            (b.shape[0], b.shape[1]) != (nd, NB * M):
        raise ValueError("w, r, b: inconsistent with x and h0")
    if (y.shape[0], y.shape[1], y.shape[2], y.shape[3]) != (B, nd, T, M) or \
            (h_out.shape[0], h_out.shape[1], h_out.shape[2]) != (B, nd, M):
        raise ValueError("y, h_out: inconsistent with x and h0")
    if kind == 2:
        c0v = c0
        cov = c_out
        if (c0v.shape[0], c0v.shape[1], c0v.shape[2]) != (B, nd, M) or \
                (cov.shape[0], cov.shape[1], cov.shape[2]) != (B, nd, M):
            raise ValueError("c0, c_out: [B, nd, M]")
        c0p = &c0v[0, 0, 0] if B else NULL
        cop = &cov[0, 0, 0] if B else NULL
    if B == 0:
        return
    cdef const float *xp = &x[0, 0, 0] if T and N else NULL
    cdef float *yp = &y[0, 0, 0, 0] if T else NULL
    cdef const float *wp = &w[0, 0, 0] if N else NULL
    if kind == 2 and c0p == NULL:
        raise ValueError("c0, c_out: required for an LSTM")
    # the C runner loads floats and int64s: their addresses must be aligned
    for name, p, size in (("x", <size_t>xp, 4), ("h0", <size_t>&h0[0, 0, 0], 4), ("c0", <size_t>c0p, 4),
                          ("lengths", <size_t>&lengths[0], 8), ("w", <size_t>wp, 4), ("r", <size_t>&r[0, 0, 0], 4),
                          ("b", <size_t>&b[0, 0], 4), ("y", <size_t>yp, 4), ("h_out", <size_t>&h_out[0, 0, 0], 4),
                          ("c_out", <size_t>cop, 4)):
        if p % size:
            raise ValueError(f"{name}: not aligned to {size} bytes (np.require(..., requirements='CA'))")
    with nogil:
        st = mlipy_float_rnn_sequence(kind, a, lbr, <float>clip, <int>B, <int>T, <int>N, <int>M,
                                      <int>nd, rev, xp, &h0[0, 0, 0], c0p, &lengths[0], wp,
                                      &r[0, 0, 0], &b[0, 0], yp, &h_out[0, 0, 0], cop)
    if st == -2:
        raise MemoryError("float_rnn_sequence: scratch memory")
    if st != 0:
        raise ValueError("float_rnn_sequence: arguments refused (sizes or lengths)")
