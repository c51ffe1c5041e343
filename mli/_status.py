"""MLI status codes and the exception hierarchy that carries them."""
from __future__ import annotations

from enum import IntEnum
from typing import Any, Optional

__all__ = ["Status", "MliError", "MliBadTensorError", "MliShapeMismatchError", "MliIncompatibleTensorsError",
           "MliBadFuncCfgError", "MliNotEnoughMemError", "MliNotSupportedError", "MliSpecParamMismatchError",
           "MliArgumentError", "MliLengthError", "MliSizeMismatchError", "MliRankMismatchError",
           "MliTypeMismatchError", "raise_for_status"]


class Status(IntEnum):
    """`mli_status` of MLI 1.1, in MLI's order and spelling."""

    OK = 0
    BAD_TENSOR = 1
    SHAPE_MISMATCH = 2
    INCOMPATEBLE_TENSORS = 3  # MLI's spelling
    BAD_FUNC_CFG = 4
    NOT_ENGH_MEM = 5
    NOT_SUPPORTED = 6
    SPEC_PARAM_MISMATCH = 7
    ARGUMENT_ERROR = 8
    LENGTH_ERROR = 9
    SIZE_MISMATCH = 10
    RANK_MISMATCH = 11
    TYPE_MISMATCH = 12

    @property
    def c_name(self) -> str:
        return "MLI_STATUS_" + self.name


class MliError(Exception):
    """A non-OK `mli_status` (or an argument the package refuses before C).

    Attributes: ``status`` (:class:`Status`), ``kernel`` (the C function or
    Python wrapper), ``argument`` (e.g. ``"prev_out"``), ``field`` (e.g.
    ``"shape[0]"``), ``detail`` (one line), and ``mlipy_safety`` (True when MLI
    itself would not reject the call but would touch memory outside its
    buffers -- or, in :mod:`mli.v2`, compute from data it has overwritten;
    mli-py refuses it instead).  ``library`` names the MLI release of the
    kernel in the message ("MLI 1.1" or "MLI 2.0.2")."""

    def __init__(self, status: int, kernel: str = "", argument: str = "", field: str = "", detail: str = "",
                 expected: Optional[int] = None, actual: Optional[int] = None, mlipy_safety: bool = False,
                 library: str = "MLI 1.1") -> None:
        self.status = Status(status)
        self.kernel, self.argument, self.field, self.detail = kernel, argument, field, detail
        self.expected, self.actual, self.mlipy_safety = expected, actual, mlipy_safety
        where = argument + (f".{field}" if field and not field.startswith("[") else field)
        msg = f"{kernel}: {where} {detail}".replace("  ", " ").strip()
        if expected is not None:
            msg += f" (expected {_value(field, expected)}, got {_value(field, actual)})"
        msg += f" [{self.status.c_name}]"
        if mlipy_safety:
            msg += f" (mli-py safety check; {library} would not detect this)"
        super().__init__(msg)


_EL_TYPE_NAMES = ("MLI_EL_FX_8", "MLI_EL_FX_16", "MLI_EL_ASYM_I8", "MLI_EL_ASYM_I32")


def _value(field: str, value: Any) -> Any:
    """An expected/actual value as the message prints it: element types by
    their C enum name (``MLI_EL_FX_8``), any other value as it is."""
    if field.endswith("el_type") and isinstance(value, int) and 0 <= value < len(_EL_TYPE_NAMES):
        return _EL_TYPE_NAMES[value]
    return value


class MliBadTensorError(MliError, ValueError): pass
class MliShapeMismatchError(MliError, ValueError): pass
class MliIncompatibleTensorsError(MliError, ValueError): pass
class MliBadFuncCfgError(MliError, ValueError): pass
class MliNotEnoughMemError(MliError, ValueError): pass
class MliNotSupportedError(MliError, NotImplementedError): pass
class MliSpecParamMismatchError(MliError, ValueError): pass
class MliArgumentError(MliError, ValueError): pass
class MliLengthError(MliError, ValueError): pass
class MliSizeMismatchError(MliError, ValueError): pass
class MliRankMismatchError(MliError, ValueError): pass
class MliTypeMismatchError(MliError, TypeError): pass


ERROR_CLASSES: dict[Status, type[MliError]] = {
    Status.BAD_TENSOR: MliBadTensorError,
    Status.SHAPE_MISMATCH: MliShapeMismatchError,
    Status.INCOMPATEBLE_TENSORS: MliIncompatibleTensorsError,
    Status.BAD_FUNC_CFG: MliBadFuncCfgError,
    Status.NOT_ENGH_MEM: MliNotEnoughMemError,
    Status.NOT_SUPPORTED: MliNotSupportedError,
    Status.SPEC_PARAM_MISMATCH: MliSpecParamMismatchError,
    Status.ARGUMENT_ERROR: MliArgumentError,
    Status.LENGTH_ERROR: MliLengthError,
    Status.SIZE_MISMATCH: MliSizeMismatchError,
    Status.RANK_MISMATCH: MliRankMismatchError,
    Status.TYPE_MISMATCH: MliTypeMismatchError,
}


def error(status: int, kernel: str = "", argument: str = "", field: str = "", detail: str = "",
          **kw: Any) -> MliError:
    """The exception object of the class that fits `status`."""
    return ERROR_CLASSES.get(Status(status), MliError)(status, kernel, argument, field, detail, **kw)


def raise_for_status(status: int, kernel: Optional[str] = None) -> None:
    """Raise the typed error for a non-OK status of the last C call on this
    thread, with the argument and field the C checker recorded."""
    if status == 0:
        return
    from . import _core

    st, function, argument, field, reason, expected, actual, has_values, safety = _core.last_error()
    if st != status:  # the record belongs to another call: report what we know
        function, argument, field, reason, has_values, safety = kernel or "", "", "", "failed", False, False
    kw = dict(expected=expected, actual=actual) if has_values else {}
    raise error(status, kernel or function, argument, field, reason, mlipy_safety=safety, **kw)
