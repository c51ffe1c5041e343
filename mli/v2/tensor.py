"""The MLI 2.x tensor, LUT and cfg objects of :mod:`mli.v2`.

:class:`Tensor` mirrors ``mli_tensor`` of MLI 2.0.2 field for field: a data
buffer with a capacity in bytes, ``shape`` / ``mem_stride`` (in elements,
dimension 0 outermost), ``rank``, ``el_type`` and either FX ``frac_bits``
(signed) or SA parameters (zero point, scale, scale_frac_bits per tensor or
per index of dimension ``sa_dim``).  The C bridge reads these fields as they
are, so bad-argument calls can be expressed too; it only refuses a capacity
larger than the buffer it describes and an output buffer that is read-only.

The data buffer is a numpy array in native byte order whose dtype is the
container of ``el_type`` (int8 for FX_8 and SA_8, int16 for FX_16, int32 for
SA_32), or a uint8 array holding the container's raw bytes (as the case
files do); the constructor refuses any other dtype or byte order with
``TypeError``.  Read-only arrays are accepted as inputs.

The SA parameter arrays that :class:`Tensor` makes (``set_sa``, the
constructor, a kernel's output) are numpy views of C memory
(``mli.v2._core2.SaMemory``): change their values in place or assign new
arrays, but not their dtype or strides in place.  The C bridge keeps what it
read of a Tensor's SA attributes in ``_sa_cache`` (with pointers into that
memory, so in-place changes of values count), which assigning any of those
attributes replaces; a kernel that leaves its output's per-tensor parameters
as they were leaves its arrays in place."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import _core2

FX_8, FX_16, SA_8, SA_32 = 0x008, 0x010, 0x108, 0x120
EL_TYPES = {"fx8": FX_8, "fx16": FX_16, "sa8": SA_8, "sa32": SA_32}
DTYPES: "dict[int, type[np.signedinteger]]" = {FX_8: np.int8, FX_16: np.int16, SA_8: np.int8, SA_32: np.int32}
EL_TYPE_NAMES = {FX_8: "MLI_EL_FX_8", FX_16: "MLI_EL_FX_16", SA_8: "MLI_EL_SA_8", SA_32: "MLI_EL_SA_32"}


def _el_type(t) -> int:
    if isinstance(t, str):
        if t not in EL_TYPES:
            raise ValueError(f"el_type: expected one of {sorted(EL_TYPES)}, got {t!r}")
        return EL_TYPES[t]
    return int(t)


def _check_buffer(buffer, el_type: int) -> None:
    """Refuse a data buffer whose elements the C core would misread: a dtype
    other than el_type's container (or raw uint8 bytes), or a foreign byte
    order."""
    if buffer is None:
        return
    dt = getattr(buffer, "dtype", None)
    if not isinstance(dt, np.dtype):
        try:
            dt = np.asarray(memoryview(buffer)).dtype
        except (TypeError, ValueError):
            raise TypeError(f"buffer: a {type(buffer).__name__} is not a buffer of integers: pass a numpy array") from None
    if not dt.isnative:
        raise TypeError(f"buffer: byte order of {dt.str} is not native; "
                        "use a.astype(a.dtype.newbyteorder('='))")
    want = DTYPES.get(el_type)
    if dt == np.uint8:
        return  # raw bytes of any container
    if want is None:
        if dt.kind not in "iuf":
            raise TypeError(f"buffer: dtype {dt} is not a container of numbers")
        return  # an el_type without a container (the C checks decide)
    if dt != np.dtype(want):
        hint = " (quantise floats with Tensor.from_float)" if dt.kind == "f" else ""
        raise TypeError(f"buffer: dtype {dt} is not the container of {EL_TYPE_NAMES[el_type]}: pass an "
                        f"{np.dtype(want)} array, or a uint8 array of its raw bytes{hint}")


# the attributes whose assignment drops the bridge's _sa_cache of a Tensor
_SA_FIELDS = frozenset(("sa_type", "sa_dim", "zero_point", "scale", "scale_frac_bits", "zero_point_capacity",
                        "scale_capacity", "scale_frac_bits_capacity"))


def _sa_scalars(zp: int, scale: int, fb: int) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
    """One-element int16 / int16 / int8 arrays holding zp, scale, fb: views of
    one SaMemory (the bridge reads them from there)."""
    mem = _core2.SaMemory(6)
    z = np.frombuffer(mem, np.int16, 1, 0)
    s = np.frombuffer(mem, np.int16, 1, 2)
    f = np.frombuffer(mem, np.int8, 1, 4)
    z[0], s[0], f[0] = zp, scale, fb
    return z, s, f


def _sa_axis(zp: np.ndarray, scale: np.ndarray, fb: np.ndarray) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
    """Copies of the 1-D int16 / int16 / int8 arrays zp, scale, fb as views of
    one SaMemory."""
    nz, ns = zp.nbytes, scale.nbytes
    mem = _core2.SaMemory(nz + ns + fb.nbytes)
    z = np.frombuffer(mem, np.int16, zp.size, 0)
    s = np.frombuffer(mem, np.int16, scale.size, nz)
    f = np.frombuffer(mem, np.int8, fb.size, nz + ns)
    z[...], s[...], f[...] = zp, scale, fb
    return z, s, f


def dense_strides(shape: Sequence[int]) -> list:
    st: list = []
    acc = 1
    for d in reversed(list(shape)):
        st.insert(0, acc)
        acc *= int(d)
    return st


class Tensor:
    """An MLI 2.x tensor.  Build one with :meth:`fx`, :meth:`sa` or
    :meth:`from_float`; read its elements with :meth:`numpy`.

    ``Tensor(buffer, el_type, shape, ...)`` describes `buffer` without copying
    it: a numpy array of el_type's container dtype in native byte order, or a
    uint8 array of raw bytes (any other dtype or byte order: ``TypeError``).
    Kernels write only into the tensors they output, so inputs may be
    read-only arrays."""

    def __init__(self, buffer: Optional[np.ndarray], el_type, shape: Sequence[int] = (),
                 mem_stride: Optional[Sequence[int]] = None, rank: Optional[int] = None,
                 capacity: Optional[int] = None, frac_bits: int = 0) -> None:
        self.el_type = _el_type(el_type)
        _check_buffer(buffer, self.el_type)
        self.buffer = buffer
        shape = [int(s) for s in shape]
        self.rank = len(shape) if rank is None else int(rank)
        self.shape = (shape + [0, 0, 0, 0])[:4]
        st = dense_strides(shape) if mem_stride is None else [int(s) for s in mem_stride]
        self.mem_stride = (st + [0, 0, 0, 0])[:4]
        self.capacity = (buffer.nbytes if buffer is not None else 0) if capacity is None else int(capacity)
        self.frac_bits = int(frac_bits)
        self.sa_type = 0
        self.sa_dim = -1
        self.zero_point, self.scale, self.scale_frac_bits = _sa_scalars(0, 1, 0)
        self.zero_point_capacity = self.scale_capacity = self.scale_frac_bits_capacity = 0

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in _SA_FIELDS:
            # a new token: the bridge's cache (and one being made now) is stale
            object.__setattr__(self, "_sa_cache", object())

    def __delattr__(self, name: str) -> None:
        object.__delattr__(self, name)
        if name in _SA_FIELDS:
            object.__setattr__(self, "_sa_cache", object())

    def __getstate__(self) -> dict:
        # (copy, deepcopy and pickle: the bridge's cache stays with the original)
        state = dict(self.__dict__)
        state.pop("_sa_cache", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # ---------------------------------------------------------------- makers
    @classmethod
    def fx(cls, values, frac_bits: int, el_type="fx16") -> "Tensor":
        """A dense FX tensor holding a copy of `values` (integers)."""
        t = _el_type(el_type)
        a = np.ascontiguousarray(np.asarray(values), dtype=DTYPES[t]).copy()
        return cls(a.reshape(-1), t, a.shape, frac_bits=frac_bits)

    @classmethod
    def sa(cls, values, zero_point, scale, scale_frac_bits, dim: int = -1, el_type="sa8") -> "Tensor":
        """A dense SA tensor with a copy of `values`; per tensor (dim < 0,
        scalars) or per index of dimension `dim` (sequences)."""
        t = _el_type(el_type)
        a = np.ascontiguousarray(np.asarray(values), dtype=DTYPES[t]).copy()
        obj = cls(a.reshape(-1), t, a.shape)
        obj.set_sa(zero_point, scale, scale_frac_bits, dim)
        return obj

    @classmethod
    def zeros(cls, shape: Sequence[int], el_type="fx16", frac_bits: int = 0) -> "Tensor":
        t = _el_type(el_type)
        return cls(np.zeros(int(np.prod(shape)), DTYPES[t]), t, shape, frac_bits=frac_bits)

    @classmethod
    def from_float(cls, x, el_type="sa8", frac_bits: Optional[int] = None, dim: int = -1,
                   symmetric: bool = False) -> "Tensor":
        """Quantise float values as MLI 2.x users do.

        FX (``fx8`` / ``fx16``): frac_bits given, or the largest that holds
        max|x|.  SA (``sa8`` / ``sa32``): per tensor (dim < 0) or per index
        of dimension `dim`; each slice's range [min, max] (widened to hold 0)
        is mapped onto the integer range with a 16-bit scale mantissa and
        scale_frac_bits; `symmetric` forces zero point 0 (weights, biases)."""
        t = _el_type(el_type)
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError("from_float: x holds NaN or infinity")
        info = np.iinfo(DTYPES[t])
        if t in (FX_8, FX_16):
            if frac_bits is None:
                m = float(np.max(np.abs(x))) if x.size else 0.0
                frac_bits = info.bits - 1 if m == 0 else int(np.floor(np.log2(info.max / m)))
                frac_bits = max(min(frac_bits, 127), -128)
            q = np.clip(np.round(x * 2.0 ** frac_bits), info.min, info.max)
            return cls.fx(q.astype(DTYPES[t]), frac_bits, t)
        if dim >= 0:
            if dim >= x.ndim:
                raise ValueError(f"from_float: dim {dim} not below the rank {x.ndim}")
            moved = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
        else:
            moved = x.reshape(1, -1)
        zps, scales, fbs = [], [], []
        q = np.empty_like(moved)
        for k, row in enumerate(moved):
            lo, hi = min(float(row.min(initial=0.0)), 0.0), max(float(row.max(initial=0.0)), 0.0)
            if symmetric or t == SA_32:
                step = max(abs(lo), abs(hi)) / info.max
                zp = 0
            else:
                step = (hi - lo) / (info.max - info.min)
                zp = None
            if step == 0:
                step = 1.0
            # step = scale * 2^-fb with scale a positive int16 in [2^14, 2^15)
            fb = int(np.floor(np.log2(32767 / step)))
            fb = max(min(fb, 127), -128)
            scale = int(np.clip(np.round(step * 2.0 ** fb), 1, 32767))
            real = scale * 2.0 ** -fb
            if zp is None:
                zp = int(np.clip(np.round(info.min - lo / real), -128, 127))
            q[k] = np.clip(np.round(row / real) + zp, info.min, info.max)
            zps.append(zp)
            scales.append(scale)
            fbs.append(fb)
        if dim >= 0:
            shape = (x.shape[dim],) + tuple(np.delete(np.array(x.shape), dim))
            qa = np.moveaxis(q.reshape(shape), 0, dim)
            return cls.sa(qa.astype(DTYPES[t]), zps, scales, fbs, dim, t)
        return cls.sa(q.reshape(x.shape).astype(DTYPES[t]), zps[0], scales[0], fbs[0], -1, t)

    # ---------------------------------------------------------------- params
    def set_sa(self, zero_point, scale, scale_frac_bits, dim: int = -1) -> None:
        self.sa_type = 0
        self.sa_dim = int(dim)
        if dim < 0:
            self.zero_point, self.scale, self.scale_frac_bits = _sa_scalars(
                int(np.asarray(zero_point).reshape(-1)[0]), int(np.asarray(scale).reshape(-1)[0]),
                int(np.asarray(scale_frac_bits).reshape(-1)[0]))
            self.zero_point_capacity = self.scale_capacity = self.scale_frac_bits_capacity = 0
        else:
            self.zero_point, self.scale, self.scale_frac_bits = _sa_axis(
                np.ascontiguousarray(zero_point, np.int16).reshape(-1),
                np.ascontiguousarray(scale, np.int16).reshape(-1),
                np.ascontiguousarray(scale_frac_bits, np.int8).reshape(-1))
            self.zero_point_capacity = self.zero_point.nbytes
            self.scale_capacity = self.scale.nbytes
            self.scale_frac_bits_capacity = self.scale_frac_bits.nbytes

    def _set_sa_inline(self, typ, zp, scale, fb, zc, sc, fc) -> None:  # used by the C bridge
        z, s, f = _sa_scalars(zp, scale, fb)
        fields = dict(sa_type=int(typ), sa_dim=-1, zero_point=z, scale=s, scale_frac_bits=f,
                      zero_point_capacity=int(zc), scale_capacity=int(sc), scale_frac_bits_capacity=int(fc))
        if type(self) is Tensor:
            self.__dict__.update(fields, _sa_cache=object())
        else:  # (a subclass may define these as properties)
            for k, val in fields.items():
                setattr(self, k, val)

    @property
    def is_sa(self) -> bool:
        return self.el_type in (SA_8, SA_32)

    # ---------------------------------------------------------------- reading
    def numpy(self) -> np.ndarray:
        """A copy of the elements in logical order (shape[:rank])."""
        dt = DTYPES[self.el_type]
        if self.buffer is None:
            raise ValueError("numpy: the tensor has no data container")
        flat = self.buffer.view(dt) if self.buffer.dtype != dt else self.buffer
        shape = tuple(self.shape[:self.rank])
        if not shape:
            return flat[:1].copy().reshape(())
        strides = tuple(s * flat.itemsize for s in self.mem_stride[:self.rank])
        if any(d < 0 or s < 0 or (s == 0 and d > 1) for d, s in zip(shape, self.mem_stride[:self.rank])):
            # (MLI 2.x strides are positive: a negative one would read before the buffer, a zero
            # one copy a shape the buffer merely claims out of one element)
            raise ValueError(f"numpy: shape {list(shape)} with mem_stride {list(self.mem_stride[:self.rank])}: "
                             "the strides of dimensions above 1 must be positive")
        if 0 in shape:
            return np.zeros(shape, dt)
        need = 1 + sum((d - 1) * s for d, s in zip(shape, self.mem_stride[:self.rank]))
        if need > flat.size:
            raise ValueError("numpy: shape and mem_stride reach beyond the buffer")
        return np.lib.stride_tricks.as_strided(flat, shape, strides).copy()

    def to_float(self) -> np.ndarray:
        """The real values the elements stand for."""
        q = self.numpy().astype(np.float64)
        if not self.is_sa:
            return q * 2.0 ** -self.frac_bits
        if self.sa_dim < 0:
            return (q - int(self.zero_point[0])) * int(self.scale[0]) * 2.0 ** -int(self.scale_frac_bits[0])
        shp = [1] * self.rank
        shp[self.sa_dim] = -1
        zp = self.zero_point.astype(np.float64).reshape(shp)
        sc = self.scale.astype(np.float64).reshape(shp) * 2.0 ** -self.scale_frac_bits.astype(np.float64).reshape(shp)
        return (q - zp) * sc

    def __repr__(self) -> str:
        p = (f"sa_dim={self.sa_dim}, zp={self.zero_point.tolist()}, scale={self.scale.tolist()}, "
             f"scale_frac_bits={self.scale_frac_bits.tolist()}" if self.is_sa else f"frac_bits={self.frac_bits}")
        return (f"Tensor({EL_TYPE_NAMES.get(self.el_type, hex(self.el_type))}, shape={self.shape[:self.rank]}, "
                f"mem_stride={self.mem_stride[:self.rank]}, {p})")


_core2._register_tensor_type(Tensor)


class Lut:
    """An ``mli_lut`` object: storage of `capacity` bytes and the fields that
    ``*_create_lut`` fills.  Use :func:`mli.v2.tanh_lut` / :func:`mli.v2.sigm_lut`
    to get ready ones (created once, then reused)."""

    def __init__(self, capacity: int) -> None:
        self.buffer = np.zeros((int(capacity) + 1) // 2, np.int16)
        self.capacity = int(capacity)
        self.type = 0
        self.length = self.in_frac_bits = self.out_frac_bits = self.input_offset = self.output_offset = 0

    def table(self) -> np.ndarray:
        return self.buffer[:self.length].copy()


class RnnCellCfg:
    """``mli_rnn_cell_cfg``: direction (0 forward, 1 backward), results (0
    last, 1 all), act (0 none, 1 tanh, 2 sigm), and the scratch buffer
    (``scratch_buffer`` None with capacity 0: the Python wrappers allocate one)."""

    def __init__(self, direction: int = 0, results: int = 1, act: int = 1,
                 scratch_buffer: Optional[np.ndarray] = None, scratch_capacity: Optional[int] = None) -> None:
        self.direction, self.results, self.act = int(direction), int(results), int(act)
        self.scratch_buffer = scratch_buffer
        self.scratch_capacity = (scratch_buffer.nbytes if scratch_buffer is not None else 0) \
            if scratch_capacity is None else int(scratch_capacity)


class FullyConnectedCfg:
    """``mli_fully_connected_cfg``: relu type 0 none, 1 general, 2 relu1, 3 relu6."""

    def __init__(self, relu: int = 0) -> None:
        self.relu = int(relu)


class RnnDenseCfg:
    """``mli_rnn_dense_cfg``: inputs_num (1..4)."""

    def __init__(self, inputs_num: int) -> None:
        self.inputs_num = int(inputs_num)
