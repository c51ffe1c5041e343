"""The kernels' configuration structs, with MLI's field names."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._status import Status, error
from ..enums import RnnActivation, RnnMode, parse_enum
from ..tensor import Tensor

__all__ = ["RnnCellConfig"]


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
