# Batched rows (mlipy_*_cell_rows_*, beyond MLI): B rows with shared weights in one call.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

# ------------------------------------------- batched rows (mli-py extension)
# mlipy_*_cell_rows_* (mlipy_ext.h): B rows with shared weights in one call.
from cpython.mem cimport PyMem_Malloc, PyMem_Free

cdef extern from "mlipy_ext.h" nogil:
    mli_status mlipy_lstm_cell_rows_fx8(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                        const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *, int *)
    mli_status mlipy_lstm_cell_rows_fx16(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                         const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *, int *)
    mli_status mlipy_lstm_cell_rows_fx8w16d(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                            const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *,
                                            int *)
    mli_status mlipy_basic_rnn_cell_rows_fx8(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                             const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, int *)
    mli_status mlipy_basic_rnn_cell_rows_fx16(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                              const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, int *)
    mli_status mlipy_basic_rnn_cell_rows_fx8w16d(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                                 const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, int *)

ctypedef mli_status (*lstm_rows_fn)(int, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                    const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *, int *) noexcept nogil
ctypedef mli_status (*rnn_rows_fn)(int, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                   const mli_rnn_cell_cfg *, mli_tensor *, int *) noexcept nogil
cdef lstm_rows_fn LSTM_ROWS[3]
LSTM_ROWS[:] = [mlipy_lstm_cell_rows_fx8, mlipy_lstm_cell_rows_fx16, mlipy_lstm_cell_rows_fx8w16d]
cdef rnn_rows_fn RNN_ROWS[3]
RNN_ROWS[:] = [mlipy_basic_rnn_cell_rows_fx8, mlipy_basic_rnn_cell_rows_fx16, mlipy_basic_rnn_cell_rows_fx8w16d]

# rows are C ints; the per-row tensors of one call live in one allocation
MAX_ROWS = 2 ** 31 - 1


cdef int _row_views(str name, object obj, bint stacked, bint output, Py_ssize_t rows, mli_tensor *dst) except -1:
    """dst[r] = row r of `obj`: a list holds one tensor per row (inputs only;
    the C checks judge each); with `stacked`, the tensor without its leading
    axis (the rows), at r times the row's bytes; else the tensor itself,
    shared by every row."""
    cdef Py_ssize_t r, i
    cdef unsigned long long count = 1, es, row_bytes
    cdef mli_tensor v
    cdef CTensor t
    if isinstance(obj, list):
        if output or len(obj) != rows:
            raise BridgeError(name, f"a list needs one tensor per row ({rows})")
        for r in range(rows):
            t = obj[r]
            if t is None or t.is_null or t.data_is_value:
                raise BridgeError(f"{name}[{r}]", "needs a tensor (not NULL, not a rank-0 value)")
            if dst != NULL:
                dst[r] = t.t
        return 0
    t = obj
    if t is None or t.is_null or not _live(t):
        raise BridgeError(name, "needs a tensor with data")
    if output and not t.writable:
        raise BridgeError(name, "the output buffer is read-only")
    if not stacked:
        for r in range(rows if dst != NULL else 0):
            dst[r] = t.t
        return 0
    if t.t.rank < 1 or t.t.rank > 4 or t.t.shape[0] != rows:
        raise BridgeError(name, f"needs the {rows} rows on its first axis (shape[0] == {rows})")
    for i in range(4):
        if t.t.mem_stride[i] != 0:
            raise BridgeError(name, "a stacked row tensor must be dense (mem_stride all 0)")
    for i in range(1, t.t.rank):
        count *= t.t.shape[i]
    es = 2 if t.t.el_type == MLI_EL_FX_16 else (4 if t.t.el_type == MLI_EL_ASYM_I32 else 1)
    row_bytes = count * es
    if row_bytes * <unsigned long long>rows > t.t.capacity:
        raise BridgeError(name, f"capacity {t.t.capacity} is smaller than {rows} rows of {row_bytes} bytes")
    v = t.t
    v.rank = t.t.rank - 1
    for i in range(4):
        v.shape[i] = t.t.shape[i + 1] if i + 1 < 4 else 0
    v.capacity = <uint32_t>row_bytes
    if dst == NULL:    # validated only (check_rows)
        return 0
    for r in range(rows):
        v.data = <char *>t.t.data + r * row_bytes
        dst[r] = v
    return 0


