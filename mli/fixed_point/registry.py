"""The converter registry: which IR op types :func:`mli.fixed_point.to_fixed_point`
converts, and how -- every op type is named here once, by the converter that takes it.

A converter module (:mod:`mli.fixed_point.converters`) registers one class per op
type, the way :mod:`mli.ir.ops` registers its builders in :mod:`mli.ir.registry`::

    @register
    class LSTMCell(_Lstm, CellConverter):   # the LSTM family: cell "lstm", activations, ...
        types = ("LSTMCell",)
        weights = 3                         # W, R, B are inputs 3, 4, 5

A converter takes a layer through the conversion, in this order:

1. :meth:`Converter.constants`: refuse what the MLI kernels cannot do (naming the
   layer) and fold the layer's constant inputs (its weights) to float64 arrays;
2. :meth:`Converter.units`: how many planned units the layer is (a sequence op: one
   per direction; a cell op: one);
3. :meth:`Converter.record`: the float step, also recording into one
   :class:`mli.fixed_point.calibration.Stats` per unit what the unit meets;
4. :meth:`Converter.plan`: the :class:`mli.fixed_point.QuantizedCell` of each unit,
   planned by the backend (:mod:`mli.fixed_point.backends`) from the statistics;
5. :meth:`Converter.step`: the layer's step in the fixed-point program, running the
   plans on the backend.

An op nobody converts stays float (the rest of the graph is float by design); a model
with no op to convert is refused.
"""

from __future__ import annotations

__all__ = ["Converter", "register", "converter_for", "converted_types"]


class Converter:
    """The interface of one op type's converter (see the module doc); subclasses
    declare ``types`` and implement the five steps."""

    #: the IR op types this converter takes
    types: tuple = ()

    def constants(self, layer, site) -> list:
        """Check ``layer`` and return its constant inputs as float64 arrays.
        ``site`` = (graphs from the top level down to the layer's, enclosing TI/Loop
        layers), as :func:`mli.fixed_point.constants.resolve` takes it."""
        raise NotImplementedError

    def units(self, layer) -> int:
        """How many units ``layer`` is planned as (each has its own statistics and plan)."""
        raise NotImplementedError

    def record(self, layer, float_fn, constants, stats):
        """The step ``float_fn`` of ``layer``, also recording calibration statistics into
        ``stats`` (a list, one per unit)."""
        raise NotImplementedError

    def plan(self, layer, constants, stats, backend) -> list:
        """The list of planned units (:class:`mli.fixed_point.QuantizedCell`)."""
        raise NotImplementedError

    def step(self, layer, plans, backend):
        """``layer``'s step ``fn(*input_arrays)`` running ``plans`` on ``backend``."""
        raise NotImplementedError


_CONVERTERS: dict = {}          # op type -> Converter (one instance per class)


def register(cls):
    """Class decorator: register a :class:`Converter` subclass for each of its ``types``."""
    conv = cls()
    if not cls.types:
        raise RuntimeError(f"converter {cls.__name__} declares no op type")
    for t in cls.types:
        if t in _CONVERTERS:
            raise RuntimeError(f"op {t} has two converters")
        _CONVERTERS[t] = conv
    return cls


def converter_for(op_type):
    """The converter of ``op_type``, or None when the op stays float."""
    return _CONVERTERS.get(op_type)


def converted_types() -> tuple:
    """Every op type a converter takes, in registration order."""
    return tuple(_CONVERTERS)
