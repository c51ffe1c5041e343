"""`mli.Tensor`: the `mli_tensor` struct with numpy conveniences."""
import math

import numpy as np

from . import _core
from .enums import ElementType

_DTYPES = {ElementType.FX_8: np.dtype(np.int8), ElementType.FX_16: np.dtype(np.int16),
           ElementType.ASYM_I8: np.dtype(np.int8), ElementType.ASYM_I32: np.dtype(np.int32)}
_BY_DTYPE = {np.dtype(np.int8): ElementType.FX_8, np.dtype(np.int16): ElementType.FX_16}


def element_type(value, argument="el_type"):
    """Normalise an element type given as ElementType/int, "fx8"/"fx16" or a numpy int8/int16 dtype."""
    if isinstance(value, str):
        key = value.lower().replace("mli_el_", "").replace("_", "")
        table = {"fx8": ElementType.FX_8, "fx16": ElementType.FX_16, "asymi8": ElementType.ASYM_I8,
                 "asymi32": ElementType.ASYM_I32, "int8": ElementType.FX_8, "int16": ElementType.FX_16}
        if key in table:
            return table[key]
        raise ValueError(f"{argument}: unknown element type {value!r} (use 'fx8' or 'fx16')")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return ElementType(int(value))
        except ValueError:
            raise ValueError(f"{argument}: unknown element type {value!r}") from None
    try:
        dt = np.dtype(value)
    except TypeError:
        raise TypeError(f"{argument}: expected an element type, got {value!r}") from None
    if dt in _BY_DTYPE:
        return _BY_DTYPE[dt]
    raise TypeError(f"{argument}: dtype {dt} has no MLI fixed-point element type (int8 or int16)")


def check_frac_bits(value, argument="frac_bits"):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) <= 255:
        raise ValueError(f"{argument}: frac bits must be an integer in 0..255, got {value!r}")
    return int(value)


