"""Tensors, buffers and cfg objects (SPEC_MLI2 section 3): the model of the 2.x C
structs the kernels take."""

from dataclasses import dataclass, field

import numpy as np

from .codes import _CONTAINER, RELU_NONE, RNN_ACT_TANH, RNN_DIR_FORWARD, RNN_OUT_ALL, SA_8, SA_32


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
