"""Slow numpy model of the MLI 2.0.2 recurrent kernels (``shared/spec/SPEC_MLI2.md``).

The hypothesis oracle of the 2.x kernels, as :mod:`mli.reference` is for 1.1.
It needs numpy only (no compiled part of mli) and follows the specification
step by step; section numbers in the comments refer to it.

Model of the C API
------------------
A kernel takes :class:`Tensor` objects (``None`` = a NULL tensor pointer), a
cfg object (``None`` = NULL), :class:`Lut` objects and the rounding mode; it
returns the ``mli_status`` code the checked (``DBG_MODE_RET_CODES``) build
returns and, on success, writes the output elements (and the LSTM cell) into
the tensors' buffers and rewrites the output metadata as MLI does.  A
:class:`Buffer` is a byte array with a made-up address, so that two tensors
may share one (in-place calls, the overlap checks).

Arithmetic
----------
Values are int64 numpy arrays; every operation names the width W it models
(``sat(x, 32)`` is SAT_32 ...).  All intermediate values fit in int64: the
widest products are 32 x 32 bits, and the 64-bit saturations are computed
without overflowing.  ``rounding`` is ``"convergent"`` (ROUND_MODE=CONVERGENT,
ties to even) or ``"up"`` (ROUND_MODE=UP, add the half with saturation).
Where C's result is implementation defined (32-bit wrap-around), the model
does what gcc on x86 does, as the specification says.

Calls on which MLI crashes or reads out of bounds (SPEC 16.4: rank-0
tanh/sigm, a NULL cfg in the cells, a NULL out in rnn_dense, a LUT object
whose creation failed) raise ``ValueError`` instead of returning a status.

Example (one fx16 tanh)::

    lut = Lut(capacity=get_lut_size("tanh")); create_lut("tanh", lut)
    x = Tensor.from_array(np.array([4288, -1]), FX_16, frac_bits=12)
    y = Tensor.from_array(np.zeros(2), FX_16)
    assert tanh("fx16", x, lut, y, "up") == OK    # y.read() -> [25576, -8], y.frac_bits 15

:mod:`.mli2_cases` runs the case files of ``shared/vectors/mli20`` through it.
"""

import functools
import math
import zlib
from dataclasses import dataclass, field

import numpy as np

ROUNDING_MODES = ("convergent", "up")

# mli_status (section 3.6)
OK = 0
BAD_TENSOR = 1
SHAPE_MISMATCH = 2
INCOMPATEBLE_TENSORS = 3     # MLI's spelling
BAD_FUNC_CFG = 4
NOT_ENGH_MEM = 5
TYPE_MISMATCH = 12

# mli_element_type codes (section 3.1)
FX_8, FX_16, SA_8, SA_32 = 0x8, 0x10, 0x108, 0x120
_EL_SIZE = {FX_8: 1, SA_8: 1, FX_16: 2, SA_32: 4, 0x220: 4}   # FP_32 too; other codes 0
_CONTAINER = {FX_8: np.int8, SA_8: np.int8, FX_16: np.int16, SA_32: np.int32}

# cfg enums (section 3.7)
RNN_DIR_FORWARD, RNN_DIR_BACKWARD = 0, 1
RNN_OUT_LAST, RNN_OUT_ALL = 0, 1
RNN_ACT_NONE, RNN_ACT_TANH, RNN_ACT_SIGM = 0, 1, 2
RELU_NONE, RELU_GEN, RELU_1, RELU_6 = 0, 1, 2, 3
RNN_MAX_INPUT = 4

#: (data type, weight type, bias type) of each kernel kind.
KIND_TYPES = {
    "fx16": (FX_16, FX_16, FX_16),
    "fx16_fx8_fx8": (FX_16, FX_8, FX_8),
    "fx8": (FX_8, FX_8, FX_8),
    "sa8_sa8_sa32": (SA_8, SA_8, SA_32),
    "sa8_sa8_sa32_ext_bias": (SA_8, SA_8, SA_32),
}

INT31 = 2 ** 31 - 1


def check_rounding(rounding):
    """Return `rounding` if it is a supported mode, else raise ``ValueError``."""
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"rounding must be one of {ROUNDING_MODES}, got {rounding!r}")
    return rounding


# ---------------------------------------------------------------------------
# Section 2: shifts, rounding, saturation on int64 arrays.
# Every function takes arrays (or scalars, broadcast) and returns a 1-d or
# larger int64 array, never a numpy scalar: scalar int64 arithmetic warns on
# the wrap-around that the 64-bit saturations below deliberately discard.

def _arr(x):
    if type(x) is np.ndarray and x.dtype == np.int64 and x.ndim:   # the common case, no copy
        return x
    return np.atleast_1d(np.asarray(x, dtype=np.int64))


def _limits(w):
    return -(1 << (w - 1)), (1 << (w - 1)) - 1


def sat(x, w):
    """SAT_W: clamp to the signed W-bit range."""
    lo, hi = _limits(w)
    return np.minimum(np.maximum(_arr(x), lo), hi)


def wrap(x, w):
    """WRAP_W: reduce modulo 2^W into the signed range (a C narrowing on gcc)."""
    x = _arr(x)
    if w == 64:
        return x
    low = x & ((1 << w) - 1)
    return np.where(low >= (1 << (w - 1)), low - (1 << w), low)


def add_sat(a, b, w):
    """ADD_W: a + b saturated to W bits (a, b are W-bit values)."""
    a, b = _arr(a), _arr(b)
    if w < 64:
        return sat(a + b, w)                               # cannot overflow int64
    # 64 bits: find the overflowing lanes without computing an overflowing
    # bound; their (wrapped) sum is discarded.
    lo, hi = _limits(w)
    over = a > hi - np.maximum(b, 0)
    under = a < lo - np.minimum(b, 0)
    with np.errstate(over="ignore"):
        s = a + b
    return np.where(over, hi, np.where(under, lo, s))


def sub_sat(a, b, w):
    """SUB_W (only used with W <= 32, where -b cannot overflow)."""
    assert w <= 32
    return add_sat(a, -_arr(b), w)


# The shifts take a scalar n (the common case, a short path) or an array of
# per-element shifts (per-channel sa8 parameters), broadcast against x.

def shl(x, n, w):
    """SHL_W(x, n), n >= 0: saturating left shift."""
    x = _arr(x)
    lo, hi = _limits(w)
    if np.ndim(n) == 0:
        n = int(n)
        assert n >= 0
        if n > w - 1:                                      # every non-zero x saturates
            return np.where(x > 0, hi, np.where(x < 0, lo, 0))
        with np.errstate(over="ignore"):
            return np.where(x > hi >> n, hi, np.where(x < lo >> n, lo, x << n))
    x, n = np.broadcast_arrays(x, _arr(n))
    assert (n >= 0).all()
    nn = np.minimum(n, 63)
    over = x > (np.int64(hi) >> nn)
    under = x < (np.int64(lo) >> nn)
    with np.errstate(over="ignore"):
        r = np.where(over, hi, np.where(under, lo, x << nn))
    # n > W-1: every non-zero x saturates (hi >> n = 0 and lo >> n = -1 would let x = -1 through)
    return np.where(n > w - 1, np.where(x > 0, hi, np.where(x < 0, lo, 0)), r)