class Tensor(_core.CTensor):
    """An MLI tensor: `mli_tensor` field for field, over a numpy buffer.

    ``Tensor(array, frac_bits)`` wraps an int8 (``MLI_EL_FX_8``) or int16
    (``MLI_EL_FX_16``) array without copying it when it is C-contiguous and in
    native byte order (read-only arrays are accepted; the package never writes
    into an input).  A 0-d array gives a rank-0 tensor whose value is kept in
    the data field, as MLI does for eltwise scalars.

    Every field of the C struct is an attribute (``capacity``, ``shape``,
    ``mem_stride``, ``rank``, ``el_type``, ``frac_bits``, ``data_null``) and may
    be set to any state a C caller could create (see :meth:`raw`); the C checks
    then decide, as in MLI.  ``capacity`` can never exceed the buffer.
    """

    def __init__(self, data=None, frac_bits=0, *, el_type=None):
        if data is None:
            self.frac_bits = check_frac_bits(frac_bits)
            return
        arr = np.asarray(data)
        if arr.dtype.kind not in "iu" or arr.dtype.itemsize > 2 or arr.dtype.kind == "u":
            if arr.dtype.kind == "f":
                raise TypeError("data: float arrays need quantizing first: use Tensor.from_float(x, el_type, frac_bits)")
            if not isinstance(data, np.ndarray):
                raise TypeError(f"data: a {type(data).__name__} becomes a numpy {arr.dtype} array, which is not an "
                                "MLI fixed-point type: pass an int8 or int16 array (np.array(data, np.int16)) or "
                                "quantize with Tensor.from_float(x, el_type, frac_bits)")
            raise TypeError(f"data: dtype {arr.dtype} is not an MLI fixed-point type: pass an int8 or int16 array "
                            "or use Tensor.from_float(x, el_type, frac_bits)")
        if not arr.dtype.isnative:
            raise TypeError(f"data: byte order of {arr.dtype} is not native; use arr.astype(arr.dtype.newbyteorder('='))")
        et = _BY_DTYPE[np.dtype(arr.dtype)] if el_type is None else element_type(el_type)
        if _DTYPES[et].itemsize != arr.dtype.itemsize:
            raise TypeError(f"data: dtype {arr.dtype} does not fit el_type {et.name}")
        if arr.ndim > 4:
            raise ValueError(f"data: rank {arr.ndim} exceeds MLI_MAX_RANK (4)")
        self.el_type = et
        self.frac_bits = check_frac_bits(frac_bits)
        if arr.ndim == 0:
            self.scalar_value = int(arr)
            self.rank = 0
            return
        if not arr.flags.c_contiguous:
            # a strided view is copied (inputs only): results written into
            # the copy would never reach the caller's array, so a kernel
            # refuses such a tensor as an output
            arr = np.ascontiguousarray(arr)
            self._strided_copy = True
        self._attach(arr)
        self.capacity = arr.nbytes
        self.shape4 = arr.shape
        self.rank = arr.ndim

    # ------------------------------------------------------------ builders
    @classmethod
    def raw(cls, buffer=None, *, capacity=None, shape=(), rank=None, mem_stride=(0, 0, 0, 0),
            el_type=ElementType.FX_16, frac_bits=0, data_null=False, is_null=False, scalar=None):
        """Any state a C caller can create: ``buffer`` is any writable or
        read-only buffer (or None), ``shape`` up to 4 entries, ``rank`` any
        uint32 (also 0 or > 4), ``data_null`` for ``data == NULL``,
        ``is_null`` for a NULL tensor pointer, ``scalar`` for a rank-0 value."""
        t = cls()
        t.el_type = int(el_type)
        t.frac_bits = check_frac_bits(frac_bits)
        t.shape4 = shape
        t.rank = len(shape) if rank is None else rank
        t.mem_stride = mem_stride
        t.is_null = bool(is_null)
        if scalar is not None:
            t.scalar_value = scalar
        elif buffer is not None and not data_null:
            t._attach(buffer)
            t.capacity = t.nbytes_available if capacity is None else capacity
        elif capacity is not None:
            t.capacity = capacity
        return t

    @classmethod
    def empty(cls, shape, el_type, frac_bits=0):
        """A zero-filled tensor of `shape` (what a kernel writes into)."""
        et = element_type(el_type)
        return cls(np.zeros(shape, _DTYPES[et]), frac_bits)

    @classmethod
    def from_float(cls, x, el_type, frac_bits, *, saturate=False):
        """Quantize float values as MLI's example helper mli_hlp_float_to_fx_tensor
        does (float32 arithmetic, halves away from zero, saturation).

        Values beyond the range of `el_type` at `frac_bits` saturate; that
        raises :class:`mli.SaturationWarning` unless ``saturate=True`` says it
        is meant.  Finite values beyond float32's range saturate likewise;
        NaN and infinity raise ValueError."""
        et = element_type(el_type)
        f = check_frac_bits(frac_bits)
        xf = np.asarray(x)
        if xf.dtype.kind not in "fiu":
            raise TypeError(f"x: expected real numbers, got dtype {xf.dtype}")
        if xf.size and not np.all(np.isfinite(xf)):
            raise ValueError("x: contains NaN or infinity, which cannot be quantized")
        big = float(np.finfo(np.float32).max)
        xf = np.ascontiguousarray(np.clip(xf, -big, big) if xf.dtype.kind == "f" else xf, dtype=np.float32)
        if not saturate and xf.size:
            top = (2.0 ** (8 * _DTYPES[et].itemsize - 1)) / 2.0 ** f
            over = int(np.count_nonzero((xf.astype(np.float64) >= top - 0.5 / 2.0 ** f) |
                                        (xf.astype(np.float64) <= -top - 0.5 / 2.0 ** f)))
            if over:
                import warnings
                warnings.warn(f"from_float: {over} value(s) outside the range of {et.name} with {f} frac bits "
                              f"[{-top:g}, {top:g}) saturate (pass saturate=True if that is meant)",
                              SaturationWarning, stacklevel=2)
        if xf.ndim > 4:
            raise ValueError(f"x: rank {xf.ndim} exceeds MLI_MAX_RANK (4)")
        t = cls(np.zeros(xf.shape, _DTYPES[et]), f, el_type=et)
        if xf.ndim == 0:
            out = cls(np.zeros(1, _DTYPES[et]), f, el_type=et)
            _check(_core.float_to_fx_tensor(xf.reshape(1), out), "mli_hlp_float_to_fx_tensor")
            return cls(out.numpy()[0], f, el_type=et)
        _check(_core.float_to_fx_tensor(xf.reshape(-1), t), "mli_hlp_float_to_fx_tensor")
        return t

    @classmethod
    def asym(cls, data, zero_point=0, scale=1, scale_frac_bits=0, *, dim=-1):
        """An sa8 tensor of MLI 1.1 (``MLI_EL_ASYM_I8`` over int8 `data`) or an
        sa32 one (``MLI_EL_ASYM_I32`` over int32 `data`, the bias of the sa8
        kernels), value = (q - zero_point) * scale / 2**scale_frac_bits.

        With ``dim < 0`` (per tensor) `zero_point` (int16) and `scale` (int32)
        are single ints, kept inside ``el_params.asym``'s containers as MLI
        does; with ``dim >= 0`` (per axis) they are sequences (one per slice
        of that axis), held by the tensor, which the containers point to.
        `data` is wrapped without copying when C-contiguous."""
        arr = np.asarray(data)
        if arr.dtype not in (np.dtype(np.int8), np.dtype(np.int32)):
            raise TypeError(f"data: an sa8 tensor holds int8 (ASYM_I8) or int32 (ASYM_I32) values, got {arr.dtype}")
        if not arr.dtype.isnative:
            raise TypeError(f"data: byte order of {arr.dtype} is not native")
        if not 1 <= arr.ndim <= 4:
            raise ValueError(f"data: an sa8 tensor has rank 1 to 4, got {arr.ndim}")
        t = cls()
        t.el_type = ElementType.ASYM_I8 if arr.dtype == np.int8 else ElementType.ASYM_I32
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
            t._strided_copy = True
        t._attach(arr)
        t.capacity = arr.nbytes
        t.shape4 = arr.shape
        t.rank = arr.ndim
        t.set_asym(zero_point, scale, scale_frac_bits, dim=dim)
        return t

    def set_asym(self, zero_point=0, scale=1, scale_frac_bits=0, *, dim=-1):
        """Set ``el_params.asym`` (see :meth:`asym`): per tensor (``dim < 0``)
        int16 `zero_point` and int32 `scale`; per axis, sequences of them."""
        for name, v in (("dim", dim), ("scale_frac_bits", scale_frac_bits)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must be an int, got {type(v).__name__}")
        dim = int(dim)
        if not -2 ** 31 <= dim < 2 ** 31:
            raise ValueError(f"dim must be an int32, got {dim}")
        if dim < 0:
            for name, v in (("zero_point", zero_point), ("scale", scale)):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise TypeError(f"{name}: per tensor (dim < 0) an int, got {type(v).__name__}")
            _core.set_asym(self, dim, int(scale_frac_bits), int(zero_point), int(scale))
            self._asym_keep = None
            return
        zp, sc = np.asarray(zero_point), np.asarray(scale)
        for name, a, dt in (("zero_point", zp, np.int16), ("scale", sc, np.int32)):
            if a.dtype.kind not in "iu" or (a.size and (a.min() < np.iinfo(dt).min or a.max() > np.iinfo(dt).max)):
                raise ValueError(f"{name}: per axis, integers of {np.dtype(dt).name}")
        zp = np.ascontiguousarray(zp.reshape(-1), np.int16)
        sc = np.ascontiguousarray(sc.reshape(-1), np.int32)
        zp.flags.writeable = False
        sc.flags.writeable = False
        _core.set_asym(self, dim, int(scale_frac_bits), zp, sc)
        self._asym_keep = (zp, sc)

    def copy(self):
        """A tensor over a private copy of the buffer, every field equal (per-axis
        sa8 parameters: the same arrays, held by the copy too)."""
        t = super().copy()
        t._asym_keep = getattr(self, "_asym_keep", None)
        return t

    def _asym(self):
        zp, sc, dim, sfb = _core.asym_params(self)
        keep = getattr(self, "_asym_keep", None)
        if dim >= 0:
            if keep is not None and (keep[0].ctypes.data if keep[0].size else 0) == zp:
                zp, sc = keep
            else:  # containers the package did not set (e.g. copied by a kernel): addresses only
                zp, sc = None, None
        return zp, sc, dim, sfb

    @property
    def zero_point(self):
        """``el_params.asym.zero_point`` (int; per axis an int16 array)."""
        return self._asym()[0]

    @property
    def scale(self):
        """``el_params.asym.scale`` (int; per axis an int32 array)."""
        return self._asym()[1]

    @property
    def dim(self):
        """``el_params.asym.dim`` (< 0: per tensor)."""
        return self._asym()[2]

    @property
    def scale_frac_bits(self):
        """``el_params.asym.scale_frac_bits``."""
        return self._asym()[3]

    # ------------------------------------------------------------- views
    @property
    def shape(self):
        """shape[0:rank] (all four entries are in ``shape4``)."""
        return tuple(self.shape4[: min(self.rank, 4)])

    @property
    def dtype(self):
        return _DTYPES.get(ElementType(self.el_type) if self.el_type in range(4) else None, np.dtype(np.uint8))

    def numpy(self):
        """The elements as a numpy array of shape ``shape`` (a view of the
        buffer; read-only when the buffer is)."""
        if self.el_type not in range(4):
            raise ValueError(f"tensor: el_type {self.el_type} has no container type")
        if self.scalar_value is not None:
            return np.array(self.scalar_value).astype(self.dtype)
        if self.data_null:
            raise ValueError("tensor: data is NULL")
        dt, shape = self.dtype, self.shape
        strides = self.mem_stride[: len(shape)]
        if any(st < 0 for st in strides):
            raise ValueError(f"tensor: negative mem_stride {strides} (MLI_STATUS_BAD_TENSOR in every kernel)")
        n = math.prod(shape)
        if all(strides) and len(shape):
            need = (1 + sum((s - 1) * st for s, st in zip(shape, strides))) * dt.itemsize
        else:
            need = n * dt.itemsize
        if need > min(self.capacity, self.nbytes_available):
            raise ValueError(f"tensor: shape {shape} needs {need} bytes, capacity is {self.capacity}")
        flat = np.frombuffer(self.base, np.uint8, count=need, offset=self.offset).view(dt)
        if not self.writable:
            flat.flags.writeable = False
        if all(strides) and len(shape):
            return np.lib.stride_tricks.as_strided(flat, shape, [s * dt.itemsize for s in strides],
                                                   writeable=self.writable)
        return flat.reshape(shape)

    def to_float(self):
        """Dequantized values, float32(2**-frac_bits) * value in float32 (as
        MLI's example helper mli_hlp_fx_tensor_to_float)."""
        return np.float32(2.0 ** -self.frac_bits) * self.numpy().astype(np.float32)

    def __repr__(self):
        if self.is_null:
            return "Tensor(NULL)"
        et = ElementType(self.el_type).name if self.el_type in range(4) else self.el_type
        if self.el_type in (ElementType.ASYM_I8, ElementType.ASYM_I32):
            zp, sc, dim, sfb = self._asym()
            return (f"Tensor(shape={self.shape}, el_type={et}, zero_point={zp}, scale={sc}, scale_frac_bits={sfb}, "
                    f"dim={dim}, capacity={self.capacity}{', data=NULL' if self.data_null else ''})")
        return (f"Tensor(shape={self.shape}, el_type={et}, frac_bits={self.frac_bits}, "
                f"capacity={self.capacity}{', data=NULL' if self.data_null else ''})")

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    # pickling and copy.deepcopy (multiprocessing sweeps): every field and
    # the bytes from data on; the copy owns a private buffer
    def __reduce__(self):
        if self.is_null:
            data = ("null",)
        elif self.scalar_value is not None:
            data = ("scalar", self.scalar_value)
        elif self.data_null:
            data = ("data_null",)
        else:
            data = ("bytes", np.frombuffer(self.base, np.uint8, count=self.nbytes_available,
                                           offset=self.offset).tobytes())
        fields = dict(capacity=self.capacity, shape=self.shape4, rank=self.rank, mem_stride=self.mem_stride,
                      el_type=self.el_type, frac_bits=self.frac_bits)
        if self.el_type in (ElementType.ASYM_I8, ElementType.ASYM_I32):
            fields["asym"] = self._asym()
        return _restore, (type(self), data, fields)


def _restore(cls, data, fields):
    """A tensor from Tensor.__reduce__'s state."""
    kind = data[0]
    t = cls.raw(bytearray(data[1]) if kind == "bytes" else None, is_null=kind == "null",
                scalar=data[1] if kind == "scalar" else None, data_null=kind == "data_null",
                capacity=fields["capacity"] if kind == "bytes" else None, shape=fields["shape"], rank=fields["rank"],
                mem_stride=fields["mem_stride"], el_type=fields["el_type"], frac_bits=fields["frac_bits"])
    if kind in ("scalar", "data_null", "null"):
        t.capacity = fields["capacity"]
    asym = fields.get("asym")
    if asym is not None and (asym[2] < 0 or asym[0] is not None):
        t.set_asym(asym[0], asym[1], asym[3], dim=asym[2])
    return t


class SaturationWarning(UserWarning):
    """Float values quantized beyond the range of their fixed-point format."""


def _check(status, kernel):
    from ._status import raise_for_status

    raise_for_status(status, kernel)


def frac_bits_for(x, el_type):
    """The largest frac bits (0..255) at which every value of `x` quantizes
    without saturation in `el_type` ("fx8"/"fx16"): what MLI users compute
    by hand from the integer bits a tensor needs.

    Raises ValueError when even 0 frac bits would saturate, or for NaN/inf."""
    et = element_type(el_type)
    bits = 8 * _DTYPES[et].itemsize
    xa = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(xa)):
        raise ValueError("x: contains NaN or infinity")
    hi, lo = (xa.max(), xa.min()) if xa.size else (0.0, 0.0)
    top, bottom = 2.0 ** (bits - 1) - 1, -(2.0 ** (bits - 1))

    def fits(f):  # quantize as float_to_fx: v*2^f +- 0.5, truncated
        s = 2.0 ** f
        return math.trunc(hi * s + 0.5) <= top and math.trunc(lo * s - 0.5) >= bottom

    if not fits(0):
        raise ValueError(f"x: values up to {max(abs(hi), abs(lo))} do not fit {et.name} even with 0 frac bits")
    mag = max(abs(hi), abs(lo))
    if mag == 0:
        return bits - 1
    f = min(255, max(0, bits - 1 - math.ceil(math.log2(mag)) + 1))
    while f < 255 and fits(f + 1):
        f += 1
    while f > 0 and not fits(f):
        f -= 1
    return f
