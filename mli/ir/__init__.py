"""OpenVINO IR (v10, v11) reader and numpy interpreter.

:func:`read_graph` parses an ``.xml``/``.bin`` pair into a :class:`Graph`
(layers, ports, edges, Const data, nested TensorIterator/Loop bodies);
:func:`read_model` also compiles it into a callable :class:`Model`::

    model = read_model("net.xml")
    outputs = model({"X": x, "H0": h0})     # {"Y": ..., "H_last": ...}

Strictness: a document with a DOCTYPE or ENTITY declaration, a dangling edge,
a cycle, an unconnected input port, Const data outside the ``.bin``, an
unknown op, op version, attribute or element type, a layer with the wrong
number of ports for its op (a Result without its input, ...), or TI/Loop
bodies nested more than :data:`MAX_BODY_DEPTH` deep raises :class:`IRError`
(unsupported features raise its subclass :class:`IRUnsupportedError`) naming
the layer id, name and type.  Every layer is parsed and compiled under one
guard, so malformed structure that slips past the explicit checks still
gives an IRError naming the layer (the original exception chained), never
an ``IndexError``, ``KeyError``, ``AttributeError`` or ``TypeError``.
Nothing is silently approximated: ops compute in the element type the IR
declares and every op result is checked against the declared output element
type.

TensorIterator and Loop layers run through :mod:`mli.graph`.  Where OpenVINO
components disagree, the reader follows the OpenVINO CPU plugin (see
``shared/spec/openvino_ti_loop.md``): only whole-axis port-map ranges
(``start=0,end=-1`` with a positive stride, ``start=-1,end=0`` with a negative
one) and ``|stride| == part_size`` are accepted, negative port-map axes are
refused, a TensorIterator directly inside a TensorIterator body is refused, a
TensorIterator without sliced inputs takes its iteration count from the static
dims of its first concatenated output, a Loop whose execution-condition input
is a Const false returns the empty outputs OpenVINO's shape inference gives
them, and a TI/Loop result whose shape disagrees with a static shape of the IR
is an error (OpenVINO would hand back uninitialised memory).

Layout of the package: :mod:`mli.ir.reader` (XML/bin parsing, :func:`read_graph`),
:mod:`mli.ir.graph` (:class:`Graph`, :class:`Layer`, ports and edges),
:mod:`mli.ir.program` (the compiled program of a graph: its steps, constant
folding, hoisting, the ReadValue/Assign store), :mod:`mli.ir.model` (the callable
:class:`Model` and :func:`read_model`), :mod:`mli.ir.registry` (each op's type, versions,
attributes and port counts, registered in one place) and :mod:`mli.ir.ops`
(one module per op family: elementwise, movement, reductions, nn, recurrent,
subgraph, state).  :data:`SUPPORTED_OPS` lists the ops and their versions.

Finding the RNN cells of a TensorIterator body and their weights::

    g = read_graph("ti_lstm.xml")
    for path, layer in g.walk():
        if layer.type in ("LSTMCell", "RNNCell", "GRUCell"):
            body = path[-1].body                      # the enclosing TI/Loop's body
            W = body.input_layer(layer, 3).data       # Const feeding input 3
"""

from __future__ import annotations

from ..graph import GraphError
from . import ops  # noqa: F401  (registers every op)
from .errors import ELEMENT_TYPES, MAX_BODY_DEPTH, IRError, IRUnsupportedError, _wrap
from .graph import Edge, Graph, Layer, Port, PortMapEntry
from .ops.recurrent import _check_cell
from .model import Model, TensorInfo, read_model
from .program import _Program, compute_dtype
from .reader import read_graph
from .registry import build as _build
from .registry import check_supported, ops_by_family, supported_ops

SUPPORTED_OPS = supported_ops()
"""Op type -> supported opset versions."""

__all__ = ["IRError", "IRUnsupportedError", "read_graph", "read_model", "Graph", "Layer", "Port",
           "Edge", "PortMapEntry", "Model", "TensorInfo", "ELEMENT_TYPES", "SUPPORTED_OPS",
           "MAX_BODY_DEPTH", "check_supported", "supported_ops", "ops_by_family", "compute_dtype"]
