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

Finding the RNN cells of a TensorIterator body and their weights::

    g = read_graph("ti_lstm.xml")
    for path, layer in g.walk():
        if layer.type in ("LSTMCell", "RNNCell", "GRUCell"):
            body = path[-1].body                      # the enclosing TI/Loop's body
            W = body.input_layer(layer, 3).data       # Const feeding input 3
"""

from __future__ import annotations

import heapq
import math
import re
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .graph import (BackEdge, ConcatOutput, CurrentIteration, GraphError, InvariantInput,
                    IRBody, LastIterationOutput, Loop, MergedInput, SlicedInput, TensorIterator)

__all__ = ["IRError", "IRUnsupportedError", "read_graph", "read_model", "Graph", "Layer", "Port",
           "Edge", "PortMapEntry", "Model", "ELEMENT_TYPES", "SUPPORTED_OPS", "MAX_BODY_DEPTH"]

#: deepest nesting of TensorIterator/Loop bodies (each level costs Python stack
#: frames when parsing, compiling and running; real models nest 1 or 2 deep)
MAX_BODY_DEPTH = 32


class IRError(ValueError):
    """Malformed or inconsistent OpenVINO IR, or invalid data for it."""


class IRUnsupportedError(IRError, NotImplementedError):
    """Valid IR that uses an op, version, attribute or type this reader does not support."""


ELEMENT_TYPES = {
    "boolean": np.bool_, "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
}
ELEMENT_TYPES = {k: np.dtype(v) for k, v in ELEMENT_TYPES.items()}
_PRECISIONS = {"BOOL": "boolean", "FP16": "f16", "FP32": "f32", "FP64": "f64", "I8": "i8",
               "I16": "i16", "I32": "i32", "I64": "i64", "U8": "u8", "U16": "u16", "U32": "u32",
               "U64": "u64"}
_FORBIDDEN = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


# ---------------------------------------------------------------------------- structure
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

    def __init__(self, layers, edges, where=""):
        self.layers = tuple(layers)
        self.edges = tuple(edges)
        self.where = where
        self._by_id = {}
        for layer in self.layers:
            if layer.id in self._by_id:
                raise IRError(f"{_ctx(where)}duplicate layer id {layer.id}")
            self._by_id[layer.id] = layer
        self.parameters = tuple(l for l in self.layers if l.type == "Parameter")
        self.results = tuple(l for l in self.layers if l.type == "Result")
        self._producer, self._consumers = {}, {}
        for e in self.edges:
            self._check_edge(e)
        for layer in self.layers:
            for p in layer.inputs:
                if (layer.id, p.id) not in self._producer:
                    raise IRError(f"{layer}: input port {p.id} is not connected")
        self.order = self._toposort()
        self._program = None

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
            src, sp = self._producer[(layer_id, port_id)]
        except KeyError:
            raise IRError(f"{self.layer(layer_id)}: no connected input port {port_id}") from None
        src = self._by_id[src]
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

    def program(self) -> "_Program":
        """The compiled evaluator of this graph (built once)."""
        if self._program is None:
            self._program = _Program(self)
        return self._program

    def __repr__(self):
        return f"<Graph {self.where or 'top level'}: {len(self.layers)} layers>"


def _ctx(where):
    return f"{where}: " if where else ""


def _located(layer, msg):
    """An IRError whose message starts with the layer's id, name and type;
    ``located`` tells the guards not to prefix it again."""
    err = IRError(f"{layer}: {msg}")
    err.located = True
    return err


# What malformed structure can make reader or builder code raise besides IRError.
_FOREIGN = (IndexError, KeyError, AttributeError, TypeError, ValueError, ArithmeticError)


@contextmanager
def _about(layer, prefix_ir_errors=True):
    """Guard the parsing or compiling of one layer: an error escaping the
    block names `layer` (id, name, type).  IRError/GraphError messages get
    the layer prefixed unless already located (or ``prefix_ir_errors`` is
    false, for parse code whose messages start with the layer); any other
    failure on malformed structure becomes an IRError naming the layer
    (the original exception chained)."""
    try:
        yield
    except (IRError, GraphError) as e:
        if not prefix_ir_errors or getattr(e, "located", False):
            raise
        raise _wrap(e, layer) from None
    except _FOREIGN as e:
        raise _located(layer, f"malformed or inconsistent layer ({type(e).__name__}: {e})") from e


def _count_text(n, kind):
    if n is None:
        return f"any number of {kind} ports"
    n = n if isinstance(n, tuple) else (n,)
    return f"{' or '.join(map(str, n))} {kind} port{'' if n == (1,) else 's'}"


def _expect_ports(layer, n_in, n_out):
    """IRError naming `layer` unless it has `n_in` input and `n_out` output
    ports (an int, a tuple of accepted counts, or None for any number)."""
    def ok(n, have):
        return n is None or have in (n if isinstance(n, tuple) else (n,))
    if not ok(n_in, len(layer.inputs)) or not ok(n_out, len(layer.outputs)):
        raise _located(layer, f"a layer of type {layer.type} has {_count_text(n_in, 'input')} and "
                              f"{_count_text(n_out, 'output')}; this one has {len(layer.inputs)} and "
                              f"{len(layer.outputs)}")


# ---------------------------------------------------------------------------- parsing
class _Bin:
    def __init__(self, path):
        self.path = path
        self._data = None

    def read(self, layer, element_type, shape, offset, size):
        if self._data is None:
            if self.path is None or not Path(self.path).is_file():
                raise IRError(f"{layer}: Const data needs the weights file {self.path}, "
                              f"which does not exist")
            self._data = Path(self.path).read_bytes()
        dtype = ELEMENT_TYPES[element_type]
        count = math.prod(shape)
        need = count * dtype.itemsize
        if offset < 0 or size < 0 or offset + size > len(self._data):
            raise IRError(f"{layer}: Const data [offset {offset}, size {size}] lies outside "
                          f"the {len(self._data)}-byte weights file")
        if size < need:
            raise IRError(f"{layer}: Const size {size} is too small for {count} {element_type} "
                          f"elements ({need} bytes)")
        if dtype == np.bool_:
            raw = np.frombuffer(self._data, np.uint8, count, offset)
            arr = raw != 0
            arr.flags.writeable = False
        else:
            arr = np.frombuffer(self._data, dtype.newbyteorder("<"), count, offset)
            if not arr.dtype.isnative:
                arr = arr.astype(dtype)
                arr.flags.writeable = False
        return arr.reshape(shape)


def _int(text, what):
    try:
        return int(text)
    except (TypeError, ValueError):
        raise IRError(f"{what}: {text!r} is not an integer") from None


def _shape_attr(text, what, allow_dynamic):
    text = text.strip().strip("[]").strip()
    if not text:
        return ()
    dims = []
    for tok in text.split(","):
        tok = tok.strip()
        if tok in ("?", "-1") or ".." in tok:
            if not allow_dynamic:
                raise IRError(f"{what}: shape must be static, got {text!r}")
            dims.append(None)
        else:
            d = _int(tok, what)
            if d < 0:
                raise IRError(f"{what}: negative dimension in shape {text!r}")
            dims.append(d)
    return tuple(dims)


def _element_type(text, what):
    if text not in ELEMENT_TYPES:
        raise IRUnsupportedError(f"{what}: element type {text!r} is not supported "
                                 f"(supported: {', '.join(ELEMENT_TYPES)})")
    return text


def _split_names(text):
    if not text:
        return ()
    parts = re.split(r"(?<!\\),", text)
    return tuple(p.strip().replace("\\,", ",") for p in parts if p.strip())


def _parse_port(el, what):
    pid = _int(el.get("id"), f"{what}: port id")
    prec = el.get("precision")
    et = None
    if prec is not None:
        et = _PRECISIONS.get(prec.upper(), prec.lower() if prec.lower() in ELEMENT_TYPES else None)
        if et is None:
            raise IRUnsupportedError(f"{what}: port {pid} precision {prec!r} is not supported")
    dims = []
    for d in el.findall("dim"):
        v = _int((d.text or "").strip(), f"{what}: port {pid} dim")
        dims.append(None if v < 0 else v)
    return Port(pid, et, tuple(dims), _split_names(el.get("names", "")))


_LAYER_CHILDREN = {"data", "input", "output", "port_map", "back_edges", "body", "rt_info"}


def _parse_layer(el, binf, where, depth=0):
    lid = _int(el.get("id"), f"{_ctx(where)}layer id")
    name, typ, ver = el.get("name", ""), el.get("type"), el.get("version", "")
    if not typ:
        raise IRError(f"{_ctx(where)}layer {lid} {name!r} has no type")
    stub = Layer(lid, name, typ, ver, {}, (), (), where=where)
    with _about(stub, prefix_ir_errors=False):  # parse messages name the layer already
        return _parse_layer_body(el, binf, where, depth, stub)


def _parse_layer_body(el, binf, where, depth, stub):
    lid, name, typ, ver = stub.id, stub.name, stub.type, stub.version
    for child in el:
        if child.tag not in _LAYER_CHILDREN:
            raise IRUnsupportedError(f"{stub}: unexpected element <{child.tag}>")
    data = el.find("data")
    attrs = dict(data.attrib) if data is not None else {}
    ports = {}
    for kind in ("input", "output"):
        sec = el.find(kind)
        lst = [] if sec is None else [_parse_port(p, str(stub)) for p in sec.findall("port")]
        ports[kind] = tuple(sorted(lst, key=lambda p: p.id))
    ids = [p.id for p in ports["input"] + ports["output"]]
    if len(set(ids)) != len(ids):
        raise IRError(f"{stub}: duplicate port ids {ids}")
    layer = Layer(lid, name, typ, ver, attrs, ports["input"], ports["output"],
                  output_names=_split_names(el.get("output_names", "")), where=where)
    if typ == "Const":
        _parse_const(layer, binf)
    elif typ == "Parameter":
        _parse_parameter(layer)
    elif typ == "Result":
        _expect_ports(layer, 1, 0)
    body = el.find("body")
    if typ in ("TensorIterator", "Loop"):
        if body is None:
            raise IRError(f"{layer}: missing <body>")
        if depth >= MAX_BODY_DEPTH:
            raise _located(layer, f"TensorIterator/Loop bodies nested more than {MAX_BODY_DEPTH} deep")
        layer.body = _parse_graph(body, binf, f"body of {layer}", depth + 1)
        layer.port_map = _parse_port_map(el.find("port_map"), layer)
        layer.back_edges = tuple(
            (_int(e.get("from-layer"), f"{layer}: back edge"), _int(e.get("to-layer"),
                                                                     f"{layer}: back edge"))
            for e in (el.find("back_edges") if el.find("back_edges") is not None else ()))
    elif body is not None or el.find("port_map") is not None:
        raise IRError(f"{layer}: only TensorIterator and Loop layers may have a body")
    return layer


def _parse_const(layer, binf):
    a = layer.attrs
    unknown = set(a) - {"element_type", "shape", "offset", "size"}
    if unknown:
        raise IRUnsupportedError(f"{layer}: unsupported Const attribute(s) {sorted(unknown)}")
    for k in ("element_type", "shape", "offset", "size"):
        if k not in a:
            raise IRError(f"{layer}: Const without {k!r}")
    et = _element_type(a["element_type"], str(layer))
    shape = _shape_attr(a["shape"], str(layer), allow_dynamic=False)
    _expect_ports(layer, 0, 1)
    _check_port(layer, layer.outputs[0], et, shape)
    layer.data = binf.read(layer, et, shape, _int(a["offset"], f"{layer}: offset"),
                           _int(a["size"], f"{layer}: size"))


def _parse_parameter(layer):
    a = layer.attrs
    unknown = set(a) - {"element_type", "shape"}
    if unknown:
        raise IRUnsupportedError(f"{layer}: unsupported Parameter attribute(s) {sorted(unknown)}")
    if "element_type" not in a or "shape" not in a:
        raise IRError(f"{layer}: Parameter needs element_type and shape")
    et = _element_type(a["element_type"], str(layer))
    shape = _shape_attr(a["shape"], str(layer), allow_dynamic=True)
    _expect_ports(layer, 0, 1)
    _check_port(layer, layer.outputs[0], et, shape)


def _check_port(layer, port, et, shape):
    if port.element_type is not None and port.element_type != et:
        raise IRError(f"{layer}: port {port.id} precision {port.element_type} disagrees with "
                      f"element_type {et}")
    if len(port.dims) != len(shape) or any(
            a is not None and b is not None and a != b for a, b in zip(port.dims, shape)):
        raise IRError(f"{layer}: port {port.id} dims {list(port.dims)} disagree with shape "
                      f"{list(shape)}")


_PM_ATTRS = {"external_port_id", "internal_layer_id", "axis", "start", "end", "stride",
             "part_size", "purpose"}


def _parse_port_map(el, layer):
    if el is None:
        raise IRError(f"{layer}: missing <port_map>")
    entries = []
    for child in el:
        if child.tag not in ("input", "output"):
            raise IRError(f"{layer}: unexpected <{child.tag}> in <port_map>")
        a = child.attrib
        unknown = set(a) - _PM_ATTRS
        what = f"{layer}: port_map {child.tag} {dict(a)}"
        if unknown:
            raise IRUnsupportedError(f"{what}: unsupported attribute(s) {sorted(unknown)}")
        if "external_port_id" not in a or "internal_layer_id" not in a:
            raise IRError(f"{what}: needs external_port_id and internal_layer_id")
        get = lambda k, d: _int(a[k], what) if k in a else d  # noqa: E731
        axis = get("axis", None)
        if axis is not None and axis < 0:
            raise IRUnsupportedError(f"{what}: negative axis {axis} is not supported "
                                     f"(OpenVINO refuses it)")
        entries.append(PortMapEntry(child.tag, get("external_port_id", None),
                                    get("internal_layer_id", None), axis, get("start", 0),
                                    get("end", -1), get("stride", 1), get("part_size", 1),
                                    a.get("purpose")))
    return tuple(entries)


def _parse_graph(el, binf, where="", depth=0):
    layers_el = el.find("layers")
    if layers_el is None:
        raise IRError(f"{_ctx(where)}missing <layers>")
    layers = [_parse_layer(l, binf, where, depth) for l in layers_el.findall("layer")]
    edges = []
    edges_el = el.find("edges")
    for e in (edges_el.findall("edge") if edges_el is not None else ()):
        vals = [_int(e.get(k), f"{_ctx(where)}edge {dict(e.attrib)}")
                for k in ("from-layer", "from-port", "to-layer", "to-port")]
        edges.append(Edge(*vals))
    return Graph(layers, edges, where)


def read_graph(xml_path, bin_path=None) -> Graph:
    """Parse an OpenVINO IR v10/v11 model into a :class:`Graph` (no compilation).

    Parameters
    ----------
    xml_path : str or os.PathLike
        The ``.xml`` file.
    bin_path : str or os.PathLike, optional
        The weights file; default: ``xml_path`` with suffix ``.bin``.  Needed
        only when the model has Const layers.

    Returns
    -------
    Graph
        With ``.version`` (10 or 11) and ``.name`` set.

    Raises
    ------
    IRError
        Malformed XML, DOCTYPE/ENTITY declarations, structural errors,
        Const data outside the weights file.
    IRUnsupportedError
        Unsupported IR version or element type.
    """
    xml_path = Path(xml_path)
    raw = xml_path.read_bytes()
    if _FORBIDDEN.search(raw):
        raise IRError(f"{xml_path}: DOCTYPE/ENTITY declarations are not allowed in IR files")
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as e:
        raise IRError(f"{xml_path}: malformed XML: {e}") from None
    if root.tag != "net":
        raise IRError(f"{xml_path}: root element is <{root.tag}>, expected <net>")
    version = root.get("version")
    if version not in ("10", "11"):
        raise IRUnsupportedError(f"{xml_path}: IR version {version!r} is not supported "
                                 f"(10 and 11 are)")
    binf = _Bin(Path(bin_path) if bin_path is not None else xml_path.with_suffix(".bin"))
    graph = _parse_graph(root, binf)
    graph.version, graph.name = int(version), root.get("name", "")
    return graph


# ---------------------------------------------------------------------------- evaluation
def _wrap(e: Exception, layer: Layer) -> Exception:
    """Same error class (IRError for foreign ones) with the layer named first."""
    cls = type(e) if isinstance(e, (IRError, GraphError)) else IRError
    err = cls(f"{layer}: {e}")
    err.located = True
    return err


class _Program:
    """A graph compiled into a flat list of steps over numbered value slots."""

    def __init__(self, graph: Graph):
        self.graph = graph
        slots = {}

        def slot(lid, pid):
            return slots.setdefault((lid, pid), len(slots))

        template, steps = {}, []
        for layer in graph.order:
            with _about(layer):
                if layer.type in ("Parameter", "Const", "Result"):
                    # port counts are checked when parsing; a Graph may also be built by hand
                    _expect_ports(layer, *((1, 0) if layer.type == "Result" else (0, 1)))
                if layer.type == "Parameter":
                    slot(layer.id, layer.outputs[0].id)
                elif layer.type == "Const":
                    template[slot(layer.id, layer.outputs[0].id)] = layer.data
                elif layer.type != "Result":
                    fn = _build(layer, graph)
                    ins = [slot(*graph._producer[(layer.id, p.id)]) for p in layer.inputs]
                    outs = [slot(layer.id, p.id) for p in layer.outputs]
                    steps.append((fn, ins, outs, [p.dtype for p in layer.outputs], layer))
        self.template = [template.get(i) for i in range(len(slots))]
        self.steps = steps
        self.param_slots = [slots[(p.id, p.outputs[0].id)] for p in graph.parameters]
        self.result_slots = [slots[graph._producer[(r.id, r.inputs[0].id)]]
                             for r in graph.results]

    def run(self, inputs):
        """Evaluate the graph on Parameter values (in Parameter order)."""
        vals = self.template.copy()
        for s, x in zip(self.param_slots, inputs):
            vals[s] = x
        for fn, ins, outs, dtypes, layer in self.steps:
            try:
                r = fn(*[vals[i] for i in ins])
            except Exception as e:  # every failure gets the (innermost) layer's name
                if getattr(e, "located", False):
                    raise
                raise _wrap(e, layer) from e
            if len(outs) == 1:
                r = (r,)
            for s, v, dt in zip(outs, r, dtypes):
                if type(v) is not np.ndarray:
                    v = np.asarray(v)
                if dt is not None and v.dtype != dt:
                    raise IRError(f"{layer}: produced {v.dtype}, the IR declares {dt}")
                vals[s] = v
        return [vals[s] for s in self.result_slots]


_REQUIRED = object()
_OPS = {}               # type -> (versions, attribute spec, builder)


def _op(types, versions, **spec):
    """Register a builder ``fn(layer, attrs, graph) -> callable`` for op types."""
    def deco(builder):
        for t in (types,) if isinstance(types, str) else types:
            _OPS[t] = (frozenset(versions), spec, builder)
        return builder
    return deco


def _build(layer, graph):
    entry = _OPS.get(layer.type)
    if entry is None:
        raise IRUnsupportedError(f"op type {layer.type!r} is not supported")
    versions, spec, builder = entry
    if layer.version not in versions:
        raise IRUnsupportedError(f"{layer.type} version {layer.version!r} is not supported "
                                 f"(supported: {', '.join(sorted(versions))})")
    if "_spec" in spec:
        spec = spec["_spec"](layer)
    attrs = {}
    unknown = set(layer.attrs) - set(spec)
    if unknown:
        raise IRUnsupportedError(f"unsupported attribute(s) {sorted(unknown)}")
    for key, (parse, default) in spec.items():
        if key in layer.attrs:
            try:
                attrs[key] = parse(layer.attrs[key])
            except (ValueError, KeyError, TypeError):
                raise IRError(f"attribute {key}={layer.attrs[key]!r} is invalid") from None
        elif default is _REQUIRED:
            raise IRError(f"missing required attribute {key!r}")
        else:
            attrs[key] = default
    _expect_ports(layer, getattr(builder, "n_inputs", None), getattr(builder, "n_outputs", 1))
    return builder(layer, attrs, graph)


def _inputs(n, n_outputs=1):
    """Declare a builder's accepted input count(s) and its output count (None: any)."""
    def deco(builder):
        builder.n_inputs, builder.n_outputs = n, n_outputs
        return builder
    return deco


