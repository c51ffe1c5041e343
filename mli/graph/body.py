"""Bodies of TensorIterator and Loop operations.

A body is any object with a ``run(inputs)`` method: ``inputs`` is a list of
numpy arrays (one per body input, in body-input order) and the result is a
sequence of numpy arrays (one per body output).  The drivers always pass a
list; :class:`CallableBody` and :class:`IRBody` also accept a dict keyed by
body-input position or name (see :meth:`Body.positional`).  ``run`` must not modify its
inputs, and the arrays it returns must not be modified by later calls (the
drivers keep references to them for concatenated outputs and back edges).

Optional attributes the drivers use when present (see :class:`Body`):

``num_inputs`` / ``num_outputs``
    Checked against the port map when the operation is built.
``input_names`` / ``output_names``
    Used in error messages.
``output_specs``
    ``[(dtype, shape), ...]`` with ``None`` for unknown dims; needed to build
    empty concatenated outputs after zero iterations.
``source_parameter(j)``
    Index of the body input that body output ``j`` forwards unchanged, or
    ``None``; lets a zero-iteration Loop return that input's initial value.

Extension point: a fixed-point MLI body (``KernelBody``, to come) subclasses
:class:`Body`, sets ``num_inputs``/``num_outputs``/``output_specs`` and
implements ``run``; nothing in the drivers depends on the body's kind.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

__all__ = ["BodyProtocol", "Body", "CallableBody", "IRBody"]


@runtime_checkable
class BodyProtocol(Protocol):
    """Structural type of a body: anything with ``run(list) -> sequence``."""

    def run(self, inputs: Sequence[np.ndarray]) -> Sequence[np.ndarray]:
        ...


class Body:
    """Base class of bodies; subclasses implement :meth:`run`.

    Attributes
    ----------
    num_inputs, num_outputs : int or None
        Number of body inputs/outputs, ``None`` when unknown.
    input_names, output_names : tuple of str or None
        Names for error messages.
    output_specs : list of (numpy.dtype, tuple) or None
        Element type and shape (``None`` for unknown dims) of each output.
    """

    num_inputs: int | None = None
    num_outputs: int | None = None
    input_names: tuple | None = None
    output_names: tuple | None = None
    output_specs: list | None = None

    def run(self, inputs: Sequence[np.ndarray]) -> Sequence[np.ndarray]:
        """Run one iteration.

        Parameters
        ----------
        inputs : list of numpy.ndarray
            One array per body input, in body-input order.

        Returns
        -------
        sequence of numpy.ndarray
            One array per body output.
        """
        raise NotImplementedError

    def positional(self, inputs) -> list:
        """Turn ``{position or name: array}`` into a list in body-input order.

        Lists and tuples are returned unchanged.
        """
        if type(inputs) is not dict:
            return inputs
        n = self.num_inputs if self.num_inputs is not None else len(inputs)
        names = {name: i for i, name in enumerate(self.input_names or ())}
        out = [None] * n
        for key, value in inputs.items():
            i = names.get(key, key)
            if not isinstance(i, int) or not 0 <= i < n:
                raise KeyError(f"unknown body input {key!r}")
            out[i] = value
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            raise KeyError(f"missing {describe_input(self, missing[0])}")
        return out

    def source_parameter(self, output: int) -> int | None:
        """Body input that output ``output`` forwards unchanged, else ``None``."""
        return None

    def describe_input(self, i: int) -> str:
        """``"body input 2 ('h_in')"``-style text for messages."""
        return _describe("body input", i, self.input_names)

    def describe_output(self, j: int) -> str:
        """``"body output 1 ('y')"``-style text for messages."""
        return _describe("body output", j, self.output_names)


def _describe(kind: str, i: int, names) -> str:
    if names is not None and 0 <= i < len(names) and names[i]:
        return f"{kind} {i} ({names[i]!r})"
    return f"{kind} {i}"


def describe_input(body, i: int) -> str:
    """Describe input ``i`` of any body (with or without the :class:`Body` base)."""
    return _describe("body input", i, getattr(body, "input_names", None))


def describe_output(body, j: int) -> str:
    """Describe output ``j`` of any body (with or without the :class:`Body` base)."""
    return _describe("body output", j, getattr(body, "output_names", None))


class CallableBody(Body):
    """A body given by a Python function on numpy arrays.

    Parameters
    ----------
    fn : callable
        ``fn(*inputs)`` returns one array or a tuple/list of arrays.
    num_inputs, num_outputs : int, optional
        Declared counts (checked against the port map and each result).
    output_specs : list of (dtype, shape), optional
        Needed only for concatenated outputs of a Loop that may run zero times.
    input_names, output_names : sequence of str, optional
        Names used in error messages.

    Examples
    --------
    >>> body = CallableBody(lambda x, acc: (acc + x,), num_inputs=2, num_outputs=1)
    """

    def __init__(self, fn: Callable, num_inputs: int | None = None, num_outputs: int | None = None,
                 *, output_specs=None, input_names=None, output_names=None):
        if not callable(fn):
            raise TypeError(f"CallableBody needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self.num_inputs = num_inputs
        self.num_outputs = num_outputs
        self.output_specs = None if output_specs is None else [
            (np.dtype(d), tuple(s)) for d, s in output_specs]
        self.input_names = None if input_names is None else tuple(input_names)
        self.output_names = None if output_names is None else tuple(output_names)

    def run(self, inputs):
        """Call ``fn(*inputs)`` and return its outputs as a tuple of arrays."""
        out = self.fn(*self.positional(inputs))
        if isinstance(out, (tuple, list)):
            out = tuple(o if type(o) is np.ndarray else np.asarray(o) for o in out)
        else:
            out = (out if type(out) is np.ndarray else np.asarray(out),)
        if self.num_outputs is not None and len(out) != self.num_outputs:
            raise ValueError(f"body function returned {len(out)} outputs, "
                             f"expected {self.num_outputs}")
        return out


class IRBody(Body):
    """A body read from OpenVINO IR (the ``<body>`` of a TensorIterator/Loop).

    Parameters
    ----------
    graph : mli.ir.Graph
        Parsed body graph; its Parameters (XML order) are the body inputs,
        its Results (XML order) the body outputs.
    """

    def __init__(self, graph):
        self.graph = graph
        self._program = graph.program()
        params, results = graph.parameters, graph.results
        self.num_inputs, self.num_outputs = len(params), len(results)
        self.input_names = tuple(p.name for p in params)
        self.output_names = tuple(r.name for r in results)
        self.output_specs = [(r.inputs[0].dtype, r.inputs[0].dims) for r in results]
        index = {p.id: i for i, p in enumerate(params)}
        self._sources = []
        for r in results:
            src, _ = graph.producer(r.id, r.inputs[0].id)
            self._sources.append(index.get(src.id) if src.type == "Parameter" else None)

    def run(self, inputs):
        """Evaluate the body graph once."""
        return self._program.run(self.positional(inputs))

    def source_parameter(self, output):
        """Parameter index when the Result is fed straight by a Parameter."""
        return self._sources[output]
