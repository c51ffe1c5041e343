"""What every kernel family module shares: the argument helpers, the
registration of the Python classes with the bridge, and how a bridge kernel
becomes a named, exported function of its family module."""
import math

import numpy as np

from .. import _core
from .._status import Status, error, raise_for_status
from ..enums import KINDS, ElementType, RnnActivation, RnnMode
from ..tensor import Tensor
from .config import RnnCellConfig

OWN: dict = {}   # name -> every kernel function of mli.kernels (mli.graph's fused run calls the bridge only for these)


def tensor_arg(name, t, fname):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname}: {name} must be an mli.Tensor, got {type(t).__name__}")
    return t


def kind_of(data, weights=None):
    """'fx8', 'fx16' or 'fx8w16d' from the element types of data (and weights)."""
    d = data.el_type
    w = d if weights is None else weights.el_type
    for k, (de, we) in KINDS.items():
        if (d, w) == (de, we) and (weights is not None or k != "fx8w16d"):
            return k
    raise error(Status.TYPE_MISMATCH, "mli", "weights" if weights is not None else "in", "el_type",
                f"no MLI kernel takes data el_type {d} with weights el_type {w}")


def dtype_of(kind):
    return np.int8 if kind == "fx8" else np.int16


def count(t):
    return math.prod(t.shape) if t.rank <= 4 else 0


def not_a_strided_copy(name, out, fname):
    """An output must be the caller's memory, not mli.Tensor's copy of a strided view."""
    if getattr(out, "_strided_copy", False):
        raise ValueError(f"{fname}: {name} wraps a copy of a non-contiguous array, so the results would not "
                         f"reach the caller's array: pass np.ascontiguousarray(...) and read the tensor")


# The kernel functions hand their arguments to the bridge, which runs every
# check of this API (in this order: each tensor argument's type, cfg, the
# output's type, contiguity and aliasing, then C's checks) and marshals once.
_core.register(Tensor, RnnCellConfig, error, raise_for_status, np.zeros, np.dtype(np.int8), np.dtype(np.int16),
               RnnMode.BATCH_TO_BATCH, RnnMode.BATCH_TO_LAST, RnnActivation.NONE)


def named(fn, name, module):
    """A kernel function of the bridge (a closure over its variant and name: one
    call per kernel call, no Python layer) named as a function of `module`."""
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    return fn


def export(namespace, fn):
    """Put `fn` into a family module's `namespace` and ``__all__``, and into OWN."""
    namespace[fn.__name__] = OWN[fn.__name__] = fn
    namespace["__all__"].append(fn.__name__)
    return fn


def by_data(name, namespace):
    """``name(x, ...)``: the ``name_fx8`` or ``name_fx16`` of `namespace` picked
    from the element type of the input."""
    def fn(x, *args, **kw):
        return namespace[f"{name}_{kind_of(tensor_arg('in', x, name))}"](x, *args, **kw)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = namespace["__name__"]
    fn.__doc__ = f":func:`{name}_fx8` or ``_fx16`` picked from the element type of the input."
    return fn


__all__ = ["OWN", "tensor_arg", "kind_of", "dtype_of", "count", "not_a_strided_copy", "named", "export",
           "by_data", "Status", "error", "raise_for_status", "ElementType"]