def _bool(text):
    t = text.strip().lower()
    if t not in ("true", "false", "1", "0"):
        raise ValueError(text)
    return t in ("true", "1")


def _strlist(text):
    return [s.strip() for s in text.split(",") if s.strip()]


def _choice(*options):
    def parse(text):
        if text not in options:
            raise ValueError(text)
        return text
    return parse


def _arr(r):
    return r if type(r) is np.ndarray else np.asarray(r)


def _ints(x, what):
    x = np.asarray(x)
    if x.dtype.kind not in "iu" or x.ndim > 1:
        raise IRError(f"{what} must be an integer scalar or 1-D tensor, "
                      f"got {x.dtype}{list(x.shape)}")
    return [int(v) for v in x.reshape(-1)]


def _axis(a, rank, what="axis"):
    if not -rank <= a < max(rank, 1):
        raise IRError(f"{what} {a} out of range for rank {rank}")
    return a + rank if a < 0 else a


# --- element-wise
_BROADCAST = {"auto_broadcast": (_choice("numpy", "none"), "numpy")}


def _binary(ufunc):
    def builder(layer, a, graph):
        if a["auto_broadcast"] == "none":
            def fn(x, y):
                if x.shape != y.shape:
                    raise IRError(f"auto_broadcast=none needs equal shapes, got "
                                  f"{list(x.shape)} and {list(y.shape)}")
                return _arr(ufunc(x, y))
            return fn
        return lambda x, y: _arr(ufunc(x, y))
    return _inputs(2)(builder)