def asr(x, n, w):
    """ASR_W(x, n): floor(x / 2^n); n < 0 is SHL_W(x, -n); n > W-1 gives -1 or 0."""
    x = _arr(x)
    if np.ndim(n) == 0:
        n = int(n)
        return shl(x, -n, w) if n < 0 else x >> min(n, 63)
    x, n = np.broadcast_arrays(x, _arr(n))
    left = shl(x, np.maximum(-n, 0), w)
    return np.where(n < 0, left, x >> np.clip(n, 0, 63))


def _round_even(x, n, half):
    """CONVERGENT RSHR for 1 <= n <= W-1 (the plus one cannot overflow)."""
    q = x >> n
    mask = (1 << n) - 1 if np.ndim(n) == 0 else (np.int64(1) << n) - 1   # n <= 63: fits int64
    rem = x & mask
    # ties to even: an exact half rounds up only from an odd floor
    return q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))


def rshr(x, n, w, rounding):
    """RSHR_W(x, n): the library's one rounding shift (section 2.2)."""
    x = _arr(x)
    up_mode = check_rounding(rounding) == "up"
    if np.ndim(n) == 0:
        n = int(n)
        if n < 0:
            return shl(x, -n, w)
        if n == 0:
            return x
        if n > w - 1:
            return np.zeros_like(x)                        # also for negative x
        half = 1 << (n - 1)
        if up_mode:
            # add the half saturating in W bits, then floor: near the maximum it rounds down
            return add_sat(x, half, w) >> n
        return _round_even(x, n, half)
    x, n = np.broadcast_arrays(x, _arr(n))
    nn = np.clip(n, 1, w - 1)
    half = np.int64(1) << (nn - 1)
    r = (add_sat(x, half, w) >> nn) if up_mode else _round_even(x, nn, half)
    r = np.where(n > w - 1, 0, r)
    r = np.where(n == 0, x, r)
    return np.where(n < 0, shl(x, np.maximum(-n, 0), w), r)


def norm32(x):
    """NORM: redundant sign bits of a 32-bit value (31 for 0 and -1)."""
    x = _arr(x)
    y = np.where(x < 0, ~x, x)                            # 0 <= y < 2^31, exact in float64
    return 31 - np.frexp(y.astype(np.float64))[1].astype(np.int64)


