"""Port-map entries of TensorIterator-1 and Loop-5.

Every entry is a small frozen dataclass, validated when it is built; a bad
value raises :class:`GraphError` whose message names the entry, e.g.
``SlicedInput(external=0, internal=1): part_size must be >= 1, got 0``.

Indexing convention (used everywhere in :mod:`mli.graph`)
--------------------------------------------------------
* ``external`` is the **position** of the operation's input or output: for a
  TensorIterator the position in ``ti(*inputs)`` and in the returned tuple;
  for a Loop inputs 0 and 1 are ``trip_count`` and ``execution_condition``
  (Loop-5 ports 0 and 1) and the data inputs follow from position 2.
* ``internal`` (and the fields of :class:`BackEdge`) is the **position** of the
  body input (Parameter) or body output (Result) in the lists that
  ``body.run`` takes and returns.

Slicing (:class:`SlicedInput`, :class:`ConcatOutput`)
----------------------------------------------------
``start`` and ``end`` are inclusive element indices on ``axis``; negative
values count from the end (``v + dim``).  The operation runs
``(|end - start| + 1) // part_size`` iterations.  Only ``|stride| ==
part_size`` is accepted: it is the only combination OpenVINO executes (the
CPU plugin fails or returns garbage otherwise) and the one the specification's
iteration count assumes.  With ``stride > 0`` chunk *k* is
``[start + k*p, start + (k+1)*p)``; with ``stride < 0`` the axis is walked
from ``start`` downwards: chunk *k* is ``[start+1-(k+1)*p, start+1-k*p)``.
A concatenated output with ``stride < 0`` is ``Concat(S[n-1], ..., S[0])``.
For outputs only the sign of the stride matters: the output always covers the
whole axis (``n * part_size`` elements), as in OpenVINO.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

__all__ = [
    "GraphError", "SlicedInput", "InvariantInput", "MergedInput",
    "ConcatOutput", "LastIterationOutput", "BackEdge", "CurrentIteration",
]


class GraphError(ValueError):
    """Invalid TensorIterator/Loop description or run-time data."""


def _label(port) -> str:
    names = [f.name for f in fields(port)][:2]
    return f"{type(port).__name__}(" + ", ".join(f"{n}={getattr(port, n)!r}" for n in names) + ")"


def _as_int(port, name: str, minimum: int | None = None) -> None:
    value = getattr(port, name)
    if isinstance(value, (bool, np.bool_)):
        raise GraphError(f"{_label(port)}: {name} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise GraphError(f"{_label(port)}: {name} must be an integer, got {value!r}") from None
    if minimum is not None and value < minimum:
        raise GraphError(f"{_label(port)}: {name} must be >= {minimum}, got {value}")
    object.__setattr__(port, name, int(value))


_SLICE_FIELDS = ("axis", "start", "end", "stride", "part_size")


class _Port:
    """Mixin: run the checks of every integer field, then `_check`."""

    _minimums: dict = {}

    def __post_init__(self):
        for f in fields(self):
            if f.name in self._minimums or f.name in _SLICE_FIELDS:
                _as_int(self, f.name, self._minimums.get(f.name))
        self._check()

    def _check(self):
        pass

    @property
    def label(self) -> str:
        """Short description naming the entry, used in error messages."""
        return _label(self)


class _Slicing(_Port):
    _minimums = {"external": 0, "internal": 0, "part_size": 1}
    # the fields of the dataclasses built on this class (annotations only:
    # dataclass takes its fields from each class's own annotations)
    axis: int
    start: int
    end: int
    stride: int
    part_size: int

    def _check(self):
        if self.stride == 0:
            raise GraphError(f"{self.label}: stride must not be 0")
        if abs(self.stride) != self.part_size:
            raise GraphError(
                f"{self.label}: |stride| must equal part_size (got stride={self.stride}, "
                f"part_size={self.part_size}); other combinations are undefined in OpenVINO")

    def normalized_axis(self, rank: int) -> int:
        """Return ``axis`` normalised against ``rank`` (negative counts from the end)."""
        axis = self.axis + rank if self.axis < 0 else self.axis
        if not 0 <= axis < rank:
            raise GraphError(f"{self.label}: axis {self.axis} is out of range for rank {rank}")
        return axis

    def plan(self, dim: int) -> tuple[int, int, int]:
        """Iteration count and chunk placement for an axis of length ``dim``.

        Returns ``(n, first, step)``: chunk *k* covers
        ``[first + k*step, first + k*step + part_size)``.
        """
        start = self.start + dim if self.start < 0 else self.start
        end = self.end + dim if self.end < 0 else self.end
        if not (0 <= start < dim and 0 <= end < dim):
            if dim == 0 and (self.start, self.end) in ((0, -1), (-1, 0)):
                return 0, 0, self.stride
            raise GraphError(f"{self.label}: start={self.start}, end={self.end} out of range "
                             f"for an axis of length {dim}")
        if (end - start) * self.stride < 0:
            raise GraphError(f"{self.label}: stride {self.stride} walks away from end "
                             f"(start={self.start}, end={self.end}, axis length {dim})")
        length = abs(end - start) + 1
        if length % self.part_size:
            raise GraphError(f"{self.label}: range of {length} elements is not a multiple "
                             f"of part_size {self.part_size}")
        first = start if self.stride > 0 else start + 1 - self.part_size
        return length // self.part_size, first, self.stride


@dataclass(frozen=True)
class SlicedInput(_Slicing):
    """External input cut into chunks along ``axis``, one chunk per iteration.

    Parameters
    ----------
    external, internal : int
        Position of the external input and of the body input.
    axis : int
        Axis to slice (negative counts from the end of the input's rank).
    start, end : int, optional
        Inclusive range on the axis; negative values count from the end.
    stride : int, optional
        +part_size (forward) or -part_size (backward).
    part_size : int, optional
        Chunk length on the axis; the body input has this size on ``axis``.
    """

    external: int
    internal: int
    axis: int
    start: int = 0
    end: int = -1
    stride: int = 1
    part_size: int = 1


@dataclass(frozen=True)
class ConcatOutput(_Slicing):
    """Body output concatenated over the iterations along ``axis``.

    The body value must have size ``part_size`` on ``axis`` in every
    iteration (a rank-0 value counts as size 1 and gives a 1-D output; its
    axis must then be 0).  ``stride < 0`` concatenates in reverse iteration
    order.  ``start``/``end`` are validated like :class:`SlicedInput` ones but
    do not restrict the output, which always covers the whole axis.
    """

    internal: int
    external: int
    axis: int
    start: int = 0
    end: int = -1
    stride: int = 1
    part_size: int = 1


@dataclass(frozen=True)
class InvariantInput(_Port):
    """External input passed unchanged to the body in every iteration."""

    external: int
    internal: int
    _minimums = {"external": 0, "internal": 0}


@dataclass(frozen=True)
class MergedInput(_Port):
    """Loop-carried input: external value in iteration 0, then the value of the
    body output named by the :class:`BackEdge` whose ``to_parameter`` is
    ``internal``."""

    external: int
    internal: int
    _minimums = {"external": 0, "internal": 0}


@dataclass(frozen=True)
class LastIterationOutput(_Port):
    """Value of body output ``internal`` after the last iteration."""

    internal: int
    external: int
    _minimums = {"external": 0, "internal": 0}


@dataclass(frozen=True)
class BackEdge(_Port):
    """Body output ``from_result`` feeds body input ``to_parameter`` in the next iteration."""

    from_result: int
    to_parameter: int
    _minimums = {"from_result": 0, "to_parameter": 0}


_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


@dataclass(frozen=True)
class CurrentIteration(_Port):
    """Loop-5 ``current_iteration`` body input: receives 0, 1, 2, ...

    Parameters
    ----------
    internal : int
        Position of the body input.
    dtype : numpy dtype, optional
        int32 or int64 (the only types OpenVINO accepts).
    shape : tuple, optional
        ``()`` or ``(1,)``.
    """

    internal: int
    dtype: Any = np.int64          # anything np.dtype takes; int32 or int64 after the checks
    shape: tuple = ()
    _minimums = {"internal": 0}

    def _check(self):
        try:
            dtype = np.dtype(self.dtype)
        except TypeError:
            raise GraphError(f"{self.label}: dtype {self.dtype!r} is not a numpy dtype") from None
        if dtype not in _INDEX_DTYPES:
            raise GraphError(f"{self.label}: dtype must be int32 or int64, got {dtype}")
        shape = tuple(self.shape)
        if shape not in ((), (1,)):
            raise GraphError(f"{self.label}: shape must be () or (1,), got {shape}")
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "shape", shape)

    def value(self, i: int) -> np.ndarray:
        """The body input for iteration ``i``."""
        return np.full(self.shape, i, self.dtype)


INPUT_PORTS = (SlicedInput, InvariantInput, MergedInput)
OUTPUT_PORTS = (ConcatOutput, LastIterationOutput)