for _t, _u in {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply,
               "Maximum": np.maximum, "Minimum": np.minimum, "Less": np.less,
               "Greater": np.greater, "LessEqual": np.less_equal,
               "GreaterEqual": np.greater_equal, "Equal": np.equal,
               "NotEqual": np.not_equal}.items():
    _op(_t, {"opset1"}, **_BROADCAST)(_binary(_u))


def _logical(ufunc):
    def fn(*xs):
        for x in xs:
            if x.dtype != np.bool_:
                raise IRError(f"logical op needs boolean inputs, got {x.dtype}")
        return _arr(ufunc(*xs))
    return fn


for _t, _u in {"LogicalAnd": np.logical_and, "LogicalOr": np.logical_or,
               "LogicalXor": np.logical_xor}.items():
    _op(_t, {"opset1"}, **_BROADCAST)(_inputs(2)(lambda layer, a, g, _u=_u: _logical(_u)))
_op("LogicalNot", {"opset1"})(_inputs(1)(lambda layer, a, g: _logical(np.logical_not)))


def _float_only(f):
    def fn(x):
        if x.dtype.kind != "f":
            raise IRError(f"needs a floating-point input, got {x.dtype}")
        return _arr(f(x))
    return fn


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _relu(x):
    return np.maximum(x, x.dtype.type(0))


