"""ReadValue-3/6 and Assign-3/6: variables kept between calls of a model.

Each :class:`mli.ir.Model` keeps its own variables (:func:`mli.ir.program.variables`),
like an OpenVINO infer request: ``ReadValue`` returns the variable's value
from the previous call, or -- on the first call and after
:meth:`mli.ir.Model.reset_state` -- its initial value (the ``init_value`` input, else
zeros of ``variable_shape``/``variable_type``).  ``Assign`` stores a new value, which
calls see from the next one on (the values are committed when a call succeeds; a
failed call leaves the state as it was).
"""

from __future__ import annotations

import numpy as np

from ...io.limits import check_size
from ..errors import ELEMENT_TYPES, IRError
from ..program import compute_dtype, variables
from ..reader import _shape_attr
from ..registry import REQUIRED, element_type, ports, register


def _shape(text):
    return _shape_attr(text, "variable_shape", allow_dynamic=True)


def _check(value, vtype, vshape, vid):
    if vtype is not None and value.dtype != vtype:
        raise IRError(f"variable {vid!r} is {vtype}, got {value.dtype}")
    if vshape is not None and (value.ndim != len(vshape) or any(
            d is not None and d != s for d, s in zip(vshape, value.shape))):
        raise IRError(f"variable {vid!r} has shape {['?' if d is None else d for d in vshape]}, "
                      f"got {list(value.shape)}")


def _spec(layer):
    spec = {"variable_id": (str, REQUIRED)}
    if layer.version == "opset6" and layer.type == "ReadValue":
        spec.update(variable_type=(element_type, None), variable_shape=(_shape, None))
    return spec


@register("ReadValue", {"opset3", "opset6"}, _spec=_spec)
@ports((0, 1))
def _read_value(layer, a, graph):
    vid = a["variable_id"]
    et = a.get("variable_type")
    vtype = None if et in (None, "dynamic", "undefined") else compute_dtype(ELEMENT_TYPES[et])
    vshape = a.get("variable_shape")

    def fn(init=None):
        store = variables(graph)
        if vid in store.values:
            return store.values[vid]
        if init is None:
            if vtype is None or vshape is None or None in vshape:
                raise IRError(f"variable {vid!r} has no init_value input and no static "
                              f"variable_type/variable_shape to start from")
            # a shape the IR file states: within the size limit before anything is allocated
            n = np.dtype(vtype).itemsize
            for d in vshape:
                n *= int(d)
            try:
                check_size(n, f"variable {vid!r}: variable_shape {list(vshape)}")
            except ValueError as e:
                raise IRError(str(e)) from None
            return np.zeros(vshape, vtype)
        _check(init, vtype, vshape, vid)
        return init
    return fn


@register("Assign", {"opset3", "opset6"}, variable_id=(str, REQUIRED))
@ports(1, n_outputs=(0, 1))
def _assign(layer, a, graph):
    vid = a["variable_id"]

    def fn(value):
        store = variables(graph)
        if vid in store.pending:
            raise IRError(f"variable {vid!r} assigned twice in one call")
        old = store.values.get(vid)
        if old is not None and (old.dtype != value.dtype or old.shape != value.shape):
            raise IRError(f"variable {vid!r} was {old.dtype}{list(old.shape)}, the new value "
                          f"is {value.dtype}{list(value.shape)}")
        store.pending[vid] = np.array(value, copy=True)
        return value if layer.outputs else ()
    return fn