def div_trunc(a, b):
    """DIV: C integer division (toward zero) of Python ints."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _i(x):
    """The single value of a one-element result as a Python int."""
    a = np.asarray(x).reshape(-1)
    assert a.size == 1
    return int(a[0])


# ---------------------------------------------------------------------------
# Section 4: LUT objects and their tables.

#: length, input_offset, in_frac_bits, function of the two tables (4.2).
_TABLES = {
    "tanh": (344, 172, 5, math.tanh),
    "sigm": (320, 160, 4, lambda t: 1.0 / (1.0 + math.exp(-t))),
}
#: CRC-32 of the little-endian int16 table and sum of its entries (4.2).
LUT_CHECKS = {"tanh": (0x4CBBF8B6, -32767), "sigm": (0x589D26EB, 5226497)}


@functools.cache
def _table(name):
    length, offset, q, func = _TABLES[name]
    values = []
    for i in range(length):
        y = func((i - offset) / 2.0 ** q) * 32768.0
        y = math.trunc(y + 0.5) if y > 0 else math.trunc(y - 0.5)   # half away from zero
        values.append(min(max(y, -32768), 32767))
    table = np.array(values, dtype="<i2")
    crc, total = LUT_CHECKS[name]
    # every fraction is far from one half, so any correct libm gives these bytes
    if zlib.crc32(table.tobytes()) != crc or int(table.astype(np.int64).sum()) != total:
        raise RuntimeError(f"the {name} table does not match SPEC_MLI2 4.2's checksum")
    table.setflags(write=False)
    return table


def lut_table(name):
    """The Q15 table of "tanh" or "sigm" as an int16 array (a copy)."""
    return _table(name).astype(np.int16)


def get_lut_size(name):
    """``mli_krn_{tanh,sigm}_get_lut_size()``: bytes of the table (688 / 640)."""
    return 2 * _TABLES[name][0]


@dataclass
class Lut:
    """``mli_lut``: the caller's storage capacity plus what create_lut writes.

    ``table`` is None until a successful create (the C object then holds only
    its ``type``)."""
    capacity: int
    table: object = None
    type: int = 0
    length: int = 0
    in_frac_bits: int = 0
    out_frac_bits: int = 0
    input_offset: int = 0
    output_offset: int = 0


def create_lut(name, lut):
    """``mli_krn_{name}_create_lut(lut)``: fill `lut`, return the status (4.1)."""
    lut.type = FX_16                                       # written before the capacity check
    if lut.capacity < get_lut_size(name):
        return NOT_ENGH_MEM
    length, offset, q, _ = _TABLES[name]
    lut.table = _table(name).astype(np.int64)
    lut.length, lut.input_offset, lut.in_frac_bits = length, offset, q
    lut.output_offset, lut.out_frac_bits = 0, 15
    return OK


def lut_lookup(x, f, lut, rounding):
    """LUT(x, f, T) of section 5.1: Q15 values of 32-bit inputs x with f frac bits."""
    if lut.table is None:
        raise ValueError("LUT object was never filled (its create_lut failed): MLI reads out of bounds")
    x = _arr(x)
    t, n, off, q = lut.table, lut.length, lut.input_offset, lut.in_frac_bits
    s = f - q
    if min(s, 15) > 0:                                    # input finer than the table: interpolate
        pre = min(max(s - 15, 0), 15)
        s = min(s, 15)
        xs = asr(x, pre, 32)
        k = np.clip(sat(asr(xs, s, 32) + off, 32), 0, n - 2)
        fr = xs & ((1 << s) - 1)                          # from the unclamped xs
        a = t[k]
        d = wrap(a - t[k + 1], 16)
        return wrap(a - sat(rshr(d * fr, s, 32, rounding), 16), 16)
    k = np.clip(sat(shl(x, -s, 32) + off, 32), 0, n - 1)
    return t[k].copy()


# ---------------------------------------------------------------------------
# Section 3: tensors and buffers.

_next_address = [1 << 32]


@dataclass(eq=False)
class Buffer:
    """Raw bytes of one allocation, at a made-up address unique to it.

    Addresses are 2^32 apart, so distinct buffers never overlap (MLI's
    overlap check compares the low 32 bits [x86]; separate mallocs agree)."""
    raw: np.ndarray
    address: int = 0

    @classmethod
    def of(cls, data, nbytes=0):
        """A buffer holding `data`'s bytes, at least `nbytes` long (zero filled)."""
        data = np.ascontiguousarray(data)
        size = max(int(nbytes), data.nbytes)
        raw = np.zeros(-(-size // 8) * 8 or 8, dtype=np.uint8)   # views of every width
        raw[:data.nbytes] = data.view(np.uint8).reshape(-1)
        _next_address[0] += 1 << 32
        return cls(raw, _next_address[0])

    def view(self, el_type):
        return self.raw.view(_CONTAINER[el_type])


@dataclass(eq=False)
class Tensor:
    """``mli_tensor`` of 2.x.  ``buf`` None = a NULL data pointer.

    SA parameters are lists: one value per tensor (``sa_dim`` < 0, held
    inline in C, container capacities 0) or ``shape[sa_dim]`` values.
    ``frac_bits`` of an SA tensor is what C reads through the ``el_params``
    union: the low byte of ``sa.type`` (0 for ``MLI_EL_PARAM_SC16_ZP16``)."""
    el_type: int
    rank: int
    shape: list
    mem_stride: list
    capacity: int
    buf: object = None
    frac_bits: int = 0
    sa_dim: int = -1
    zero_point: list = field(default_factory=lambda: [0])
    scale: list = field(default_factory=lambda: [1])
    scale_frac_bits: list = field(default_factory=lambda: [0])
    zero_point_capacity: int = 0
    scale_capacity: int = 0
    scale_frac_bits_capacity: int = 0

    @classmethod
    def from_array(cls, values, el_type, frac_bits=0, zero_point=0, scale=1, scale_frac_bits=0,
                   sa_dim=-1):
        """A dense tensor holding `values` (its shape, rank <= 4) in a buffer of its own.

        SA parameters: scalars per tensor, or sequences with ``sa_dim`` >= 0
        (their capacities are then set to cover them)."""
        values = np.asarray(values)
        dims = list(values.shape)
        data = values.astype(_CONTAINER[el_type])
        t = cls(el_type=el_type, rank=len(dims), shape=dims + [0] * (4 - len(dims)),
                mem_stride=_dense_strides(dims) + [0] * (4 - len(dims)),
                capacity=data.nbytes, buf=Buffer.of(data), frac_bits=int(frac_bits))
        if el_type in (SA_8, SA_32):
            t.sa_dim = int(sa_dim)
            lists = [[int(v) for v in np.atleast_1d(p)] for p in (zero_point, scale, scale_frac_bits)]
            t.zero_point, t.scale, t.scale_frac_bits = lists
            if sa_dim >= 0:
                n = len(lists[1])
                t.zero_point_capacity, t.scale_capacity, t.scale_frac_bits_capacity = 2 * n, 2 * n, n
        return t

    # -- helpers of section 3.5 --
    def dims(self):
        return [int(v) for v in self.shape[:self.rank]]

    def strides(self):
        return [int(v) for v in self.mem_stride[:self.rank]]

    def count(self):
        return int(np.prod(self.dims(), dtype=object)) if self.rank else 1

    def is_sa(self):
        return self.el_type in (SA_8, SA_32)

    def per_axis(self):
        return self.is_sa() and self.sa_dim >= 0

    def sa(self, k=0):
        """(zero point, scale, scale_frac_bits) of entry k (entry 0 per tensor)."""
        k = k if self.per_axis() else 0
        return int(self.zero_point[k]), int(self.scale[k]), int(self.scale_frac_bits[k])

    def shift(self, k=0):
        """frac_bits (FX) or scale_frac_bits of entry k (SA)."""
        return self.sa(k)[2] if self.is_sa() else int(self.frac_bits)

    def fmt(self):
        """The format the element-wise steps use: frac bits (FX) or the sa triple."""
        return self.sa() if self.is_sa() else int(self.frac_bits)

    def read(self):
        """Logical elements, int64 array of shape ``dims()`` (through the strides)."""
        return self.buf.view(self.el_type)[_offsets(self.dims(), self.strides())].astype(np.int64)

    def write(self, values, start=0):
        """Store `values` (already in range) at the logical positions, from element `start`."""
        view = self.buf.view(self.el_type)
        info = np.iinfo(view.dtype)
        values = np.asarray(values)
        if values.size and (values.min() < info.min or values.max() > info.max):
            raise AssertionError("value outside the container: a saturation is missing")
        view[start + _offsets(list(values.shape), _dense_strides(list(values.shape)))] = values


def _offsets(dims, strides):
    off = np.zeros((), dtype=np.int64)
    for n, s in zip(dims, strides):
        off = off[..., None] + np.arange(n, dtype=np.int64) * s
    return off


def _dense_strides(dims):
    out, acc = [], 1
    for n in reversed(dims):
        out.append(acc)
        acc *= n
    return out[::-1]


@dataclass
class RnnCellCfg:
    """``mli_rnn_cell_cfg``; ``scratch_buf`` None is a NULL scratch pointer."""
    direction: int = RNN_DIR_FORWARD
    results: int = RNN_OUT_ALL
    act: int = RNN_ACT_TANH
    scratch_buf: object = None
    scratch_capacity: int = 0


@dataclass
class RnnDenseCfg:
    inputs_num: int = 1


@dataclass
class FullyConnectedCfg:
    relu_type: int = RELU_NONE


# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Section 6: sa8 requantisation blocks (scalar parameters as Python ints).

@functools.lru_cache(maxsize=4096)
def ratio(s_in, f_in, s_out, f_out, rounding):
    """RATIO(in, out) of 6.1: (int16 mantissa, shift)."""
    n1 = _i(norm32(s_in))
    u = div_trunc(_i(shl(s_in, n1, 32)), s_out)
    n2 = _i(norm32(u))
    r = _i(sat(rshr(u, 16 - n2, 32, rounding), 16))
    return r, f_in + n1 - f_out - (16 - n2)


@functools.lru_cache(maxsize=4096)
def mult(r, shift, w_scale, w_shift):
    """MULT(ratio, shift, w) of 6.2 (FULL_ACCU=OFF): multiplier normalised to bit 30."""
    m = r * w_scale                                       # int16 x int16: fits 32 bits
    sh = shift + w_shift
    k = _i(norm32(m))
    return m * 2 ** k, sh + k


def bias_preround(b):
    """6.3: an int32 sa8 bias keeps its 16 most significant bits (floor)."""
    b = _arr(b)
    k = np.maximum(16 - norm32(b), 0)
    return asr(b, k, 32) << k


def req(acc, m, sh, rounding):
    """REQ of 6.4: SAT_32(RSHR_64(acc * m, min(sh, 63))), exact 64-bit product."""
    return sat(rshr(_arr(acc) * m, np.minimum(sh, 63), 64, rounding), 32)


def fcq(acc, m, sh, rounding):
    """FCQ of 6.5 (FULL_ACCU=OFF): the FC output cast with a 16-bit multiplier.

    `m` and `sh` may be per-output arrays."""
    m16 = rshr(m, 16, 32, rounding)
    sh = _arr(sh) - 16
    p = np.clip(sh - 21, 0, 8)                            # pre-shift of the accumulator
    a = sat(rshr(acc, p, 32, rounding), 16)
    return sat(rshr(a * m16, np.minimum(sh - p, 63), 64, rounding), 16)


# ---------------------------------------------------------------------------
# Section 10: element-wise steps of the cells.  FX formats are frac bits,
# sa8 formats (zero point, scale, scale_frac_bits) triples.

def fx_mul(a, fa, b, fb, fo, rounding):
    return sat(rshr(_arr(a) * _arr(b), min(fa + fb - fo, 31), 64, rounding), 16)


def fx_add(a, fa, b, fb, fo, rounding, sub=False):
    # the coarser operand is left-shifted (saturating, 32 bits) to the finer format
    a32 = rshr(a, min(fa - fb, 0), 32, rounding)
    b32 = rshr(b, min(fb - fa, 0), 32, rounding)
    s = sub_sat(a32, b32, 32) if sub else add_sat(a32, b32, 32)
    return sat(rshr(s, min(max(fa, fb) - fo, 31), 64, rounding), 16)


@functools.lru_cache(maxsize=4096)
def _sa_factor(s, so, shift, cap, rounding):
    """Shared preparation of MUL / ADD: the 16-bit factor c and its shift (10.2).

    `cap` is 31 (MUL) or 23 (ADD): the largest shift kept after moving the
    excess into c."""
    n = _i(norm32(s))
    v = div_trunc(_i(shl(s, n, 32)), so)
    shift = shift + n
    nv = _i(norm32(v))
    c = _i(sat(rshr(v, 16 - nv, 32, rounding), 16))
    shift -= 16 - nv
    e = max(shift - cap, 0) + min(shift + 31, 0)
    return _i(rshr(c, e, 16, rounding)), shift - e


def sa_mul(a, fmt_a, b, fmt_b, fmt_o, rounding):
    (za, sa_, fa), (zb, sb, fb), (zo, so, fo) = fmt_a, fmt_b, fmt_o
    c, post = _sa_factor(sa_ * sb, so, fa + fb - fo, 31, rounding)
    p = sub_sat(a, za, 16) * sub_sat(b, zb, 16)
    pre = min(max(post - 21, 0), 3)
    t = sat(rshr(p, pre, 32, rounding), 16)
    t = sat(rshr(t * c, post - pre, 32, rounding), 16)
    return sat(add_sat(t, zo, 16), 8)


def sa_add(a, fmt_a, b, fmt_b, fmt_o, rounding, sub=False):
    (za, sa_, fa), (zb, sb, fb), (zo, so, fo) = fmt_a, fmt_b, fmt_o
    ca, pre_a = _sa_factor(sa_, so, fa - fo, 23, rounding)
    cb, pre_b = _sa_factor(sb, so, fb - fo, 23, rounding)
    x = rshr(sub_sat(a, za, 16) * ca, pre_a, 32, rounding)
    y = rshr(sub_sat(b, zb, 16) * cb, pre_b, 32, rounding)
    s = sub_sat(x, y, 32) if sub else add_sat(x, y, 32)
    return sat(add_sat(sat(s, 16), zo, 16), 8)


def elt_mul(a, fa, b, fb, fo, rounding):
    """MUL of either family, chosen by the format type."""
    if isinstance(fo, tuple):
        return sa_mul(a, fa, b, fb, fo, rounding)
    return fx_mul(a, fa, b, fb, fo, rounding)


def elt_add(a, fa, b, fb, fo, rounding, sub=False):
    if isinstance(fo, tuple):
        return sa_add(a, fa, b, fb, fo, rounding, sub)
    return fx_add(a, fa, b, fb, fo, rounding, sub)


# ---------------------------------------------------------------------------
# Section 5: tanh and sigm.

#: sa8 output parameters of the two kernels (5.2).
SA_TANH_OUT = (0, 1, 7)
SA_SIGM_OUT = (-128, 1, 8)


def activation(func, x, fmt, lut, rounding):
    """The transfer of a kernel of function `func` on values x of format `fmt`.

    FX (fmt = frac bits): the Q15 lookup.  sa8 (fmt = triple): 5.2's sa8 path,
    output in the parameters of `func` whatever table `lut` holds."""
    if not isinstance(fmt, tuple):
        return lut_lookup(x, fmt, lut, rounding)
    zp, s, f = fmt
    big_f = 8 + lut.in_frac_bits                          # 13 (tanh table) or 12 (sigm table)
    v = wrap(_arr(x) - zp, 16) * s
    r = lut_lookup(rshr(v, f - big_f, 32, rounding), big_f, lut, rounding)
    if func == "tanh":
        return sat(rshr(r, 8, 32, rounding), 8)
    return sat(rshr(r, 7, 32, rounding) - 128, 8)


def _check_transfer(kind, inp, out):
    """13.5."""
    st = _check_tensor(inp) or _check_tensor(out)
    if st:
        return st
    if out.el_type != inp.el_type:
        return TYPE_MISMATCH
    if inp.rank != out.rank or inp.dims() != out.dims():
        return SHAPE_MISMATCH
    if not _inner1(inp) or not _inner1(out):
        return INCOMPATEBLE_TENSORS
    if inp.el_type != {"fx8": FX_8, "fx16": FX_16, "sa8": SA_8}[kind]:
        return TYPE_MISMATCH
    if kind == "sa8":
        st = _check_quant(inp, True)
        if st:
            return st
        if inp.per_axis():
            return INCOMPATEBLE_TENSORS
    return OK


def _transfer(func, kind, inp, lut, out, rounding):
    check_rounding(rounding)
    st = _check_transfer(kind, inp, out)
    if st:
        return st
    if inp.rank == 0:
        raise ValueError("rank-0 tanh/sigm: MLI uses the stored value as an address (SPEC 3.4)")
    _check_reach(func, (inp, _span(inp)), (out, _span(out)))

    def transfer(x):
        if kind == "sa8":
            return activation(func, x, inp.sa(), lut, rounding).reshape(x.shape)
        y = lut_lookup(x, int(inp.frac_bits), lut, rounding).reshape(x.shape)
        return sat(rshr(y, 8, 16, rounding), 8).reshape(x.shape) if kind == "fx8" else y

    x = inp.read()
    y = transfer(x)
    src, dst = _offsets(inp.dims(), inp.strides()).reshape(-1), _offsets(out.dims(), out.strides()).reshape(-1)
    if out.buf is inp.buf and not np.array_equal(src, dst):
        # In place with other strides: element by element in logical order, MLI reads
        # element i after writing elements 0..i-1, which may have overwritten it.
        # writer[i]: the last k < i whose output lands on input i (-1: none).  The
        # system is triangular, so iterating to a fixed point gives the one answer.
        last = {}
        writer = np.full(src.size, -1)
        for i in range(src.size):
            writer[i] = last.get(int(src[i]), -1)
            last[int(dst[i])] = i
        x, y = x.reshape(-1), y.reshape(-1)
        hit = writer >= 0
        for _ in range(src.size):
            y_next = transfer(np.where(hit, y[writer], x))
            if np.array_equal(y_next, y):
                break
            y = y_next
    out.buf.view(out.el_type)[dst] = y.reshape(-1)
    if kind == "sa8":
        zp, s, f = SA_TANH_OUT if func == "tanh" else SA_SIGM_OUT
        out.sa_dim, out.zero_point, out.scale, out.scale_frac_bits = -1, [zp], [s], [f]
    else:
        out.frac_bits = 15 if kind == "fx16" else 7
    return OK


def tanh(kind, inp, lut, out, rounding="convergent"):
    """``mli_krn_tanh_<kind>(in, lut, out)``; kind "fx8", "fx16" or "sa8"."""
    return _transfer("tanh", kind, inp, lut, out, rounding)


def sigm(kind, inp, lut, out, rounding="convergent"):
    """``mli_krn_sigm_<kind>(in, lut, out)``."""
    return _transfer("sigm", kind, inp, lut, out, rounding)


# ---------------------------------------------------------------------------
# Section 7: the multi-input dense block.

def _is_sa_kind(kind):
    return kind.startswith("sa8")


def dense_part(kind, x, x_fmt, w, w_fmts, out_fmt, rounding, bias=None, bias_fmt=None):
    """One input of the section 7 block, requantised to the output format,
    for G independent weight sets at once (the gates of a cell).

    x (..., N) int64: leading axes are independent rows (the cells do every
    time step's input part in one call).  w (G, N, M) int64 and w_fmts its G
    formats, as for the element-wise steps (sa8: (0, scale, shift) of each
    gate).  The bias (G, M) goes into input 0's accumulator only, so it is
    passed with that input.  Returns the rounded parts, (G, ..., M)."""
    g = w.shape[0]

    def per_gate(a):                                      # (G, k) -> (G, 1, .., 1, k) against (G, ..., M)
        return a.reshape((g,) + (1,) * (x.ndim - 1) + a.shape[1:])

    dot = np.matmul(x, w)                                 # exact in int64 for these widths and sizes
    if _is_sa_kind(kind):
        acc = dot + (-x_fmt[0]) * per_gate(w.sum(axis=1))  # input zero point term
        if bias is not None:
            acc = acc + per_gate(bias_preround(bias))
        acc = wrap(acc, 32)                               # plain 32-bit additions [x86]
        r, shift = ratio(x_fmt[1], x_fmt[2], out_fmt[1], out_fmt[2], rounding)
        mults = [mult(r, shift, f[1], f[2]) for f in w_fmts]
        if len(set(mults)) == 1:                          # one multiplier for every gate
            m, sh = mults[0]
        else:
            m, sh = (per_gate(np.array(v, dtype=np.int64)[:, None]) for v in zip(*mults))
        return req(acc, m, sh, rounding)
    assert len(set(w_fmts)) == 1                          # FX: one frac_bits per tensor
    w_fmt = w_fmts[0]
    acc = dot
    if bias is not None:
        bs = x_fmt + w_fmt - bias_fmt                     # input 0's formats
        if kind == "fx16":
            acc = acc + per_gate(wrap(shl(bias, bs, 64), 32))   # shifted in 64 bits, truncated to 32 [x86]
        else:
            acc = acc + per_gate(shl(bias, bs, 32))
    sh = x_fmt + w_fmt - out_fmt
    if kind == "fx16":
        return rshr(acc, min(sh, 39), 64, rounding)
    return rshr(wrap(acc, 32), sh, 32, rounding)


def dense_sum(kind, parts, out_fmt):
    """Add the rounded parts with saturation, in input order from 0, then the final cast."""
    acc_bits = 64 if kind == "fx16" else 32
    res = np.zeros_like(parts[0])
    for part in parts:
        res = add_sat(res, part, acc_bits)
    if _is_sa_kind(kind):
        return sat(add_sat(sat(res, 16), out_fmt[0], 16), 8)
    return sat(res, 16)


def dense_block(kind, inputs, bias, bias_fmt, out_fmt, rounding):
    """Section 7 for one output vector: inputs is a list of (x, x_fmt, W, w_fmt).

    Returns the M outputs (int16 values for FX, int8 for sa8), before any
    activation.  Each input is rounded to the output format on its own."""
    parts = [dense_part(kind, x, x_fmt, w[None], [w_fmt], out_fmt, rounding,
                        *((bias[None], bias_fmt) if i == 0 else ()))[0]
             for i, (x, x_fmt, w, w_fmt) in enumerate(inputs)]
    return dense_sum(kind, parts, out_fmt)


# ---------------------------------------------------------------------------
# Section 8: fully_connected.

def _relu_limits(out, relu_type):
    """(lower, upper) of 10.4 from out's format and type."""
    lo, hi = (-128, 127) if out.el_type in (FX_8, SA_8) else (-32768, 32767)
    if out.is_sa():
        zero, scale, shift = out.sa()
    else:
        zero, scale, shift = 0, 1, int(out.frac_bits)
    if relu_type == RELU_GEN:
        return max(zero, lo), hi
    if relu_type == RELU_6:
        if 0 <= shift < 28:
            six = div_trunc(6 << shift, scale)
        elif shift >= 28:
            six = hi
        elif -3 < shift < 0:
            six = div_trunc(6 >> -shift, scale)
        else:
            six = 0
        return max(zero, lo), min(six + zero, hi)
    if relu_type == RELU_1:
        if 0 <= shift < 30:
            one = div_trunc(1 << shift, scale)
        elif shift >= 30:
            one = hi
        else:
            one = 0
        return max(-one + zero, lo), min(one + zero, hi)
    return lo, hi


def _check_fc(kind, inp, weights, bias, cfg, out, rounding):
    """13.2."""
    sa = _is_sa_kind(kind)
    if not sa:
        if (inp.el_type, weights.el_type, bias.el_type) != KIND_TYPES[kind]:
            return TYPE_MISMATCH
        if bias.frac_bits > inp.frac_bits + weights.frac_bits:
            return INCOMPATEBLE_TENSORS
        if out.frac_bits > inp.frac_bits + weights.frac_bits:
            return INCOMPATEBLE_TENSORS
    st = _first(_check_tensor(t) for t in (inp, weights, bias, out))
    if st:
        return st
    if out.el_type != inp.el_type:
        return TYPE_MISMATCH
    if cfg is None:
        return BAD_FUNC_CFG
    if (weights.rank != 2 or bias.rank != 1 or out.rank != 1 or inp.count() != weights.shape[0]
            or bias.shape[0] != weights.shape[1] or out.shape[0] != weights.shape[1]):
        return SHAPE_MISMATCH
    if not _contig(inp) or not _inner1(weights) or not _contig(bias) or out.mem_stride[0] != 1:
        return INCOMPATEBLE_TENSORS
    if _overlap(inp, out):
        return INCOMPATEBLE_TENSORS
    if not sa:
        return OK
    if (inp.el_type, weights.el_type, bias.el_type) != KIND_TYPES[kind]:
        return TYPE_MISMATCH
    st = _first(_check_quant(t, data) for t, data in
                ((inp, True), (out, True), (weights, False), (bias, False)))
    if st:
        return st
    if ((not weights.per_axis() and bias.per_axis())
            or (weights.per_axis() and (weights.sa_dim != 1 or bias.sa_dim != 0))):
        return INCOMPATEBLE_TENSORS
    if inp.per_axis() or out.per_axis():
        return INCOMPATEBLE_TENSORS
    if not _bias_scale_ok(inp, weights, bias, rounding):
        return INCOMPATEBLE_TENSORS
    return OK


def fully_connected(kind, inp, weights, bias, cfg, out, rounding="convergent"):
    """``mli_krn_fully_connected_<kind>(in, weights, bias, cfg, out)``.

    kind: "fx16", "fx16_fx8_fx8", "fx8", "sa8_sa8_sa32" or
    "sa8_sa8_sa32_ext_bias".  Writes out's M elements only."""
    check_rounding(rounding)
    if kind not in KIND_TYPES:
        raise ValueError(f"unknown fully_connected kind {kind!r}")
    st = _check_fc(kind, inp, weights, bias, cfg, out, rounding)
    if st:
        return st
    _check_reach("fully_connected", (inp, weights.shape[0]), (weights, _span(weights)), (bias, _span(bias)),
                 (out, out.shape[0]))
    x = inp.read().reshape(-1)
    w = weights.read()                                    # (N, M)
    b = bias.read()
    n_out = w.shape[1]
    if _is_sa_kind(kind):
        zp_in = 0 if kind.endswith("ext_bias") else inp.sa()[0]   # ext_bias: folded into the bias
        acc = wrap(x @ w + (-zp_in) * w.sum(axis=0), 32)
        acc = add_sat(acc, bias_preround(b), 32)          # bias last, saturating
        _, s_in, f_in = inp.sa()
        zp_out, s_out, f_out = out.sa()
        r, shift = ratio(s_in, f_in, s_out, f_out, rounding)
        mults = [mult(r, shift, *weights.sa(o)[1:]) for o in range(n_out)]
        m = np.array([v[0] for v in mults], dtype=np.int64)
        sh = np.array([v[1] for v in mults], dtype=np.int64)
        y = sat(add_sat(fcq(acc, m, sh, rounding), zp_out, 16), 8)
    else:
        bits = 64 if kind == "fx16" else 32
        bs = inp.frac_bits + weights.frac_bits - bias.frac_bits
        bias_term = wrap(shl(b, bs, 64), 32) if kind == "fx16" else shl(b, bs, 32)
        acc = add_sat(wrap(x @ w, bits), bias_term, bits)
        y = rshr(acc, inp.frac_bits + weights.frac_bits - out.frac_bits, bits, rounding)
        y = sat(y, 8 if kind == "fx8" else 16)
    lo, hi = _relu_limits(out, cfg.relu_type)
    out.write(np.clip(y, lo, hi))
    return OK


# ---------------------------------------------------------------------------
# Section 9: rnn_dense.

def _check_rnn_dense(kind, ins, weights, bias, cfg, out, rounding):
    """13.3."""
    if cfg is None or not 1 <= cfg.inputs_num <= RNN_MAX_INPUT:
        return BAD_FUNC_CFG
    n = cfg.inputs_num
    for i in range(n):
        st = _check_tensor(ins[i]) or _check_tensor(weights[i])
        if st:
            return st
        w = weights[i]
        if w.rank != 2 or ins[i].count() != w.shape[0] or w.shape[1] != weights[0].shape[1]:
            return SHAPE_MISMATCH
        if not _contig(ins[i]) or not _inner1(w):
            return INCOMPATEBLE_TENSORS
        if out is None:
            raise ValueError("rnn_dense with a NULL out: MLI dereferences it (SPEC 13.3)")
        if out.buf is not None and _overlap(ins[i], out):
            return INCOMPATEBLE_TENSORS
    st = _check_tensor(bias)
    if st:
        return st
    if bias.rank != 1 or bias.shape[0] != weights[0].shape[1]:
        return SHAPE_MISMATCH
    st = _check_tensor(out)
    if st:
        return st
    if out.rank != 1 or out.shape[0] != bias.shape[0]:
        return SHAPE_MISMATCH
    if out.el_type != ins[0].el_type:
        return TYPE_MISMATCH
    if not _inner1(bias) or not _contig(out):
        return INCOMPATEBLE_TENSORS
    d_type, w_type, b_type = KIND_TYPES[kind]
    if (any(ins[i].el_type != d_type for i in range(n))
            or any(weights[i].el_type != w_type for i in range(n)) or bias.el_type != b_type):
        return TYPE_MISMATCH
    if not _is_sa_kind(kind):
        if any(out.frac_bits > ins[i].frac_bits + weights[i].frac_bits for i in range(n)):
            return INCOMPATEBLE_TENSORS
        if bias.frac_bits > ins[0].frac_bits + weights[0].frac_bits:
            return INCOMPATEBLE_TENSORS
        return OK
    order = [(t, data) for i in range(n) for t, data in ((ins[i], True), (weights[i], False))]
    st = _first(_check_quant(t, data) for t, data in order + [(out, True), (bias, False)])
    if st:
        return st
    if any(t.per_axis() for t in (*ins[:n], *weights[:n], out, bias)):
        return INCOMPATEBLE_TENSORS
    if not _bias_scale_ok(ins[0], weights[0], bias, rounding):
        return INCOMPATEBLE_TENSORS
    return OK


def rnn_dense(kind, ins, weights, bias, cfg, out, rounding="convergent"):
    """``mli_krn_rnn_dense_<kind>(in[], weights[], bias, cfg, out)``.

    ins, weights: sequences of up to 4 tensors (None entries = NULL)."""
    check_rounding(rounding)
    ins = list(ins) + [None] * (RNN_MAX_INPUT - len(ins))
    weights = list(weights) + [None] * (RNN_MAX_INPUT - len(weights))
    st = _check_rnn_dense(kind, ins, weights, bias, cfg, out, rounding)
    if st:
        return st
    _check_reach("rnn_dense", *[(t, e) for i in range(cfg.inputs_num)
                                for t, e in ((ins[i], weights[i].shape[0]), (weights[i], _span(weights[i])))],
                 (bias, _span(bias)), (out, out.shape[0]))
    parts = [(ins[i].read().reshape(-1), ins[i].fmt(), weights[i].read(), weights[i].fmt())
             for i in range(cfg.inputs_num)]
    y = dense_block(kind, parts, bias.read(), bias.fmt(), out.fmt(), rounding)
    out.write(y)
    return OK


# ---------------------------------------------------------------------------
# Sections 11 and 12: LSTM and GRU cells.

def _check_cell(kernel, kind, inp, prev_out, w_in, w_out, bias, tanh_lut, sigm_lut, cfg, cell, out,
                rounding):
    """13.4 (cell is None for GRU; `kernel` "lstm_cell" or "gru_cell")."""
    lstm = kernel == "lstm_cell"
    g = 4 if lstm else 3
    if tanh_lut.capacity < get_lut_size("tanh") or sigm_lut.capacity < get_lut_size("sigm"):
        return NOT_ENGH_MEM
    st = _check_tensor(inp) or _check_tensor(prev_out)
    if st:
        return st
    if inp.rank != 2 or prev_out.rank != 1:
        return SHAPE_MISMATCH
    if not _contig(inp) or not _inner1(prev_out):
        return INCOMPATEBLE_TENSORS
    if cfg is None:
        raise ValueError(f"{kernel} with a NULL cfg: MLI dereferences it (SPEC 13.4)")
    n, m = inp.shape[1], prev_out.count()
    t_out = inp.shape[0] if cfg.results == RNN_OUT_ALL else 1
    st = _check_tensor(w_in) or _check_tensor(w_out)
    if st:
        return st
    if (w_in.rank != 3 or w_out.rank != 3 or w_in.dims() != [g, n, m]
            or w_out.dims() != [g, m, m]):
        return SHAPE_MISMATCH
    if not _inner1(w_in) or not _inner1(w_out):
        return INCOMPATEBLE_TENSORS
    st = _check_tensor(bias)
    if st:
        return st
    if bias.rank != 2 or bias.dims() != [g, m]:
        return SHAPE_MISMATCH
    if lstm:
        st = _check_tensor(cell)
        if st:
            return st
        if cell.rank != 1 or cell.shape[0] != m:
            return SHAPE_MISMATCH
    st = _check_tensor(out)
    if st:
        return st
    if out.el_type != inp.el_type:
        return TYPE_MISMATCH
    # the size test uses out's element size in LSTM and in's in GRU
    # both sizes are 32-bit products (wrapping), compared unsigned
    if (t_out * m * _EL_SIZE.get((out if lstm else inp).el_type, 0)) % 2 ** 32 > out.capacity:
        return BAD_TENSOR
    if cfg.scratch_buf is None or cfg.scratch_capacity < (g * m * _EL_SIZE.get(inp.el_type, 0)) % 2 ** 32:
        return BAD_FUNC_CFG
    if (lstm and not _inner1(cell)) or not _inner1(bias) or not _contig(out):
        return INCOMPATEBLE_TENSORS
    if _ranges_overlap(inp.buf, inp.capacity, cfg.scratch_buf, cfg.scratch_capacity):
        return INCOMPATEBLE_TENSORS
    data = [inp, out, prev_out] + ([cell] if lstm else [])
    d_type, w_type, b_type = KIND_TYPES[kind]
    if (any(t.el_type != d_type for t in data) or w_in.el_type != w_type
            or w_out.el_type != w_type or bias.el_type != b_type):
        return TYPE_MISMATCH
    if not _is_sa_kind(kind):
        if bias.frac_bits > inp.frac_bits + w_in.frac_bits:
            return INCOMPATEBLE_TENSORS
        return OK
    if (any(t.per_axis() for t in data)
            or (not w_in.per_axis() and (w_out.per_axis() or bias.per_axis()))
            or (w_in.per_axis() and (w_in.sa_dim != 0 or w_out.sa_dim != 0 or bias.sa_dim != 0))):
        return INCOMPATEBLE_TENSORS
    st = _first(_check_quant(t, is_data) for t, is_data in
               [(t, True) for t in data] + [(t, False) for t in (w_in, w_out, bias)])
    if st:
        return st
    if not _bias_scale_ok(inp, w_in, bias, rounding):
        return INCOMPATEBLE_TENSORS
    return OK


def _check_cell_reach(kernel, inp, prev_out, w_in, w_out, bias, cfg, cell, out):
    m = prev_out.count()
    t_out = inp.shape[0] if cfg.results == RNN_OUT_ALL else 1
    pairs = [(inp, _span(inp)), (prev_out, m), (w_in, _span(w_in)), (w_out, _span(w_out)), (bias, _span(bias)),
             (out, t_out * m)] + ([(cell, m)] if cell is not None else [])
    _check_reach(kernel, *pairs)
    if cfg.scratch_capacity < (4 if cell is not None else 3) * m * _EL_SIZE.get(inp.el_type, 0):
        raise ValueError(f"{kernel}: a scratch below gates * M elements passes MLI's 32-bit size check "
                         "(it would write outside the buffer)")


def _gate_weight_fmt(w, gate, gru_new_gate=False):
    """The format of weights `w` for `gate`: FX frac bits or (0, scale, shift).

    GRU quirk (12.4): with per-tensor sa8 weights the new gate reads scale + 4
    (16-bit wrap) and scale_frac_bits + 2 (8-bit wrap)."""
    if not w.is_sa():
        return int(w.frac_bits)
    _, s, f = w.sa(gate)
    if gru_new_gate and not w.per_axis():
        s = _i(wrap(s + 4, 16))
        f = _i(wrap(f + 2, 8))
    return 0, s, f


def _gate_weight_fmts(w, gates, gru=False):
    """The formats of weights `w` for each of `gates` (see _gate_weight_fmt)."""
    return [_gate_weight_fmt(w, g, gru and g == 2) for g in gates]


def _input_parts(kind, x_all, x_fmt, weights_in, bias, ir_fmt, direction, rounding, gru):
    """The input half of every gate's dense block, for all steps at once.

    It does not depend on h, and each input of a dense block is rounded on
    its own (section 7), so rounding all rows together is exact.  Returns a
    (G, T, M) array in processing order (BACKWARD reads row T-1 first)."""
    if direction == RNN_DIR_BACKWARD:
        x_all = x_all[::-1]
    gates = range(weights_in.shape[0])
    return dense_part(kind, x_all, x_fmt, weights_in.read(), _gate_weight_fmts(weights_in, gates, gru),
                      ir_fmt, rounding, bias.read(), bias.shift())


def _step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, direction, step, rounding, gru, gates):
    """The input half of `gates` for one step, read from in's buffer as it is now:
    with out over in's container MLI reads each step's row after writing the
    outputs before it (and, in the GRU, z*h of the step; section 16.5)."""
    x_all = inp.read()
    row = x_all.shape[0] - 1 - step if direction == RNN_DIR_BACKWARD else step
    w = weights_in.read()[list(gates)]
    return dense_part(kind, x_all[row][None], x_fmt, w, _gate_weight_fmts(weights_in, gates, gru), ir_fmt,
                      rounding, bias.read()[list(gates)], bias.shift())[:, 0]


def _set_cell_out_meta(out, rows, m):
    """11.4: rank 2, shape[0..1] = (rows, M), strides (M, 1); entries 2..3 kept."""
    out.rank = 2
    out.shape = [rows, m] + list(out.shape[2:4])
    out.mem_stride = [m, 1] + list(out.mem_stride[2:4])


def lstm_cell(kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out,
              rounding="convergent"):
    """``mli_krn_lstm_cell_<kind>``; kind "fx16", "fx16_fx8_fx8" or "sa8_sa8_sa32".

    Updates `cell` in place, writes the outputs and rewrites out's rank,
    shape[0..1] and mem_stride[0..1]."""
    check_rounding(rounding)
    st = _check_cell("lstm_cell", kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut,
                     sigm_lut, cfg, cell, out, rounding)
    if st:
        return st
    _check_cell_reach("lstm_cell", inp, prev_out, weights_in, weights_out, bias, cfg, cell, out)
    x_all, h, c = inp.read(), prev_out.read(), cell.read()
    t_len, m = x_all.shape[0], h.shape[0]
    x_fmt, h_fmt, c_fmt, out_fmt = inp.fmt(), prev_out.fmt(), cell.fmt(), out.fmt()
    if _is_sa_kind(kind):
        ir_fmt = (0, 1, 4)                                # +-7.94 in steps of 1/16
        sig_fmt, tanh_fmt = SA_SIGM_OUT, SA_TANH_OUT
    else:
        ir_fmt = min(10, inp.frac_bits + weights_in.frac_bits)
        sig_fmt = tanh_fmt = 15
    _set_cell_out_meta(out, t_len if cfg.results == RNN_OUT_ALL else 1, m)
    aliased = out.buf is inp.buf
    if not aliased:
        x_parts = _input_parts(kind, x_all, x_fmt, weights_in, bias, ir_fmt, cfg.direction, rounding, False)
    w_out, w_out_fmts = weights_out.read(), _gate_weight_fmts(weights_out, range(4))
    for step in range(t_len):
        x_part = (_step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, cfg.direction, step, rounding, False,
                                   range(4)) if aliased else x_parts[:, step])
        h_parts = dense_part(kind, h, h_fmt, w_out, w_out_fmts, ir_fmt, rounding)
        d = dense_sum(kind, [x_part, h_parts], ir_fmt)   # (4, M): gates i, g, f, o
        sig = activation("sigm", d, ir_fmt, sigm_lut, rounding)  # row 1 unused: g takes tanh
        gi, gf, go = sig[0], sig[2], sig[3]
        gg = activation("tanh", d[1], ir_fmt, tanh_lut, rounding)
        c = elt_mul(c, c_fmt, gf, sig_fmt, c_fmt, rounding)
        gg = elt_mul(gg, tanh_fmt, gi, sig_fmt, tanh_fmt, rounding)
        c = elt_add(c, c_fmt, gg, tanh_fmt, c_fmt, rounding)
        if cfg.act == RNN_ACT_NONE:
            y = elt_mul(c, c_fmt, go, sig_fmt, out_fmt, rounding)
        else:
            func, lut, a_fmt = (("tanh", tanh_lut, tanh_fmt) if cfg.act == RNN_ACT_TANH
                                else ("sigm", sigm_lut, sig_fmt))
            a = activation(func, c, c_fmt, lut, rounding)
            y = elt_mul(a, a_fmt, go, sig_fmt, out_fmt, rounding)
        out.write(y, (step if cfg.results == RNN_OUT_ALL else 0) * m)
        h, h_fmt = y, out_fmt                             # later steps read h in out's format
    cell.write(c)
    return OK