_op("Sigmoid", {"opset1"})(_inputs(1)(lambda l, a, g: _float_only(_sigmoid)))
_op("Tanh", {"opset1"})(_inputs(1)(lambda l, a, g: _float_only(np.tanh)))
_op("Exp", {"opset1"})(_inputs(1)(lambda l, a, g: _float_only(np.exp)))
_op("ReLU", {"opset1"})(_inputs(1)(lambda l, a, g: lambda x: _arr(_relu(x))))
_op("Abs", {"opset1"})(_inputs(1)(lambda l, a, g: lambda x: _arr(np.abs(x))))
_op("Negative", {"opset1"})(_inputs(1)(lambda l, a, g: lambda x: _arr(np.negative(x))))
_op("Identity", {"opset16"})(_inputs(1)(lambda l, a, g: lambda x: x))


@_op("Select", {"opset1"}, auto_broadcast=(_choice("numpy", "none"), "numpy"))
@_inputs(3)
def _select(layer, a, graph):
    def fn(c, x, y):
        if c.dtype != np.bool_:
            raise IRError(f"Select condition must be boolean, got {c.dtype}")
        if x.dtype != y.dtype:
            raise IRError(f"Select branches differ in type: {x.dtype} and {y.dtype}")
        if a["auto_broadcast"] == "none" and not (c.shape == x.shape == y.shape):
            raise IRError("auto_broadcast=none needs equal shapes")
        return _arr(np.where(c, x, y))
    return fn


@_op("Convert", {"opset1"}, destination_type=(lambda t: _element_type(t, "destination_type"),
                                              _REQUIRED))
