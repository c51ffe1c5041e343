"""The XML/bin reader: :func:`read_graph`."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from xml.parsers import expat
from pathlib import Path

import numpy as np

from .errors import (_FORBIDDEN, _PRECISIONS, ELEMENT_TYPES, MAX_BODY_DEPTH, IRError,
                     IRUnsupportedError, _about, _ctx, _expect_ports, _located)
from .graph import Edge, Graph, Layer, Port, PortMapEntry

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
    graph = Graph(layers, edges, where)
    for layer in layers:
        if layer.body is not None:
            layer.body.parent = graph
    return graph


class _Declaration(Exception):
    pass


def _refuse_declarations(raw, xml_path):
    """Refuse a DOCTYPE or ENTITY declaration in any encoding: expat decodes the document
    (UTF-16, UTF-32 with a declaration, ...) and reports each declaration before any
    entity is expanded; the byte search above only sees ASCII-compatible encodings."""
    def refuse(*_):
        raise _Declaration()

    p = expat.ParserCreate()
    p.StartDoctypeDeclHandler = refuse
    p.EntityDeclHandler = refuse
    p.UnparsedEntityDeclHandler = refuse
    p.ExternalEntityRefHandler = refuse
    try:
        p.Parse(raw, True)
    except _Declaration:
        raise IRError(f"{xml_path}: DOCTYPE/ENTITY declarations are not allowed in IR "
                      f"files") from None
    except expat.ExpatError as e:
        raise IRError(f"{xml_path}: malformed XML: {e}") from None


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
    _refuse_declarations(raw, xml_path)
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


