"""The kernels' configuration structs, with MLI's field names."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._status import Status, error
from ..enums import ReluType, RnnActivation, RnnMode, parse_enum
from ..tensor import Tensor

__all__ = ["RnnCellConfig", "Conv2dConfig", "PoolConfig", "PermuteConfig", "ConcatConfig", "Padding2dConfig"]


def _c_enum(value, enum, field):
    """The member of `enum` for `value`, or the plain int when it is outside
    the enum: a C caller can put any int into an enum field, and MLI 1.1
    never compares cfg.mode or cfg.act with their enums (SPEC 12.3)."""
    if isinstance(value, str):  # a member's name: "tanh", "RNN_ACT_TANH", "batch_to_batch"
        try:
            return parse_enum(value, enum, ("RNN_ACT_", "RNN_"))
        except ValueError as e:
            raise error(Status.BAD_FUNC_CFG, "RnnCellConfig", "cfg", field, str(e)) from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"RnnCellConfig: {field} must be an int, a name or an {enum.__name__}, "
                        f"got {type(value).__name__}")
    v = int(value)
    if not -2 ** 31 <= v < 2 ** 31:
        raise error(Status.BAD_FUNC_CFG, "RnnCellConfig", "cfg", field, f"must fit a C int, got {v}")
    try:
        return enum(v)
    except ValueError:
        return v


@dataclass
class RnnCellConfig:
    """`mli_rnn_cell_cfg`: ``mode`` (:class:`mli.RnnMode`), ``act``
    (:class:`mli.RnnActivation`) and ``ir`` (the ``ir_tsr`` scratch tensor;
    allocated per call when None).  Like the C struct, mode and act may hold
    any int: values outside the enums reach the kernel, which computes as
    MLI 1.1 does for them (SPEC 12.3)."""

    mode: int = RnnMode.ONE_TO_ONE
    act: int = RnnActivation.TANH
    ir: Optional[Tensor] = None

    def __post_init__(self):
        self.mode = _c_enum(self.mode, RnnMode, "mode")
        self.act = _c_enum(self.act, RnnActivation, "act")
        if self.ir is not None and not isinstance(self.ir, Tensor):
            raise TypeError("cfg.ir: expected an mli.Tensor or None")


def _u8(cls, field, value):
    """A uint8 field of an MLI cfg struct: any value a C caller can store."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{cls}: {field} must be an int, got {type(value).__name__}")
    v = int(value)
    if not 0 <= v <= 255:
        raise error(Status.BAD_FUNC_CFG, cls, "cfg", field, f"is a uint8_t in MLI's struct (0..255), got {v}")
    return v


def _u8_fields(obj, names):
    for n in names:
        setattr(obj, n, _u8(type(obj).__name__, n, getattr(obj, n)))


_PADDING = ("padding_left", "padding_right", "padding_top", "padding_bottom")


@dataclass
class Conv2dConfig:
    """`mli_conv2d_cfg`: ``relu`` (the ``relu.type``, :class:`mli.ReluType`;
    any int32 reaches the kernel, as in C), ``stride_width``,
    ``stride_height`` and the four paddings (uint8_t each).  ``None`` in
    place of a cfg passes a NULL pointer."""

    relu: int = ReluType.NONE
    stride_width: int = 1
    stride_height: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0

    def __post_init__(self):
        r = self.relu
        if isinstance(r, str):
            try:
                r = parse_enum(r, ReluType, ("MLI_RELU_",))
            except ValueError as e:
                raise error(Status.BAD_FUNC_CFG, "Conv2dConfig", "cfg", "relu", str(e)) from None
        elif isinstance(r, bool) or not isinstance(r, (int, np.integer)):
            raise TypeError(f"Conv2dConfig: relu must be an mli.ReluType, an int or a name, got {type(r).__name__}")
        r = int(r)
        if not -2 ** 31 <= r < 2 ** 31:
            raise error(Status.BAD_FUNC_CFG, "Conv2dConfig", "cfg", "relu", f"must fit a C int, got {r}")
        try:
            self.relu = ReluType(r)
        except ValueError:
            self.relu = r
        _u8_fields(self, ("stride_width", "stride_height") + _PADDING)


@dataclass
class PoolConfig:
    """`mli_pool_cfg`: ``kernel_width``, ``kernel_height``, ``stride_width``,
    ``stride_height`` and the four paddings (uint8_t each; the kernel checks them)."""

    kernel_width: int = 1
    kernel_height: int = 1
    stride_width: int = 1
    stride_height: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0

    def __post_init__(self):
        _u8_fields(self, ("kernel_width", "kernel_height", "stride_width", "stride_height") + _PADDING)


@dataclass
class PermuteConfig:
    """`mli_permute_cfg`: ``perm_dim``, up to 4 uint8 entries (output
    dimension k takes input dimension ``perm_dim[k]``; missing entries are 0,
    entries beyond the input's rank are ignored, as in MLI)."""

    perm_dim: tuple = (0, 1, 2, 3)

    def __post_init__(self):
        try:
            dims = tuple(self.perm_dim)
        except TypeError:
            raise TypeError(f"PermuteConfig: perm_dim must be a sequence of ints, got "
                            f"{type(self.perm_dim).__name__}") from None
        if len(dims) > 4:
            raise error(Status.BAD_FUNC_CFG, "PermuteConfig", "cfg", "perm_dim",
                        f"has MLI_MAX_RANK (4) entries, got {len(dims)}")
        self.perm_dim = tuple(_u8("PermuteConfig", f"perm_dim[{i}]", d) for i, d in enumerate(dims))


@dataclass
class ConcatConfig:
    """`mli_concat_cfg`: ``tensors_num`` (None: the number of inputs given)
    and ``axis`` (uint8_t each)."""

    tensors_num: Optional[int] = None
    axis: int = 0

    def __post_init__(self):
        if self.tensors_num is not None:
            self.tensors_num = _u8("ConcatConfig", "tensors_num", self.tensors_num)
        self.axis = _u8("ConcatConfig", "axis", self.axis)


@dataclass
class Padding2dConfig:
    """`mli_padding2d_cfg`: the four paddings (uint8_t each)."""

    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0

    def __post_init__(self):
        _u8_fields(self, _PADDING)