@_inputs(1)
def _convert(layer, a, graph):
    dst = ELEMENT_TYPES[a["destination_type"]]

    def fn(x):
        if dst == np.bool_:
            return x != 0
        if x.dtype.kind == "f" and dst.kind in "iu" and x.size:
            info = np.iinfo(dst)
            if not (np.all(np.isfinite(x)) and np.all(np.trunc(x) == x)
                    and x.min() >= info.min and x.max() <= info.max):
                raise IRError(f"Convert {x.dtype} -> {dst}: non-integral or out-of-range values "
                              f"(OpenVINO's rounding is implementation-defined)")
        return x.astype(dst)
    return fn


@_op("MatMul", {"opset1"}, transpose_a=(_bool, False), transpose_b=(_bool, False))
@_inputs(2)
def _matmul(layer, a, graph):
    ta, tb = a["transpose_a"], a["transpose_b"]

    def fn(x, y):
        if x.dtype != y.dtype:
            raise IRError(f"MatMul inputs differ in type: {x.dtype} and {y.dtype}")
        if ta and x.ndim >= 2:
            x = np.swapaxes(x, -1, -2)
        if tb and y.ndim >= 2:
            y = np.swapaxes(y, -1, -2)
        return _arr(np.matmul(x, y))
    return fn


# --- shape manipulation
@_op("Reshape", {"opset1"}, special_zero=(_bool, _REQUIRED))
@_inputs(2)
def _reshape(layer, a, graph):
    special_zero = a["special_zero"]

    def fn(x, shape):
        dims = _ints(shape, "Reshape target shape")
        out = []
        for i, d in enumerate(dims):
            if d == 0 and special_zero:
                if i >= x.ndim:
                    raise IRError(f"special_zero dim {i} beyond input rank {x.ndim}")
                d = x.shape[i]
            elif d < -1:
                raise IRError(f"invalid target dim {d}")
            out.append(d)
        if out.count(-1) > 1:
            raise IRError(f"more than one -1 in target shape {dims}")
        known = math.prod(d for d in out if d != -1)
        if -1 in out:
            if known == 0 or x.size % known:
                raise IRError(f"cannot reshape {list(x.shape)} to {dims}")
            out[out.index(-1)] = x.size // known
        if math.prod(out) != x.size:
            raise IRError(f"cannot reshape {list(x.shape)} ({x.size} elements) to {out}")
        return x.reshape(out)
    return fn


@_op("Squeeze", {"opset1", "opset15"},
     _spec=lambda l: {"allow_axis_skip": (_bool, False)} if l.version == "opset15" else {})
@_inputs((1, 2))
def _squeeze(layer, a, graph):
    skip = layer.version == "opset15"    # Squeeze-15 keeps axes whose dim is not 1

    def fn(x, axes=None):
        vals = [] if axes is None else _ints(axes, "Squeeze axes")
        if not vals:
            return x.reshape([d for d in x.shape if d != 1])
        ax = sorted({_axis(v, x.ndim) for v in vals})
        bad = [i for i in ax if x.shape[i] != 1]
        if bad and not skip:
            raise IRError(f"cannot squeeze axis {bad[0]} of shape {list(x.shape)}")
        return x.reshape([d for i, d in enumerate(x.shape) if i not in ax or i in bad])
    return fn


@_op("Unsqueeze", {"opset1"})
@_inputs(2)
def _unsqueeze(layer, a, graph):
    def fn(x, axes):
        vals = _ints(axes, "Unsqueeze axes")
        rank = x.ndim + len(vals)
        ax = [_axis(v, rank) for v in vals]
        if len(set(ax)) != len(ax):
            raise IRError(f"repeated Unsqueeze axes {vals}")
        return np.expand_dims(x, tuple(ax))
    return fn


@_op("Concat", {"opset1"}, axis=(int, _REQUIRED))
@_inputs(None)
def _concat(layer, a, graph):
    if not layer.inputs:
        raise IRError("Concat needs at least one input")

    def fn(*xs):
        if len({x.dtype for x in xs}) > 1:
            raise IRError(f"Concat inputs differ in type: {[str(x.dtype) for x in xs]}")
        return np.concatenate(xs, axis=_axis(a["axis"], xs[0].ndim))
    return fn


@_op("ShapeOf", {"opset1", "opset3"},
     _spec=lambda l: {"output_type": (_choice("i32", "i64"), "i64")} if l.version == "opset3"
     else {})
@_inputs(1)
def _shape_of(layer, a, graph):
    dt = ELEMENT_TYPES[a.get("output_type", "i64")]
    return lambda x: np.array(x.shape, dt)


@_op("Range", {"opset1", "opset4"},
     _spec=lambda l: {"output_type": (lambda t: _element_type(t, "output_type"), _REQUIRED)}
     if l.version == "opset4" else {})
@_inputs(3)
def _range(layer, a, graph):
    out_t = ELEMENT_TYPES[a["output_type"]] if "output_type" in a else None

    def fn(start, stop, step):
        vals = []
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if v.size != 1 or v.ndim > 1:
                raise IRError(f"Range {name} must be a scalar, got shape {list(v.shape)}")
            vals.append(v.reshape(()))
        dt = out_t if out_t is not None else vals[0].dtype
        if out_t is None and len({v.dtype for v in vals}) > 1:
            raise IRError("Range-1 inputs must share one type")
        if vals[2] == 0:
            raise IRError("Range step is 0")
        if dt.kind in "iu" and all(v.dtype.kind in "iu" for v in vals):
            return np.arange(int(vals[0]), int(vals[1]), int(vals[2]), dtype=dt)
        if dt.kind in "iu":
            raise IRUnsupportedError("Range with floating-point inputs and an integer output")
        return np.arange(*(v.astype(dt) for v in vals), dtype=dt)
    return fn


@_op("Gather", {"opset1", "opset7", "opset8"},
     _spec=lambda l: {} if l.version == "opset1" else {"batch_dims": (int, 0)})