cdef void _row_at(object obj, bint stacked, Py_ssize_t r, mli_tensor *dst) noexcept:
    """Row r's view of `obj` as _row_views makes it (which has validated `obj`)."""
    cdef CTensor t
    cdef unsigned long long count = 1, es
    cdef uint32_t i
    if isinstance(obj, list):
        dst[0] = (<CTensor>obj[r]).t
        return
    t = obj
    dst[0] = t.t
    if not stacked:
        return
    for i in range(1, t.t.rank):
        count *= t.t.shape[i]
    es = 2 if t.t.el_type == MLI_EL_FX_16 else (4 if t.t.el_type == MLI_EL_ASYM_I32 else 1)
    dst.rank = t.t.rank - 1
    for i in range(4):
        dst.shape[i] = t.t.shape[i + 1] if i + 1 < 4 else 0
    dst.capacity = <uint32_t>(count * es)
    dst.data = <char *>t.t.data + r * count * es


def check_rows(bint lstm, int variant, Py_ssize_t rows, object inp, object prev_out, bint prev_rows,
               CTensor weights, CTensor bias, int mode, int act, CTensor ir, object cell, bint cell_rows,
               CTensor out):
    """Each row's kernel checks, as cell_rows runs them first, before the
    caller allocates what the shapes ask for: `ir` or `out` None stands for
    the one about to be allocated (see check_cell); `cell` is the caller's
    (stacked when cell_rows, else shared by every row).  No memory is taken
    per row.  Returns (status, failed_row)."""
    cdef int v = _variant(variant, 3)
    cdef mli_tensor r_in, r_prev, r_cell, r_out
    cdef Py_ssize_t r
    cdef int st
    if rows < 1 or rows > MAX_ROWS:
        raise BridgeError("rows", f"must be in 1..{MAX_ROWS}, got {rows}")
    _row_views("in", inp, True, False, rows, NULL)
    _row_views("prev_out", prev_out, prev_rows, False, rows, NULL)
    if out is not None:
        _row_views("out", out, True, True, rows, NULL)
    if lstm:
        _row_views("cell", cell, cell_rows, False, rows, NULL)
    for r in range(rows):
        _row_at(inp, True, r, &r_in)
        _row_at(prev_out, prev_rows, r, &r_prev)
        if out is not None:
            _row_at(out, True, r, &r_out)
        if lstm:
            _row_at(cell, cell_rows, r, &r_cell)
        st = _check_cell_c(lstm, v, &r_in, &r_prev, tp(weights), tp(bias), mode, act, tp(ir),
                           &r_cell if lstm else NULL, &r_out if out is not None else NULL, ir is None, out is None)
        if st != 0:
            return st, <int>r
    return 0, -1


def cell_rows(bint lstm, int variant, Py_ssize_t rows, object inp, object prev_out, bint prev_rows,
              CTensor weights, CTensor bias, int mode, int act, CTensor ir, CTensor cell, CTensor out):
    """One mlipy_*_cell_rows_* call over stacked tensors (in, out and cell
    with the rows on their first axis; prev_out stacked when prev_rows, else
    shared; in and prev_out may be lists of row tensors).  Returns (status,
    failed_row, row 0's out frac bits)."""
    cdef int v = _variant(variant, 3)
    cdef lstm_rows_fn fl = LSTM_ROWS[v]
    cdef rnn_rows_fn fr = RNN_ROWS[v]
    cdef mli_rnn_cell_cfg cfg
    cdef mli_status st
    cdef int bad = -1
    cdef int n
    if rows < 1 or rows > MAX_ROWS:
        raise BridgeError("rows", f"must be in 1..{MAX_ROWS}, got {rows}")
    n = <int>rows
    _cfg(&cfg, mode, act, ir)
    cdef mli_tensor *views = <mli_tensor *>PyMem_Malloc(4 * rows * sizeof(mli_tensor))
    if views == NULL:
        raise MemoryError(f"no memory for {rows} rows")
    cdef mli_tensor *v_in = views
    cdef mli_tensor *v_prev = views + rows
    cdef mli_tensor *v_out = views + 2 * rows
    cdef mli_tensor *v_cell = views + 3 * rows
    cdef mli_tensor *p_w = tp(weights)
    cdef mli_tensor *p_b = tp(bias)
    try:
        _row_views("in", inp, True, False, rows, v_in)
        _row_views("prev_out", prev_out, prev_rows, False, rows, v_prev)
        _row_views("out", out, True, True, rows, v_out)
        if lstm:
            _row_views("cell", cell, True, True, rows, v_cell)
        keys = _claim(("cell", "out"), (cell if lstm else None, out))
        try:
            with nogil:
                mlipy_set_poll(_poll)
                if lstm:
                    st = fl(n, v_in, v_prev, p_w, p_b, &cfg, v_cell, v_out, &bad)
                else:
                    st = fr(n, v_in, v_prev, p_w, p_b, &cfg, v_out, &bad)
                mlipy_set_poll(NULL)
        finally:
            _release(keys)
        _reraise(st)
        return <int>st, bad, v_out[0].el_params.fx.frac_bits
    finally:
        PyMem_Free(views)
