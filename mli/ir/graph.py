"""The parsed structure of an IR: ports, edges, layers and graphs."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .errors import ELEMENT_TYPES, IRError, _ctx
from .program import _Program


@dataclass(frozen=True)
class Port:
    """A layer port: id, element type (IR name, e.g. ``"f32"``), dims (``None`` = dynamic)."""

    id: int
    element_type: str | None
    dims: tuple
    names: tuple = ()

    @property
    def dtype(self) -> np.dtype | None:
        """numpy dtype of the element type (``None`` when the IR gives none)."""
        return None if self.element_type is None else ELEMENT_TYPES[self.element_type]


@dataclass(frozen=True)
class Edge:
    """Connection from an output port to an input port (layer ids and port ids)."""

    from_layer: int
    from_port: int
    to_layer: int
    to_port: int


@dataclass(frozen=True)
class PortMapEntry:
    """One ``<input>``/``<output>`` of a TensorIterator/Loop ``<port_map>``, as written."""

    kind: str
    external_port_id: int
    internal_layer_id: int
    axis: int | None = None
    start: int = 0
    end: int = -1
    stride: int = 1
    part_size: int = 1
    purpose: str | None = None


@dataclass(eq=False)
class Layer:
    """An IR layer.

    Attributes
    ----------
    id, name, type, version : int, str, str, str
        As in the XML (``version`` is the opset, e.g. ``"opset4"``).
    attrs : dict of str
        Raw ``<data>`` attributes.
    inputs, outputs : tuple of Port
        In port-id order.
    data : numpy.ndarray or None
        Read-only Const value.
    body : Graph or None
        Body of a TensorIterator/Loop.
    port_map : tuple of PortMapEntry
    back_edges : tuple of (from_layer, to_layer)
        Body layer ids.
    where : str
        Enclosing context for messages (``""`` at top level).
    """

    id: int
    name: str
    type: str
    version: str
    attrs: dict
    inputs: tuple
    outputs: tuple
    output_names: tuple = ()
    data: np.ndarray | None = None
    body: "Graph | None" = None
    port_map: tuple = ()
    back_edges: tuple = ()
    where: str = ""

    def __str__(self):
        s = f"layer {self.id} {self.name!r} ({self.type})"
        return f"{s} in {self.where}" if self.where else s

    def input_port(self, port_id: int) -> Port:
        """Input port with this id."""
        return _port_by_id(self, self.inputs, port_id, "input")

    def output_port(self, port_id: int) -> Port:
        """Output port with this id."""
        return _port_by_id(self, self.outputs, port_id, "output")


def _port_by_id(layer, ports, pid, kind):
    for p in ports:
        if p.id == pid:
            return p
    raise IRError(f"{layer}: no {kind} port {pid}")


class Graph:
    """A parsed IR graph (the whole network or a TI/Loop body).

    Attributes
    ----------
    layers : tuple of Layer
        In XML order.
    edges : tuple of Edge
    parameters, results : tuple of Layer
        Parameter and Result layers in XML order (= input/output order).
    order : tuple of Layer
        A topological order.
    """

    def __init__(self, layers, edges, where: str = "") -> None:
        self.layers = tuple(layers)
        self.edges = tuple(edges)
        self.where = where
        self.parent: Graph | None = None   # the enclosing graph of a TensorIterator/Loop body
        self._by_id: dict[int, Layer] = {}
        for layer in self.layers:
            if layer.id in self._by_id:
                raise IRError(f"{_ctx(where)}duplicate layer id {layer.id}")
            self._by_id[layer.id] = layer
        self.parameters = tuple(l for l in self.layers if l.type == "Parameter")
        self.results = tuple(l for l in self.layers if l.type == "Result")
        # (to layer, to port) -> (from layer, from port); (from ...) -> [(to ...), ...]
        self._producer: dict[tuple[int, int], tuple[int, int]] = {}
        self._consumers: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for e in self.edges:
            self._check_edge(e)
        for layer in self.layers:
            for p in layer.inputs:
                if (layer.id, p.id) not in self._producer:
                    raise IRError(f"{layer}: input port {p.id} is not connected")
        self.order = self._toposort()
        self._program: _Program | None = None

    def _check_edge(self, e):
        text = f"{_ctx(self.where)}edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port}"
        src, dst = self._by_id.get(e.from_layer), self._by_id.get(e.to_layer)
        if src is None or dst is None:
            raise IRError(f"{text} is dangling: no layer {e.to_layer if src else e.from_layer}")
        if not any(p.id == e.from_port for p in src.outputs):
            raise IRError(f"{text} is dangling: {src} has no output port {e.from_port}")
        if not any(p.id == e.to_port for p in dst.inputs):
            raise IRError(f"{text} is dangling: {dst} has no input port {e.to_port}")
        if (e.to_layer, e.to_port) in self._producer:
            raise IRError(f"{text}: input port {e.to_port} of {dst} has two producers")
        self._producer[(e.to_layer, e.to_port)] = (e.from_layer, e.from_port)
        self._consumers.setdefault((e.from_layer, e.from_port), []).append(
            (e.to_layer, e.to_port))

    def _toposort(self):
        pos = {l.id: k for k, l in enumerate(self.layers)}
        indeg = {l.id: len(l.inputs) for l in self.layers}
        succ = {}
        for (dst, _), (src, _) in self._producer.items():
            succ.setdefault(src, []).append(dst)
        ready = [pos[i] for i, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            layer = self.layers[heapq.heappop(ready)]
            order.append(layer)
            for dst in succ.get(layer.id, ()):
                indeg[dst] -= 1
                if indeg[dst] == 0:
                    heapq.heappush(ready, pos[dst])
        if len(order) != len(self.layers):
            stuck = [self._by_id[i] for i, d in indeg.items() if d > 0]
            raise IRError(f"{_ctx(self.where)}the graph has a cycle through "
                          + ", ".join(str(l) for l in stuck[:4]))
        return tuple(order)

    def layer(self, layer_id: int) -> Layer:
        """Layer with this id."""
        try:
            return self._by_id[layer_id]
        except KeyError:
            raise IRError(f"{_ctx(self.where)}no layer {layer_id}") from None

    def producer(self, layer_id: int, port_id: int) -> tuple[Layer, Port]:
        """``(layer, output port)`` feeding input port ``port_id`` of layer ``layer_id``."""
        try:
            src_id, sp = self._producer[(layer_id, port_id)]
        except KeyError:
            raise IRError(f"{self.layer(layer_id)}: no connected input port {port_id}") from None
        src = self._by_id[src_id]
        return src, src.output_port(sp)

    def input_layer(self, layer: Layer | int, index: int) -> Layer:
        """Layer feeding the ``index``-th input (in port order) of ``layer``."""
        layer = self.layer(layer) if isinstance(layer, int) else layer
        if not -len(layer.inputs) <= index < len(layer.inputs):
            raise IRError(f"{layer}: no input {index} (it has {len(layer.inputs)})")
        return self.producer(layer.id, layer.inputs[index].id)[0]

    def consumers(self, layer_id: int, port_id: int) -> list[tuple[Layer, Port]]:
        """``(layer, input port)`` pairs fed by output port ``port_id`` of ``layer_id``."""
        return [(self._by_id[l], self._by_id[l].input_port(p))
                for l, p in self._consumers.get((layer_id, port_id), ())]

    def find(self, op_type: str) -> list[Layer]:
        """Layers of this graph (not nested bodies) with the given type."""
        return [l for l in self.layers if l.type == op_type]

    def walk(self, path=()):
        """Yield ``(path, layer)`` for every layer, recursing into bodies.

        ``path`` is the tuple of enclosing TensorIterator/Loop layers (empty at
        top level); ``path[-1].body`` is the graph holding ``layer``.
        """
        for layer in self.layers:
            yield path, layer
            if layer.body is not None:
                yield from layer.body.walk(path + (layer,))

    def program(self) -> _Program:
        """The compiled evaluator of this graph (built once)."""
        if self._program is None:
            self._program = _Program(self)
        return self._program

    def __repr__(self):
        return f"<Graph {self.where or 'top level'}: {len(self.layers)} layers>"