@_inputs(3)
def _gather(layer, a, graph):
    bd0, negative_ok = a.get("batch_dims", 0), layer.version == "opset8"

    def fn(data, indices, axis):
        ax = _ints(axis, "Gather axis")
        if len(ax) != 1:
            raise IRError("Gather axis must have one element")
        if indices.dtype.kind not in "iu":
            raise IRError(f"Gather indices must be integers, got {indices.dtype}")
        ax = _axis(ax[0], data.ndim, "Gather axis")
        bd = bd0 + indices.ndim if bd0 < 0 else bd0
        if not 0 <= bd <= min(ax, indices.ndim) or data.shape[:bd] != indices.shape[:bd]:
            raise IRError(f"invalid batch_dims {bd0} for data {list(data.shape)}, indices "
                          f"{list(indices.shape)}, axis {ax}")
        dim = data.shape[ax]
        lo = -dim if negative_ok else 0
        if indices.size and (indices.min() < lo or indices.max() >= dim):
            raise IRError(f"Gather index out of range [{lo}, {dim})")
        idx = np.where(indices < 0, indices + dim, indices) if negative_ok else indices
        if bd == 0:
            return np.take(data, idx, axis=ax)
        nb = math.prod(data.shape[:bd])
        d = data.reshape((nb,) + data.shape[bd:])
        i = idx.reshape((nb,) + idx.shape[bd:])
        parts = [np.take(d[k], i[k], axis=ax - bd) for k in range(nb)]
        tail = data.shape[bd:ax] + idx.shape[bd:] + data.shape[ax + 1:]
        out = np.stack(parts) if parts else np.empty((0,) + tail, data.dtype)
        return out.reshape(data.shape[:bd] + tail)
    return fn


def _reduce(func):
    def builder(layer, a, graph):
        keep = a["keep_dims"]

        def fn(x, axes):
            ax = tuple(sorted({_axis(v, x.ndim) for v in _ints(axes, "reduction axes")}))
            if not ax:
                return x
            if func in (np.max, np.min) and any(x.shape[i] == 0 for i in ax):
                raise IRError("reduction over an empty axis")
            kw = {"dtype": x.dtype} if func in (np.sum, np.prod) else {}
            return _arr(func(x, axis=ax, keepdims=keep, **kw))
        return fn
    return _inputs(2)(builder)


for _t, _f in {"ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min,
               "ReduceProd": np.prod}.items():
    _op(_t, {"opset1"}, keep_dims=(_bool, False))(_reduce(_f))


# --- RNN cells
_ACTIVATIONS = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": _relu}


def _cell_spec(default_acts, extra=None):
    spec = {"hidden_size": (int, _REQUIRED), "activations": (_strlist, default_acts),
            "activations_alpha": (_strlist, []), "activations_beta": (_strlist, []),
            "clip": (float, 0.0)}
    spec.update(extra or {})
    return spec


def _cell_setup(layer, a, n_acts):
    acts = a["activations"]
    if len(acts) != n_acts or any(x not in _ACTIVATIONS for x in acts):
        raise IRUnsupportedError(f"activations {acts} not supported (need {n_acts} of "
                                 f"{sorted(_ACTIVATIONS)})")
    if a["activations_alpha"] or a["activations_beta"]:
        raise IRUnsupportedError("activations_alpha/activations_beta are not supported")
    if a["clip"] < 0 or a["hidden_size"] <= 0:
        raise IRError(f"invalid clip {a['clip']} or hidden_size {a['hidden_size']}")
    return [_ACTIVATIONS[x] for x in acts], a["clip"], a["hidden_size"]


def _check_cell(hs, gates, x, h, w, r, b, nb=None):
    nb = gates if nb is None else nb
    if x.ndim != 2 or h.shape != (x.shape[0], hs) or w.shape != (gates * hs, x.shape[1]) \
            or r.shape != (gates * hs, hs) or b.shape != (nb * hs,):
        raise IRError(f"inconsistent cell shapes: X{list(x.shape)} H{list(h.shape)} "
                      f"W{list(w.shape)} R{list(r.shape)} B{list(b.shape)} (hidden_size {hs})")
    if len({v.dtype for v in (x, h, w, r, b)}) != 1 or x.dtype.kind != "f":
        raise IRError("cell inputs must share one floating-point type")


def _gates(x, h, w, r, b, clip):
    g = x @ w.T + h @ r.T + b
    return np.clip(g, -clip, clip) if clip > 0 else g


@_op("LSTMCell", {"opset4"}, **_cell_spec(["sigmoid", "tanh", "tanh"]))
@_inputs(6, n_outputs=2)
def _lstm_cell(layer, a, graph):
    (f, g, hact), clip, hs = _cell_setup(layer, a, 3)

    def fn(x, h, c, w, r, b):
        _check_cell(hs, 4, x, h, w, r, b)
        if c.shape != h.shape or c.dtype != h.dtype:
            raise IRError(f"cell state {c.dtype}{list(c.shape)} does not match H")
        z = _gates(x, h, w, r, b, clip)
        ft, it, ct, ot = (z[:, k * hs:(k + 1) * hs] for k in range(4))
        c_new = f(ft) * c + f(it) * g(ct)
        return _arr(f(ot) * hact(c_new)), _arr(c_new)
    return fn


@_op("GRUCell", {"opset3"}, **_cell_spec(["sigmoid", "tanh"],
                                         {"linear_before_reset": (_bool, False)}))
@_inputs(5)
def _gru_cell(layer, a, graph):
    (f, g), clip, hs = _cell_setup(layer, a, 2)
    lbr = a["linear_before_reset"]

    def fn(x, h, w, r, b):
        _check_cell(hs, 3, x, h, w, r, b, 4 if lbr else 3)
        cl = (lambda v: np.clip(v, -clip, clip)) if clip > 0 else (lambda v: v)
        xw, hr = x @ w.T, h @ r.T
        zt = f(cl(xw[:, :hs] + hr[:, :hs] + b[:hs]))
        rt = f(cl(xw[:, hs:2 * hs] + hr[:, hs:2 * hs] + b[hs:2 * hs]))
        if lbr:
            ht = g(cl(xw[:, 2 * hs:] + rt * (hr[:, 2 * hs:] + b[3 * hs:]) + b[2 * hs:3 * hs]))
        else:
            ht = g(cl(xw[:, 2 * hs:] + (rt * h) @ r[2 * hs:].T + b[2 * hs:]))
        return _arr((1 - zt) * ht + zt * h)
    return fn


@_op("RNNCell", {"opset1"}, **_cell_spec(["tanh"]))
@_inputs(5)
def _rnn_cell(layer, a, graph):
    (f,), clip, hs = _cell_setup(layer, a, 1)

    def fn(x, h, w, r, b):
        _check_cell(hs, 1, x, h, w, r, b)
        return _arr(f(_gates(x, h, w, r, b, clip)))
    return fn


