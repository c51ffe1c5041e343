"""What a backend is: the interface every MLI library implements for
:func:`mli.fixed_point.to_fixed_point`, the plan it makes (:class:`QuantizedCell`),
and the registry that chooses a backend by name (``library="mli1"``, ``"mli2"``).

A backend is made for one kernel variant (``kind``) and options, and has three
methods, all given the layer's converter (:mod:`mli.fixed_point.registry`), which
tells them what the op is (its MLI ``cell``, directions, inputs) without naming op
types:

* :meth:`Backend.plan`: choose the formats of one unit from its calibration
  statistics and build the MLI cell with its quantized weights -> QuantizedCell;
* :meth:`Backend.cell`: a cell op's step on the planned cell;
* :meth:`Backend.sequence`: a sequence op's step, one planned cell per direction.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["QuantizedCell", "Backend", "register_backend", "get_backend", "backend_names"]


@dataclasses.dataclass
class QuantizedCell:
    """One converted cell.

    Attributes
    ----------
    layer : mli.ir.Layer
        The recurrent layer (one direction of it for a sequence op).
    body : mli.graph.KernelBody, mli.fixed_point.gru.GruCell or mli.fixed_point.backends.mli2.Mli2Cell
        The MLI cell with its quantized weights; ``body.fracs`` are the frac bits.
    ranges : dict
        Calibration statistics: ``(min, max)`` of ``x``, ``h_in``, ``h_out``,
        ``c_in``, ``c_out``; largest ``|pre-activation|`` (``acc_in``: input part
        plus bias; ``acc``: all); ``gates`` and ``saturated``: number of gate
        pre-activations seen and how many were beyond +-8; GRU also the largest
        ``|value|`` of each call's pre-activation (``zr_in``, ``zr``, ``n_in``, ``n``
        or ``xn``, ``hn``, ``nsum``).
    notes : list of str
        Saturation warnings and frac-bit adjustments.
    """

    layer: Any
    body: Any
    ranges: dict
    notes: list

    def describe(self) -> str:
        """The cell, its formats and notes, as the backend that planned it words them."""
        head = _backend_of(self.body).headline(self)
        return "\n".join([head] + [f"    note: {n}" for n in self.notes])


class Backend:
    """The interface of one MLI library's backend (see the module doc)."""

    #: the registry key: ``to_fixed_point(..., library=name)``
    name = ""
    #: the library, for people ("MLI 1.1")
    title = ""
    #: the types of the bodies its plans hold (:meth:`QuantizedCell.describe` finds the
    #: backend by them)
    bodies: tuple = ()

    def __init__(self, kind, *, per_axis=True):
        """Raise ValueError for a ``kind`` the library does not have."""
        raise NotImplementedError

    def plan(self, conv, layer, weights, stats) -> QuantizedCell:
        """One unit of ``layer`` (a direction of a sequence op): float64 ``weights``
        [W, R, B] and calibration ``stats`` -> its QuantizedCell."""
        raise NotImplementedError

    def cell(self, conv, layer, qcell):
        """The step ``fn(*inputs)`` of a cell op on ``qcell``."""
        raise NotImplementedError

    def sequence(self, conv, layer, qcells):
        """The step ``fn(*inputs)`` of a sequence op, ``qcells`` one per direction."""
        raise NotImplementedError

    @staticmethod
    def headline(qcell) -> str:
        """One line naming the cell and its formats."""
        raise NotImplementedError


_BACKENDS: dict = {}          # name -> Backend subclass


def register_backend(cls):
    """Class decorator: register a :class:`Backend` subclass under its ``name``."""
    if not cls.name or cls.name in _BACKENDS:
        raise RuntimeError(f"backend {cls.__name__}: name {cls.name!r} is empty or taken")
    _BACKENDS[cls.name] = cls
    return cls


def get_backend(name):
    """The backend class registered as ``name``; ValueError naming the others."""
    try:
        return _BACKENDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"library must be {' or '.join(map(repr, _BACKENDS))}, got {name!r}") from None


def backend_names() -> tuple:
    return tuple(_BACKENDS)


def _backend_of(body):
    for cls in _BACKENDS.values():
        if isinstance(body, cls.bodies):
            return cls
    raise TypeError(f"no backend plans a {type(body).__name__}")
