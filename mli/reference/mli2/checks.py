"""The check building blocks of SPEC_MLI2 section 13.1; each returns a status (0 =
pass).  Each kernel family's own checks (13.2-13.5) are in its module."""

from .codes import _EL_SIZE, BAD_TENSOR, INCOMPATEBLE_TENSORS, INT31, NOT_ENGH_MEM, OK
from .fxmath import _i, rshr
from .tensor import _dense_strides


# Section 13.1: the check building blocks.  Each returns a status (0 = pass).

def _i32(v):
    """v modulo 2^32 as a signed 32-bit number (MLI's int arithmetic on x86)."""
    return (int(v) + 2 ** 31) % 2 ** 32 - 2 ** 31


def _check_tensor(t):
    """TENSOR(t).  MLI computes steps 4 and 5 in 32 bits: the products and the
    sum wrap around and are compared as signed numbers, so a tensor reaching
    past its capacity can pass (the kernels then refuse it: _check_reach)."""
    if t is None or t.buf is None:
        return BAD_TENSOR
    if t.rank > 4 or t.capacity > INT31:
        return BAD_TENSOR
    for i in range(t.rank):
        if t.mem_stride[i] <= 0 or t.shape[i] == 0 or t.shape[i] > INT31:
            return BAD_TENSOR
    for i in range(t.rank - 1, -1, -1):
        inner = _i32(t.shape[i + 1] * t.mem_stride[i + 1]) if i + 1 < t.rank else 1
        if t.mem_stride[i] < inner:
            return BAD_TENSOR
    span = _i32(1 + sum((t.shape[i] - 1) * t.mem_stride[i] for i in range(t.rank)))
    if t.capacity < _i32(span * _EL_SIZE.get(t.el_type, 0)):
        return NOT_ENGH_MEM
    return OK


def _check_reach(kernel, *tensors_elems):
    """After MLI's checks pass: each (tensor, elements accessed) must fit its
    capacity; otherwise MLI, its 32-bit size check having wrapped around,
    would access memory outside the buffer (ValueError: no defined answer)."""
    for t, elems in tensors_elems:
        if elems * _EL_SIZE.get(t.el_type, 0) > t.capacity:
            raise ValueError(f"{kernel}: elements beyond the capacity pass MLI's 32-bit size check "
                             "(it would access memory outside the buffer)")


def _span(t):
    return 1 + sum((t.shape[i] - 1) * t.mem_stride[i] for i in range(t.rank))


def _check_quant(t, data):
    """QUANT(t, range): `data` True for data tensors ([-128, 127]), else zero point {0}."""
    if not t.is_sa():
        return OK
    if t.sa_dim >= 0:
        if t.sa_dim >= t.rank:
            return BAD_TENSOR
        n = t.shape[t.sa_dim]
        if (t.zero_point_capacity < 2 * n or t.scale_capacity < 2 * n
                or t.scale_frac_bits_capacity < n):
            return BAD_TENSOR
    else:
        n = 1
        if t.zero_point_capacity or t.scale_capacity or t.scale_frac_bits_capacity:
            return BAD_TENSOR
    lo, hi = (-128, 127) if data else (0, 0)
    for k in range(n):
        if t.scale[k] <= 0:
            return BAD_TENSOR
        if not lo <= t.zero_point[k] <= hi:
            return INCOMPATEBLE_TENSORS
    return OK


def _inner1(t):
    return t.rank == 0 or (t.rank <= 4 and t.mem_stride[t.rank - 1] == 1)


def _contig(t):
    # MLI's dense strides wrap around in 32 bits too
    return t.rank == 0 or (t.rank <= 4 and t.strides() == [_i32(v) for v in _dense_strides(t.dims())])


def _ranges_overlap(buf_a, cap_a, buf_b, cap_b):
    a, b = buf_a.address, buf_b.address
    return a < b + cap_b and b < a + cap_a


def _overlap(a, b):
    """OVERLAP(a, b) of two tensors' data containers."""
    return _ranges_overlap(a.buf, a.capacity, b.buf, b.capacity)


def _bias_scale_ok(inp, w, b, rounding):
    """BIASSCALE(in, w, b): the bias scale must be in.scale * w.scale within 1."""
    n = w.shape[w.sa_dim] if w.per_axis() else 1
    _, s_in, f_in = inp.sa()
    for k in range(n):
        _, s_w, f_w = w.sa(k)
        _, s_b, f_b = b.sa(k)
        e = s_in * s_w
        sh = f_in + f_w - f_b
        e = _i(rshr(e, sh, 32, rounding)) if sh > 0 else e * 2 ** -sh
        if abs(e - s_b) > 1:
            return False
    return True


def _first(statuses):
    """The first non-zero status of a lazy sequence of checks (later ones do not run)."""
    return next((st for st in statuses if st), OK)