# --- TensorIterator / Loop
def _check_range(e, what):
    if e.stride > 0 and (e.start, e.end) != (0, -1) or e.stride < 0 and (e.start, e.end) != (-1, 0):
        raise IRUnsupportedError(
            f"{what}: start={e.start}, end={e.end}, stride={e.stride}: only whole-axis ranges "
            f"(0,-1) forward or (-1,0) backward are supported (OpenVINO's CPU plugin ignores "
            f"start/end)")


def _check_output_range(e, dims, what):
    """OpenVINO's CPU plugin maps start/end of an output half-open on the output's own
    dim (``v < 0 -> dim + 1 + v``) and needs that range to be the whole axis."""
    if e.axis >= len(dims):
        raise IRError(f"{what}: axis {e.axis} out of range for the output rank {len(dims)}")
    dim = dims[e.axis]
    if dim is None:
        return _check_range(e, what)
    lo, hi = (dim + 1 + v if v < 0 else v for v in (e.start, e.end))
    if e.stride < 0:
        lo, hi = hi, lo
    if (lo, hi) != (0, dim):
        raise IRUnsupportedError(f"{what}: start={e.start}, end={e.end}, stride={e.stride} "
                                 f"cover [{lo}, {hi}) of an output axis of length {dim}; "
                                 f"OpenVINO needs the whole axis")


def _subgraph_ports(layer, is_loop):
    body = layer.body
    pidx = {p.id: i for i, p in enumerate(body.parameters)}
    ridx = {r.id: i for i, r in enumerate(body.results)}
    ext_in = {p.id: k for k, p in enumerate(layer.inputs)}
    ext_out = {p.id: k for k, p in enumerate(layer.outputs)}
    inputs, outputs, current, condition = [], [], None, None
    back = {}
    for frm, to in layer.back_edges:
        if frm not in ridx or to not in pidx:
            raise IRError(f"back edge {frm} -> {to} must go from a body Result to a body "
                          f"Parameter")
        back[to] = frm
    for e in layer.port_map:
        what = f"port_map {e.kind} external_port_id={e.external_port_id} " \
               f"internal_layer_id={e.internal_layer_id}"
        if e.purpose is not None and not is_loop:
            raise IRError(f"{what}: purpose is only valid in a Loop")
        if e.kind == "input":
            if e.internal_layer_id not in pidx:
                raise IRError(f"{what}: internal layer is not a body Parameter")
            i = pidx[e.internal_layer_id]
            if e.purpose == "current_iteration":
                p = body.parameters[i]
                if None in p.outputs[0].dims:
                    raise IRError(f"{what}: current_iteration Parameter must have a static shape")
                current = CurrentIteration(i, p.outputs[0].dtype, p.outputs[0].dims)
                continue
            if e.purpose is not None:
                raise IRUnsupportedError(f"{what}: unknown purpose {e.purpose!r}")
            if e.external_port_id not in ext_in:
                raise IRError(f"{what}: the layer has no input port {e.external_port_id}")
            k = ext_in[e.external_port_id]
            if e.axis is not None:
                _check_range(e, what)
                inputs.append(SlicedInput(k, i, e.axis, e.start, e.end, e.stride, e.part_size))
            elif e.internal_layer_id in back:
                inputs.append(MergedInput(k, i))
            else:
                inputs.append(InvariantInput(k, i))
        else:
            if e.internal_layer_id not in ridx:
                raise IRError(f"{what}: internal layer is not a body Result")
            j = ridx[e.internal_layer_id]
            if e.purpose == "execution_condition":
                condition = j
                continue
            if e.purpose is not None:
                raise IRUnsupportedError(f"{what}: unknown purpose {e.purpose!r}")
            if e.external_port_id not in ext_out:
                raise IRError(f"{what}: the layer has no output port {e.external_port_id}")
            k = ext_out[e.external_port_id]
            if e.axis is not None:
                _check_output_range(e, layer.outputs[k].dims, what)
                outputs.append(ConcatOutput(j, k, e.axis, e.start, e.end, e.stride, e.part_size))
            else:
                outputs.append(LastIterationOutput(j, k))
    fed = {p.internal for p in inputs} | ({current.internal} if current else set())
    for to, frm in back.items():
        if pidx[to] not in fed:
            raise IRError(f"back edge {frm} -> {to}: the target Parameter has no port_map input")
    edges = [BackEdge(ridx[frm], pidx[to]) for to, frm in back.items()]
    return inputs, outputs, edges, current, condition


def _check_static_shapes(layer, results):
    for port, v in zip(layer.outputs, results):
        if len(port.dims) != v.ndim or any(d is not None and d != s
                                           for d, s in zip(port.dims, v.shape)):
            raise IRError(f"output port {port.id} has shape {list(v.shape)}, but the IR "
                          f"declares {['?' if d is None else d for d in port.dims]} "
                          f"(OpenVINO would return uninitialised data)")
    return results


def _outputs_of(layer, fn):
    """Steps return one array for one output port, else a tuple."""
    return (lambda *xs: fn(*xs)[0]) if len(layer.outputs) == 1 else fn


@_op("TensorIterator", {"opset1"})
@_inputs(None, n_outputs=None)
def _tensor_iterator(layer, a, graph):
    if layer.body.find("TensorIterator"):
        raise IRUnsupportedError("a TensorIterator inside a TensorIterator body is not "
                                 "supported (OpenVINO: 'No nested TensorIterator')")
    inputs, outputs, edges, _, _ = _subgraph_ports(layer, False)
    n = None
    if not any(isinstance(p, SlicedInput) for p in inputs):
        concat = [p for p in outputs if isinstance(p, ConcatOutput)]
        if not concat:
            raise IRError("no sliced input and no concatenated output: iteration count unknown")
        dims = layer.outputs[concat[0].external].dims
        d = dims[concat[0].axis] if concat[0].axis < len(dims) else None
        if d is None:
            raise IRError("no sliced input and a dynamic concatenated output: iteration "
                          "count unknown")
        n = d // concat[0].part_size
    ti = TensorIterator(IRBody(layer.body), inputs, outputs, edges, num_iterations=n,
                        name="TensorIterator")
    return _outputs_of(layer, lambda *xs: _check_static_shapes(layer, ti(*xs)))