def gru_cell(kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, out,
             rounding="convergent"):
    """``mli_krn_gru_cell_<kind>``: gates z, r, n; h' = z*h + (1 - z)*n."""
    check_rounding(rounding)
    st = _check_cell("gru_cell", kind, inp, prev_out, weights_in, weights_out, bias, tanh_lut,
                     sigm_lut, cfg, None, out, rounding)
    if st:
        return st
    _check_cell_reach("gru_cell", inp, prev_out, weights_in, weights_out, bias, cfg, None, out)
    x_all, h = inp.read(), prev_out.read()
    t_len, m = x_all.shape[0], h.shape[0]
    x_fmt, h_fmt, out_fmt = inp.fmt(), prev_out.fmt(), out.fmt()
    if _is_sa_kind(kind):
        ir_fmt = (0, 21, 9)                               # about +-5.2
        sig_fmt, tanh_fmt = SA_SIGM_OUT, SA_TANH_OUT
        one = 127                                         # 255/256 in the sigmoid format
    else:
        ir_fmt = min(11, inp.frac_bits + weights_in.frac_bits)
        sig_fmt = tanh_fmt = 15
        one = 32767                                       # the largest Q15 value, not 1
    _set_cell_out_meta(out, t_len if cfg.results == RNN_OUT_ALL else 1, m)
    aliased = out.buf is inp.buf
    if not aliased:
        x_parts = _input_parts(kind, x_all, x_fmt, weights_in, bias, ir_fmt, cfg.direction, rounding, True)
    w_out = weights_out.read()
    zr_fmts = _gate_weight_fmts(weights_out, (0, 1), gru=True)
    n_fmts = _gate_weight_fmts(weights_out, (2,), gru=True)
    for step in range(t_len):
        at = (step if cfg.results == RNN_OUT_ALL else 0) * m
        x_zr = (_step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, cfg.direction, step, rounding, True,
                                 (0, 1)) if aliased else x_parts[:2, step])
        zr = dense_sum(kind, [x_zr, dense_part(kind, h, h_fmt, w_out[:2], zr_fmts, ir_fmt, rounding)], ir_fmt)
        z, r = activation("sigm", zr, ir_fmt, sigm_lut, rounding)
        rh = elt_mul(r, sig_fmt, h, h_fmt, h_fmt, rounding)   # reset applied to h before W_hn
        zh = elt_mul(h, h_fmt, z, sig_fmt, h_fmt, rounding)
        zc = elt_add(one, sig_fmt, z, sig_fmt, sig_fmt, rounding, sub=True)
        if aliased:      # MLI keeps z*h in the step's output row, then reads the input for the new gate
            out.write(zh, at)
        x_n = (_step_input_part(kind, inp, x_fmt, weights_in, bias, ir_fmt, cfg.direction, step, rounding, True,
                                (2,)) if aliased else x_parts[2:, step])
        dn = dense_sum(kind, [x_n,
                              dense_part(kind, rh, h_fmt, w_out[2:], n_fmts, ir_fmt, rounding)], ir_fmt)
        n = activation("tanh", dn[0], ir_fmt, tanh_lut, rounding)
        y = elt_add(elt_mul(n, tanh_fmt, zc, sig_fmt, out_fmt, rounding), out_fmt,
                    zh, h_fmt, out_fmt, rounding)
        out.write(y, at)
        h, h_fmt = y, out_fmt
    return OK


#: kernel name -> the kinds it has (the C suffixes).
KERNEL_KINDS = {
    "lstm_cell": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"),
    "gru_cell": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"),
    "rnn_dense": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"),
    "fully_connected": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32", "sa8_sa8_sa32_ext_bias", "fx8"),
    "tanh": ("fx8", "fx16", "sa8"),
    "sigm": ("fx8", "fx16", "sa8"),
}