@_op("Loop", {"opset5"})
@_inputs(None, n_outputs=None)
def _loop(layer, a, graph):
    if len(layer.inputs) < 2:
        raise IRError("a Loop needs trip_count and execution_condition inputs")
    inputs, outputs, edges, current, condition = _subgraph_ports(layer, True)
    if condition is None:
        raise IRError("the body has no execution_condition output (port_map <output> with "
                      "purpose=\"execution_condition\")")
    loop = Loop(IRBody(layer.body), inputs, outputs, edges, current_iteration=current,
                execution_condition=condition, name="Loop")
    src, _ = graph.producer(layer.id, layer.inputs[1].id)
    if src.type == "Const" and src.data.size == 1 and not bool(src.data.reshape(-1)[0]):
        # OpenVINO's shape inference makes every output of such a Loop empty on dim 0
        # and the CPU plugin cannot compile one with a concatenated output.
        if any(isinstance(p, ConcatOutput) for p in outputs):
            raise IRUnsupportedError("a Loop with a Const false execution condition and a "
                                     "concatenated output (OpenVINO cannot compile it)")
        if any(None in p.dims for p in layer.outputs):
            raise IRUnsupportedError("a Loop with a Const false execution condition and "
                                     "dynamic output shapes")
        return _outputs_of(layer, lambda *xs: tuple(np.empty(p.dims, p.dtype)
                                                    for p in layer.outputs))
    return _outputs_of(layer, lambda *xs: _check_static_shapes(layer, loop(*xs)))


SUPPORTED_OPS = {t: tuple(sorted(v[0])) for t, v in sorted(_OPS.items())}
SUPPORTED_OPS.update({t: ("opset1",) for t in ("Parameter", "Const", "Result")})
"""Op type -> supported opset versions."""


# ---------------------------------------------------------------------------- model
@dataclass(frozen=True)
class TensorInfo:
    """Name, aliases, dtype and dims (``None`` = dynamic) of a model input/output."""

    name: str
    names: tuple
    dtype: np.dtype
    dims: tuple
    layer: Layer = field(repr=False, compare=False)


class Model:
    """A compiled IR model, callable on numpy arrays.

    Attributes
    ----------
    graph : Graph
        The parsed structure.
    inputs, outputs : list of TensorInfo
        In Parameter / Result order.
    input_names, output_names : list of str
    """

    def __init__(self, graph: Graph, path=None):
        self.graph = graph
        self.path = path
        self.version = getattr(graph, "version", None)
        self._program = graph.program()  # first: it checks the structure the rest relies on
        self.inputs, self.outputs = [], []
        for p in graph.parameters:
            port = p.outputs[0]
            names = port.names + ((p.name,) if p.name not in port.names else ())
            self.inputs.append(TensorInfo(names[0], names, port.dtype, port.dims, p))
        for r in graph.results:
            src, sport = graph.producer(r.id, r.inputs[0].id)
            names = sport.names or r.output_names or (r.name,)
            dtype = r.inputs[0].dtype or sport.dtype
            self.outputs.append(TensorInfo(names[0], names, dtype, r.inputs[0].dims, r))
        self.input_names = [t.name for t in self.inputs]
        self.output_names = [t.name for t in self.outputs]
        if len(set(self.output_names)) != len(self.output_names):
            raise IRError(f"duplicate output names {self.output_names}")
        self._alias = {}
        for k, t in enumerate(self.inputs):
            for n in t.names:
                self._alias.setdefault(n, k)

    def _arrays(self, inputs):
        if isinstance(inputs, dict):
            vals = [None] * len(self.inputs)
            for key, x in inputs.items():
                if key not in self._alias:
                    raise IRError(f"unknown model input {key!r} (inputs: {self.input_names})")
                k = self._alias[key]
                if vals[k] is not None:
                    raise IRError(f"model input {self.input_names[k]!r} given twice")
                vals[k] = x
            missing = [self.input_names[k] for k, v in enumerate(vals) if v is None]
            if missing:
                raise IRError(f"missing model input(s) {missing}")
        else:
            vals = list(inputs)
            if len(vals) != len(self.inputs):
                raise IRError(f"expected {len(self.inputs)} inputs {self.input_names}, "
                              f"got {len(vals)}")
        out = []
        for t, x in zip(self.inputs, vals):
            x = np.asarray(x)
            if x.dtype != t.dtype:
                raise IRError(f"model input {t.name!r} must be {t.dtype}, got {x.dtype}")
            if x.ndim != len(t.dims) or any(d is not None and d != s
                                            for d, s in zip(t.dims, x.shape)):
                raise IRError(f"model input {t.name!r} must have shape "
                              f"{['?' if d is None else d for d in t.dims]}, got {list(x.shape)}")
            out.append(x)
        return out

    def __call__(self, inputs=None, /, **named):
        """Run the model.

        Parameters
        ----------
        inputs : dict or sequence, optional
            ``{name: array}`` (tensor name or Parameter name) or arrays in
            Parameter order.  Keyword arguments are merged into the dict.

        Returns
        -------
        dict of str to numpy.ndarray
            Outputs keyed by tensor name, in Result order, with the IR's dtypes.

        Raises
        ------
        IRError
            Wrong input names, dtypes (no implicit casts) or shapes, or a
            run-time failure of a layer (the message names the layer).
        mli.graph.GraphError
            A TensorIterator/Loop run-time error (message names the layer).
        """
        if inputs is None or named:
            inputs = {**(inputs or {}), **named}
        arrays = self._arrays(inputs)
        results = self._program.run(arrays)
        out = {}
        for t, v in zip(self.outputs, results):
            if any(np.may_share_memory(v, x) for x in arrays):
                v = v.copy()
            out[t.name] = v
        return out

    def __repr__(self):
        return (f"<Model {getattr(self.graph, 'name', '')!r} IR v{self.version}: "
                f"inputs {self.input_names}, outputs {self.output_names}>")


def read_model(xml_path, bin_path=None) -> Model:
    """Read and compile an OpenVINO IR v10/v11 model.

    Parameters
    ----------
    xml_path : str or os.PathLike
        The ``.xml`` file.
    bin_path : str or os.PathLike, optional
        The weights file (default: ``xml_path`` with suffix ``.bin``).

    Returns
    -------
    Model
        ``model({"X": x, ...}) -> {"Y": y, ...}``; ``model.graph`` is the
        parsed :class:`Graph`.

    Raises
    ------
    IRError
        Malformed or inconsistent IR (see :func:`read_graph`).
    IRUnsupportedError
        An op, op version, attribute, element type or port-map form that is
        not supported; the message names the layer id, name and type.
    """
    return Model(read_graph(xml_path, bin_path), Path(xml_path))
