"""Unit tests of the OpenVINO IR reader on tiny hand-written IR snippets."""

from pathlib import Path

import numpy as np
import pytest

from mli.graph import GraphError, IRBody
from mli.ir import IRError, IRUnsupportedError, read_graph, read_model

DATA = Path(__file__).parent / "data" / "ir"
PREC = {"f32": "FP32", "i32": "I32", "i64": "I64", "boolean": "BOOL", "bf16": "BF16"}
ET_OF = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
         np.dtype(np.bool_): "boolean"}


# --------------------------------------------------------------------------- IR writer
def port(pid, et, dims, names=None):
    n = f' names="{names}"' if names else ""
    return (f'<port id="{pid}" precision="{PREC[et]}"{n}>'
            + "".join(f"<dim>{-1 if d is None else d}</dim>" for d in dims) + "</port>")


def layer(lid, name, typ, ver="opset1", data=None, ins=(), outs=(), inner="", extra=""):
    d = "" if data is None else "<data " + " ".join(f'{k}="{v}"' for k, v in data.items()) + "/>"
    i = f"<input>{''.join(ins)}</input>" if ins else ""
    o = f"<output>{''.join(outs)}</output>" if outs else ""
    return (f'<layer id="{lid}" name="{name}" type="{typ}" version="{ver}"{extra}>'
            f'{inner}{d}{i}{o}</layer>')


def graph(layers, edges):
    e = "".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
                for a, b, c, d in edges)
    return f"<layers>{''.join(layers)}</layers><edges>{e}</edges>"


def net(layers, edges, version=11):
    return f'<?xml version="1.0"?>\n<net name="t" version="{version}">{graph(layers, edges)}</net>'


def shape_attr(dims):
    return ",".join("?" if d is None else str(d) for d in dims)


def param(lid, name, et, dims):
    return layer(lid, name, "Parameter", data={"shape": shape_attr(dims), "element_type": et},
                 outs=[port(0, et, dims, name)])


def result(lid, et, dims, name=None):
    extra = f' output_names="{name}"' if name else ""
    return layer(lid, f"Result_{lid}", "Result", ins=[port(0, et, dims)], extra=extra)


class Weights:
    """Collects Const data for one .bin file (unaligned offsets on purpose)."""

    def __init__(self):
        self.blob = bytearray(b"\x07")

    def const(self, lid, arr, name=None):
        arr = np.asarray(arr)
        et = ET_OF[arr.dtype]
        off = len(self.blob)
        raw = arr.astype(np.uint8).tobytes() if et == "boolean" else arr.astype(
            arr.dtype.newbyteorder("<")).tobytes()
        self.blob += raw
        return layer(lid, name or f"Const_{lid}", "Const",
                     data={"element_type": et, "shape": ", ".join(map(str, arr.shape)),
                           "offset": off, "size": len(raw)},
                     outs=[port(0, et, arr.shape)])


def write(tmp_path, text, weights=None, name="m"):
    xml = tmp_path / f"{name}.xml"
    xml.write_text(text)
    if weights is not None:
        (tmp_path / f"{name}.bin").write_bytes(bytes(weights.blob))
    return xml


def op_model(tmp_path, typ, inputs, out, ver="opset1", data=None, n_out=1):
    """One op fed by Parameters (``("name", et, dims)``) and Consts (arrays)."""
    w, layers, edges, ins = Weights(), [], [], []
    for k, x in enumerate(inputs):
        if isinstance(x, tuple):
            layers.append(param(k, x[0], x[1], x[2]))
            ins.append(port(k, x[1], x[2]))
        else:
            layers.append(w.const(k, x))
            ins.append(port(k, ET_OF[np.asarray(x).dtype], np.shape(x)))
        edges.append((k, 0, len(inputs), k))
    n = len(inputs)
    outs = out if isinstance(out, list) else [out]
    layers.append(layer(n, "op", typ, ver, data, ins,
                        [port(n + j, et, dims, f"y{j}") for j, (et, dims) in enumerate(outs)]))
    for j, (et, dims) in enumerate(outs):
        layers.append(result(n + 1 + j, et, dims))
        edges.append((n, n + j, n + 1 + j, 0))
    return read_model(write(tmp_path, net(layers, edges), w))


def add_net(version=11, c=(1.5, -2.0, 0.25)):
    w = Weights()
    layers = [param(0, "X", "f32", [2, 3]), w.const(1, np.array(c, np.float32)),
              layer(2, "add", "Add", data={"auto_broadcast": "numpy"},
                    ins=[port(0, "f32", [2, 3]), port(1, "f32", [3])],
                    outs=[port(2, "f32", [2, 3], "Y")]),
              result(3, "f32", [2, 3], "Y" if version == 11 else None)]
    return net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)], version), w


# --------------------------------------------------------------------------- basics
@pytest.mark.parametrize("version", [10, 11])
def test_read_and_run_add(tmp_path, version):
    text, w = add_net(version)
    model = read_model(write(tmp_path, text, w))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = model({"X": x})
    assert list(out) == ["Y"] and model.input_names == ["X"] and model.version == version
    np.testing.assert_array_equal(out["Y"], x + np.array([1.5, -2.0, 0.25], np.float32))
    assert out["Y"].dtype == np.float32
    np.testing.assert_array_equal(model([x])["Y"], out["Y"])
    np.testing.assert_array_equal(model(X=x)["Y"], out["Y"])


def test_structure_is_exposed(tmp_path):
    text, w = add_net()
    g = read_graph(write(tmp_path, text, w))
    assert [l.type for l in g.layers] == ["Parameter", "Const", "Add", "Result"]
    assert [l.type for l in g.order][-1] == "Result" and g.version == 11
    add = g.find("Add")[0]
    assert add.attrs == {"auto_broadcast": "numpy"} and add.version == "opset1"
    assert add.inputs[1].dims == (3,) and add.outputs[0].names == ("Y",)
    assert add.outputs[0].dtype == np.float32 and add.outputs[0].element_type == "f32"
    const = g.input_layer(add, 1)
    np.testing.assert_array_equal(const.data, np.array([1.5, -2.0, 0.25], np.float32))
    assert not const.data.flags.writeable
    assert g.producer(2, 1)[0] is const and g.consumers(0, 0)[0][0] is add
    assert len(g.edges) == 3 and g.edges[0].to_port == 0
    assert str(add) == "layer 2 'add' (Add)"


def test_handwritten_v10_fixture():
    model = read_model(DATA / "add_v10.xml")
    a, b = np.array([1, 2], np.int32), np.array([10, -20], np.int32)
    out = model({"a": a, "b": b})
    assert model.version == 10 and list(out) == ["sum"]
    np.testing.assert_array_equal(out["sum"], [11, -18])
    assert out["sum"].dtype == np.int32


def test_dynamic_dims_and_input_checks(tmp_path):
    layers = [param(0, "X", "f32", [None, 3]),
              layer(1, "relu", "ReLU", ins=[port(0, "f32", [None, 3])],
                    outs=[port(1, "f32", [None, 3], "Y")]),
              result(2, "f32", [None, 3])]
    model = read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)])))
    assert model.inputs[0].dims == (None, 3)
    x = np.array([[-1, 2, -3]] * 4, np.float32)
    np.testing.assert_array_equal(model({"X": x})["Y"], np.maximum(x, 0))
    with pytest.raises(IRError, match="model input 'X' must be float32, got float64"):
        model({"X": x.astype(np.float64)})
    with pytest.raises(IRError, match=r"model input 'X' must have shape \['\?', 3\], got \[4, 2\]"):
        model({"X": x[:, :2]})
    with pytest.raises(IRError, match="missing model input"):
        model({})
    with pytest.raises(IRError, match="unknown model input 'Z'"):
        model({"X": x, "Z": x})
    with pytest.raises(IRError, match="expected 1 inputs"):
        model([x, x])


def test_inputs_are_not_modified_and_outputs_do_not_alias(tmp_path):
    layers = [param(0, "X", "f32", [3]),
              layer(1, "id", "Identity", "opset16", ins=[port(0, "f32", [3])],
                    outs=[port(1, "f32", [3], "Y")]),
              result(2, "f32", [3])]
    model = read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)])))
    x = np.arange(3, dtype=np.float32)
    y = model({"X": x})["Y"]
    assert not np.shares_memory(x, y)
    np.testing.assert_array_equal(y, x)


# --------------------------------------------------------------------------- malformed IR
def test_doctype_and_entities_are_refused(tmp_path):
    text, _ = add_net()
    bomb = ('<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>\n'
            + text.split("\n", 1)[1])
    with pytest.raises(IRError, match="DOCTYPE/ENTITY declarations are not allowed"):
        read_graph(write(tmp_path, bomb))
    with pytest.raises(IRError, match="DOCTYPE/ENTITY"):
        read_graph(write(tmp_path, text.replace("<net", '<!ENTITY x "y"><net'), name="e"))


@pytest.mark.parametrize("text, exc, msg", [
    ("<net version='11'><layers>", IRError, "malformed XML"),
    ("<model version='11'/>", IRError, "root element is <model>"),
    ("<net version='7'><layers/></net>", IRUnsupportedError, "IR version '7' is not supported"),
    ("<net version='11'/>", IRError, "missing <layers>"),
])
def test_bad_documents(tmp_path, text, exc, msg):
    with pytest.raises(exc, match=msg):
        read_graph(write(tmp_path, text))


def relu_chain(edges, extra_layers=()):
    layers = [param(0, "X", "f32", [2]),
              layer(1, "r1", "ReLU", ins=[port(0, "f32", [2])], outs=[port(1, "f32", [2])]),
              layer(2, "r2", "ReLU", ins=[port(0, "f32", [2])], outs=[port(1, "f32", [2])]),
              result(3, "f32", [2]), *extra_layers]
    return net(layers, edges)


@pytest.mark.parametrize("edges, msg", [
    ([(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 3, 0), (7, 0, 1, 0)], "dangling: no layer 7"),
    ([(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 9, 0)], "dangling: no layer 9"),
    ([(0, 0, 1, 0), (1, 1, 2, 0), (2, 5, 3, 0)], r"dangling: layer 2 'r2' \(ReLU\) has no output "
                                                 "port 5"),
    ([(0, 0, 1, 0), (1, 1, 2, 3), (2, 1, 3, 0)], "has no input port 3"),
    ([(0, 0, 1, 0), (2, 1, 3, 0)], r"layer 2 'r2' \(ReLU\): input port 0 is not connected"),
    ([(0, 0, 1, 0), (0, 0, 2, 0), (1, 1, 2, 0), (2, 1, 3, 0)], "has two producers"),
])
def test_structural_errors(tmp_path, edges, msg):
    with pytest.raises(IRError, match=msg):
        read_graph(write(tmp_path, relu_chain(edges)))


def test_cycle_is_detected(tmp_path):
    layers = [param(0, "X", "f32", [2]),
              layer(1, "a", "Add", data={"auto_broadcast": "numpy"},
                    ins=[port(0, "f32", [2]), port(1, "f32", [2])], outs=[port(2, "f32", [2])]),
              layer(2, "r", "ReLU", ins=[port(0, "f32", [2])], outs=[port(1, "f32", [2])]),
              result(3, "f32", [2])]
    text = net(layers, [(0, 0, 1, 0), (2, 1, 1, 1), (1, 2, 2, 0), (2, 1, 3, 0)])
    with pytest.raises(IRError, match=r"cycle through layer 1 'a' \(Add\), layer 2 'r'"):
        read_graph(write(tmp_path, text))


def test_duplicate_layer_id(tmp_path):
    text = net([param(0, "X", "f32", [2]), result(0, "f32", [2])], [])
    with pytest.raises(IRError, match="duplicate layer id 0"):
        read_graph(write(tmp_path, text))


def test_bin_checks(tmp_path):
    text, w = add_net()
    write(tmp_path, text, w)
    (tmp_path / "m.bin").write_bytes(bytes(w.blob[:-1]))
    with pytest.raises(IRError, match=r"layer 1 'Const_1' \(Const\): Const data \[offset 1, size "
                       r"12\] lies outside the 12-byte weights file"):
        read_graph(tmp_path / "m.xml")
    (tmp_path / "m.bin").unlink()
    with pytest.raises(IRError, match="needs the weights file .* which does not exist"):
        read_graph(tmp_path / "m.xml")
    small = text.replace('size="12"', 'size="8"')
    with pytest.raises(IRError, match="Const size 8 is too small for 3 f32 elements"):
        read_graph(write(tmp_path, small, w, name="s"))
    neg = text.replace('offset="1"', 'offset="-4"')
    with pytest.raises(IRError, match="lies outside"):
        read_graph(write(tmp_path, neg, w, name="n"))
    other = tmp_path / "elsewhere.bin"
    other.write_bytes(bytes(w.blob))
    assert read_graph(write(tmp_path, text, None, name="o"), other).find("Const")[0].data[1] == -2


@pytest.mark.parametrize("old, new, exc, msg", [
    ('type="Add"', 'type="Frobnicate"', IRUnsupportedError,
     r"layer 2 'add' \(Frobnicate\): op type 'Frobnicate' is not supported"),
    ('type="Add" version="opset1"', 'type="Add" version="opset99"', IRUnsupportedError,
     r"layer 2 'add' \(Add\): Add version 'opset99' is not supported"),
    ('auto_broadcast="numpy"', 'auto_broadcast="numpy" fancy="1"', IRUnsupportedError,
     r"layer 2 'add' \(Add\): unsupported attribute\(s\) \['fancy'\]"),
    ('auto_broadcast="numpy"', 'auto_broadcast="pdpd"', IRError,
     r"attribute auto_broadcast='pdpd' is invalid"),
    ('shape="2,3" element_type="f32"', 'shape="2,3" element_type="bf16"', IRUnsupportedError,
     r"layer 0 'X' \(Parameter\): element type 'bf16' is not supported"),
    ('shape="2,3" element_type="f32"', 'shape="2,4" element_type="f32"', IRError,
     r"port 0 dims \[2, 3\] disagree with shape \[2, 4\]"),
    ('shape="3" offset', 'shape="?" offset', IRError, "shape must be static"),
])
def test_unsupported_and_inconsistent(tmp_path, old, new, exc, msg):
    text, w = add_net()
    assert old in text
    with pytest.raises(exc, match=msg):
        read_model(write(tmp_path, text.replace(old, new, 1), w))


def test_run_time_errors_name_the_layer(tmp_path):
    model = op_model(tmp_path, "Add", [("a", "f32", [None]), ("b", "f32", [None])],
                     ("f32", [None]), data={"auto_broadcast": "none"})
    with pytest.raises(IRError, match=r"layer 2 'op' \(Add\): auto_broadcast=none needs equal "
                       "shapes"):
        model({"a": np.ones(2, np.float32), "b": np.ones(3, np.float32)})


def test_declared_output_type_is_enforced(tmp_path):
    model = op_model(tmp_path, "Add", [("a", "i32", [2]), np.array([1, 2], np.int64)],
                     ("i32", [2]))
    with pytest.raises(IRError, match="produced int64, the IR declares int32"):
        model({"a": np.ones(2, np.int32)})


# --------------------------------------------------------------------------- ops
def test_matmul_transpose(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    m = op_model(tmp_path, "MatMul", [("a", "f32", [3, 2]), b], ("f32", [2, 4]),
                 data={"transpose_a": "true", "transpose_b": "true"})
    np.testing.assert_array_equal(m({"a": a})["y0"], a.T @ b.T)


@pytest.mark.parametrize("target, special_zero, want", [
    ([0, -1], "true", (2, 12)), ([4, 0, 3], "false", None), ([-1, 6], "false", (4, 6)),
    ([2, 3, 4], "false", (2, 3, 4))])
def test_reshape(tmp_path, target, special_zero, want):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    m = op_model(tmp_path, "Reshape", [("x", "f32", [2, 3, 4]), np.array(target, np.int64)],
                 ("f32", list(want or (1,))), data={"special_zero": special_zero})
    if want is None:
        with pytest.raises(IRError, match="cannot reshape"):
            m({"x": x})
    else:
        np.testing.assert_array_equal(m({"x": x})["y0"], x.reshape(want))


def test_squeeze_unsqueeze(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3)
    m = op_model(tmp_path, "Squeeze", [("x", "f32", [1, 2, 1, 3]), np.array([-2, 0], np.int64)],
                 ("f32", [2, 3]))
    assert m({"x": x})["y0"].shape == (2, 3)
    m = op_model(tmp_path, "Squeeze", [("x", "f32", [1, 2, 1, 3]), np.array([1], np.int32)],
                 ("f32", [1, 2, 1, 3]))
    with pytest.raises(IRError, match=r"cannot squeeze axis 1 of shape \[1, 2, 1, 3\]"):
        m({"x": x})
    m = op_model(tmp_path, "Squeeze", [("x", "f32", [1, 2, 1, 3]), np.array([1, 2], np.int64)],
                 ("f32", [1, 2, 3]), ver="opset15", data={"allow_axis_skip": "false"})
    assert m({"x": x})["y0"].shape == (1, 2, 3)
    m = op_model(tmp_path, "Squeeze", [("x", "f32", [1, 2, 1, 3])], ("f32", [2, 3]))
    assert m({"x": x})["y0"].shape == (2, 3)
    m = op_model(tmp_path, "Unsqueeze", [("x", "f32", [1, 2, 1, 3]), np.array([-1, 0], np.int64)],
                 ("f32", [1, 1, 2, 1, 3, 1]))
    assert m({"x": x})["y0"].shape == (1, 1, 2, 1, 3, 1)


def test_concat_convert_compare_logic(tmp_path):
    m = op_model(tmp_path, "Concat", [("a", "i32", [2, 1]), np.array([[5], [6]], np.int32)],
                 ("i32", [2, 2]), data={"axis": "-1"})
    np.testing.assert_array_equal(m({"a": np.array([[1], [2]], np.int32)})["y0"],
                                  [[1, 5], [2, 6]])
    m = op_model(tmp_path, "Convert", [("a", "f32", [3])], ("i64", [3]),
                 data={"destination_type": "i64"})
    np.testing.assert_array_equal(m({"a": np.array([-2, 0, 7], np.float32)})["y0"], [-2, 0, 7])
    with pytest.raises(IRError, match="non-integral or out-of-range"):
        m({"a": np.array([0.5, 0, 7], np.float32)})
    m = op_model(tmp_path, "Convert", [("a", "i32", [3])], ("boolean", [3]),
                 data={"destination_type": "boolean"})
    np.testing.assert_array_equal(m({"a": np.array([-2, 0, 7], np.int32)})["y0"],
                                  [True, False, True])
    for typ, fn in (("Less", np.less), ("Greater", np.greater)):
        m = op_model(tmp_path, typ, [("a", "f32", [3]), np.float32(1)], ("boolean", [3]),
                     data={"auto_broadcast": "numpy"})
        x = np.array([0, 1, 2], np.float32)
        np.testing.assert_array_equal(m({"a": x})["y0"], fn(x, 1))
    m = op_model(tmp_path, "LogicalAnd", [("a", "boolean", [2]), np.array([True, False])],
                 ("boolean", [2]), data={"auto_broadcast": "numpy"})
    np.testing.assert_array_equal(m({"a": np.array([True, True])})["y0"], [True, False])


def test_gather_shape_of_range_reduce(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = op_model(tmp_path, "Gather", [("x", "f32", [3, 4]), np.array([-1, 0], np.int64),
                                      np.int64(1)], ("f32", [3, 2]), ver="opset8",
                 data={"batch_dims": "0"})
    np.testing.assert_array_equal(m({"x": x})["y0"], x[:, [3, 0]])
    m = op_model(tmp_path, "Gather", [("x", "f32", [3, 4]), np.array([[1], [0], [3]], np.int32),
                                      np.int64(1)], ("f32", [3, 1]), ver="opset8",
                 data={"batch_dims": "1"})
    np.testing.assert_array_equal(m({"x": x})["y0"], [[1], [4], [11]])
    m = op_model(tmp_path, "Gather", [("x", "f32", [3, 4]), np.array([4], np.int64),
                                      np.int64(1)], ("f32", [3, 1]), ver="opset8",
                 data={"batch_dims": "0"})
    with pytest.raises(IRError, match=r"Gather index out of range \[-4, 4\)"):
        m({"x": x})
    # one (0-d) index: the axis goes; negative ones only from opset8
    for ver, ax, idx, want in (("opset8", 1, -1, x[:, 3]), ("opset8", 0, -3, x[0]),
                               ("opset8", 1, 2, x[:, 2]), ("opset1", 0, 2, x[2])):
        m = op_model(tmp_path, "Gather", [("x", "f32", [3, 4]), ("i", "i64", []), np.int64(ax)],
                     ("f32", [4 if ax == 0 else 3]), ver=ver)
        got = m({"x": x, "i": np.int64(idx)})["y0"]
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        for bad in (x.shape[ax], -x.shape[ax] - 1) + ((-1,) if ver == "opset1" else ()):
            lo = -x.shape[ax] if ver == "opset8" else 0
            with pytest.raises(IRError, match=rf"Gather index out of range \[{lo}, {x.shape[ax]}\)"):
                m({"x": x, "i": np.int64(bad)})
    m = op_model(tmp_path, "ShapeOf", [("x", "f32", [3, 4])], ("i32", [2]), ver="opset3",
                 data={"output_type": "i32"})
    np.testing.assert_array_equal(m({"x": x})["y0"], [3, 4])
    m = op_model(tmp_path, "Range", [np.int32(1), ("n", "i64", []), np.int32(2)], ("i64", [None]),
                 ver="opset4", data={"output_type": "i64"})
    np.testing.assert_array_equal(m({"n": np.int64(8)})["y0"], [1, 3, 5, 7])
    for typ, fn in (("ReduceSum", np.sum), ("ReduceMax", np.max)):
        m = op_model(tmp_path, typ, [("x", "f32", [3, 4]), np.array([-1], np.int64)],
                     ("f32", [3, 1]), data={"keep_dims": "true"})
        np.testing.assert_array_equal(m({"x": x})["y0"], fn(x, axis=1, keepdims=True))
    m = op_model(tmp_path, "ReduceSum", [("x", "i32", [2, 2]), np.array([0, 1], np.int64)],
                 ("i32", []), data={"keep_dims": "false"})
    out = m({"x": np.ones((2, 2), np.int32)})["y0"]
    assert out.shape == () and out.dtype == np.int32 and out == 4


def sig(v):
    return 1 / (1 + np.exp(-v))


def test_replaced_step_runs_where_shape_steps_are_cached(tmp_path):
    """A step swapped after planning (to_fixed_point swaps the recurrent ops) is the
    one that runs, also in a program that keeps shape-derived steps per input shape."""
    m = op_model(tmp_path, "ShapeOf", [("x", "f32", [None, 4])], ("i32", [2]), ver="opset3",
                 data={"output_type": "i32"})
    prog = m._program
    x = np.zeros((3, 4), np.float32)
    assert prog._shape_steps and list(prog.run([x])[0]) == [3, 4]   # cached for (3, 4)
    k = next(i for i, st in enumerate(prog.steps) if st[4].type == "ShapeOf")
    prog.replace_step(k, lambda v: np.array([7, 7], np.int32))
    assert list(prog.run([x])[0]) == [7, 7]
    assert list(prog.run([np.zeros((5, 4), np.float32)])[0]) == [7, 7]


@pytest.mark.parametrize("seed", [0, 1])
def test_lstm_cell_gate_order(tmp_path, seed):
    rng = np.random.default_rng(seed)
    hs, n, b = 3, 2, 2
    x, h, c = (rng.standard_normal(s).astype(np.float32) for s in ((b, n), (b, hs), (b, hs)))
    W = rng.standard_normal((4 * hs, n)).astype(np.float32)
    R = rng.standard_normal((4 * hs, hs)).astype(np.float32)
    B = rng.standard_normal(4 * hs).astype(np.float32)
    m = op_model(tmp_path, "LSTMCell", [("x", "f32", [b, n]), ("h", "f32", [b, hs]),
                                        ("c", "f32", [b, hs]), W, R, B],
                 [("f32", [b, hs]), ("f32", [b, hs])], ver="opset4",
                 data={"hidden_size": hs, "activations": "sigmoid, tanh, tanh",
                       "activations_alpha": "", "activations_beta": "", "clip": "0"})
    out = m({"x": x, "h": h, "c": c})
    g = x.astype(np.float64) @ W.T + h @ R.T + B
    f, i, cc, o = np.split(g, 4, axis=1)
    c1 = sig(f) * c + sig(i) * np.tanh(cc)
    np.testing.assert_allclose(out["y1"], c1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["y0"], sig(o) * np.tanh(c1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lbr", [False, True])
def test_gru_and_rnn_cells(tmp_path, lbr):
    rng = np.random.default_rng(3)
    hs, n, b = 3, 4, 2
    x, h = rng.standard_normal((b, n)).astype(np.float32), rng.standard_normal((b, hs)).astype(
        np.float32)
    W = rng.standard_normal((3 * hs, n)).astype(np.float32)
    R = rng.standard_normal((3 * hs, hs)).astype(np.float32)
    B = rng.standard_normal((4 if lbr else 3) * hs).astype(np.float32)
    m = op_model(tmp_path, "GRUCell", [("x", "f32", [b, n]), ("h", "f32", [b, hs]), W, R, B],
                 ("f32", [b, hs]), ver="opset3",
                 data={"hidden_size": hs, "linear_before_reset": str(lbr).lower()})
    Wz, Wr, Wh = np.split(W.astype(np.float64), 3)
    Rz, Rr, Rh = np.split(R.astype(np.float64), 3)
    z = sig(x @ Wz.T + h @ Rz.T + B[:hs])
    r = sig(x @ Wr.T + h @ Rr.T + B[hs:2 * hs])
    if lbr:
        hh = np.tanh(x @ Wh.T + r * (h @ Rh.T + B[3 * hs:]) + B[2 * hs:3 * hs])
    else:
        hh = np.tanh(x @ Wh.T + (r * h) @ Rh.T + B[2 * hs:])
    np.testing.assert_allclose(m({"x": x, "h": h})["y0"], (1 - z) * hh + z * h, rtol=1e-5,
                               atol=1e-6)
    m = op_model(tmp_path, "RNNCell", [("x", "f32", [b, n]), ("h", "f32", [b, hs]), W[:hs],
                                       R[:hs], B[:hs]], ("f32", [b, hs]),
                 data={"hidden_size": hs, "activations": "relu"})
    np.testing.assert_allclose(m({"x": x, "h": h})["y0"],
                               np.maximum(x @ W[:hs].T + h @ R[:hs].T + B[:hs], 0), rtol=1e-6)


def test_cell_attribute_checks(tmp_path):
    W = np.zeros((3, 2), np.float32)
    args = [("x", "f32", [1, 2]), ("h", "f32", [1, 3]), W, np.zeros((3, 3), np.float32),
            np.zeros(3, np.float32)]
    with pytest.raises(IRUnsupportedError, match=r"activations \['swish'\] not supported"):
        op_model(tmp_path, "RNNCell", args, ("f32", [1, 3]),
                 data={"hidden_size": 3, "activations": "swish"})
    with pytest.raises(IRError, match="missing required attribute 'hidden_size'"):
        op_model(tmp_path, "RNNCell", args, ("f32", [1, 3]))
    m = op_model(tmp_path, "RNNCell", args, ("f32", [1, 3]), data={"hidden_size": 4})
    with pytest.raises(IRError, match="inconsistent cell shapes"):
        m({"x": np.zeros((1, 2), np.float32), "h": np.zeros((1, 3), np.float32)})


# --------------------------------------------------------------------------- TensorIterator/Loop
def cumsum_body(part, et="f32", offset=0, extra_layers=(), extra_edges=()):
    """Body: x_t [2,part], acc_in [2,part] -> acc = acc_in + x_t (Result id 3)."""
    d = [2, part]
    layers = [param(0, "x_t", et, d), param(1, "acc_in", et, d),
              layer(2, "acc", "Add", data={"auto_broadcast": "numpy"},
                    ins=[port(0, et, d), port(1, et, d)], outs=[port(2, et, d)]),
              result(3, et, d), *extra_layers]
    return graph(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0), *extra_edges])


def ti_net(port_map, back_edges=None, t=6, part=1, out_t=None, body=None, typ="TensorIterator",
           ver="opset1", ins=None, outer=None, dims_last=None):
    """X [2,t] sliced on axis 1, A0 [2,part] merged; outputs concat (port 2), last (port 3)."""
    out_t = t if out_t is None else out_t
    be = '<edge from-layer="3" to-layer="1"/>' if back_edges is None else back_edges
    inner = (f"<port_map>{port_map}</port_map><back_edges>{be}</back_edges>"
             f"<body>{body or cumsum_body(part)}</body>")
    ins = ins or [port(0, "f32", [2, t]), port(1, "f32", [2, part])]
    n = len(ins)
    outs = [port(n, "f32", [2, out_t], "Seq"), port(n + 1, "f32", dims_last or [2, part], "Last")]
    layers = outer or [param(0, "X", "f32", [2, t]), param(1, "A0", "f32", [2, part])]
    layers = [*layers, layer(10, "ti", typ, ver, ins=ins, outs=outs, inner=inner),
              result(11, "f32", [2, out_t]), result(12, "f32", dims_last or [2, part])]
    edges = [(k, 0, 10, k) for k in range(n)] + [(10, n, 11, 0), (10, n + 1, 12, 0)]
    return net(layers, edges)


def pm_in(ext, internal, axis=None, start=0, end=-1, stride=1, part=1, purpose=None):
    s = f'<input external_port_id="{ext}" internal_layer_id="{internal}"'
    if axis is not None:
        s += f' axis="{axis}" start="{start}" end="{end}" stride="{stride}" part_size="{part}"'
    return s + (f' purpose="{purpose}"' if purpose else "") + "/>"


def pm_out(ext, internal, axis=None, start=0, end=-1, stride=1, part=1, purpose=None):
    return pm_in(ext, internal, axis, start, end, stride, part, purpose).replace("<input",
                                                                                 "<output")


X6 = np.arange(12, dtype=np.float32).reshape(2, 6) - 4
A0 = np.array([[0.5], [-1.0]], np.float32)


@pytest.mark.parametrize("direction", [1, -1])
@pytest.mark.parametrize("part", [1, 2, 3])
def test_ti_directions_and_parts(tmp_path, direction, part):
    rng = dict(start=0, end=-1) if direction > 0 else dict(start=-1, end=0)
    pm = (pm_in(0, 0, 1, stride=direction * part, part=part, **rng) + pm_in(1, 1)
          + pm_out(2, 3, 1, stride=direction * part, part=part, **rng) + pm_out(3, 3))
    model = read_model(write(tmp_path, ti_net(pm, part=part)))
    a0 = np.repeat(A0, part, axis=1)
    out = model({"X": X6, "A0": a0})
    chunks = X6.reshape(2, 6 // part, part)
    if direction < 0:
        chunks = chunks[:, ::-1]
    acc = a0[:, None, :] + np.cumsum(chunks, axis=1)
    np.testing.assert_array_equal(out["Last"], acc[:, -1])
    if direction < 0:
        acc = acc[:, ::-1]
    np.testing.assert_array_equal(out["Seq"], acc.reshape(2, 6))


def test_ti_defaults_omitted(tmp_path):
    pm = '<input axis="1" external_port_id="0" internal_layer_id="0"/>' + pm_in(1, 1) + \
         '<output axis="1" external_port_id="2" internal_layer_id="3"/>' + pm_out(3, 3)
    out = read_model(write(tmp_path, ti_net(pm)))({"X": X6, "A0": A0})
    np.testing.assert_array_equal(out["Seq"], A0 + np.cumsum(X6, axis=1))


@pytest.mark.parametrize("pm, exc, msg", [
    (pm_in(0, 0, -1) + pm_in(1, 1) + pm_out(2, 3, 1) + pm_out(3, 3), IRUnsupportedError,
     "negative axis -1 is not supported"),
    (pm_in(0, 0, 1, start=1) + pm_in(1, 1) + pm_out(2, 3, 1) + pm_out(3, 3), IRUnsupportedError,
     r"start=1, end=-1, stride=1: only whole-axis ranges"),
    (pm_in(0, 0, 1) + pm_in(1, 1) + pm_out(2, 3, 1, end=3) + pm_out(3, 3), IRUnsupportedError,
     r"cover \[0, 3\) of an output axis of length 6"),
    (pm_in(0, 0, 1, stride=1, part=2) + pm_in(1, 1) + pm_out(2, 3, 1) + pm_out(3, 3), GraphError,
     r"\|stride\| must equal part_size"),
    (pm_in(0, 0, 1) + pm_in(1, 1) + pm_out(2, 3, 1) + pm_out(3, 3, purpose="x"), IRError,
     "purpose is only valid in a Loop"),
    (pm_in(0, 3) + pm_in(1, 1) + pm_out(2, 3, 1) + pm_out(3, 3), IRError,
     "internal layer is not a body Parameter"),
    (pm_in(0, 0, 1) + pm_in(1, 1) + pm_out(2, 2, 1) + pm_out(3, 3), IRError,
     "internal layer is not a body Result"),
    (pm_in(0, 0, 1) + pm_in(7, 1) + pm_out(2, 3, 1) + pm_out(3, 3), IRError,
     "the layer has no input port 7"),
    (pm_in(0, 0, 1) + pm_out(2, 3, 1) + pm_out(3, 3), IRError,
     "back edge 3 -> 1: the target Parameter has no port_map input"),
])
def test_ti_port_map_errors(tmp_path, pm, exc, msg):
    with pytest.raises(exc, match=msg) as e:
        read_model(write(tmp_path, ti_net(pm)))
    assert "layer 10 'ti' (TensorIterator)" in str(e.value)


def test_ti_iteration_mismatch_and_static_shapes(tmp_path):
    pm = pm_in(0, 0, 1) + pm_in(1, 0, 1) + pm_out(2, 3, 1) + pm_out(3, 3)
    ins = [port(0, "f32", [2, 6]), port(1, "f32", [2, None])]
    outer = [param(0, "X", "f32", [2, 6]), param(1, "Y", "f32", [2, None])]
    body = cumsum_body(1).replace('<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>',
                                  '<edge from-layer="0" from-port="0" to-layer="2" to-port="1"/>')
    with pytest.raises(GraphError, match="already fed"):
        read_model(write(tmp_path, ti_net(pm, "", body=body, ins=ins, outer=outer)))
    pm = pm_in(0, 0, 1) + pm_in(1, 1, 1) + pm_out(2, 3, 1) + pm_out(3, 3)
    model = read_model(write(tmp_path, ti_net(pm, "", ins=ins, outer=outer)))
    y = np.ones((2, 6), np.float32)
    np.testing.assert_array_equal(model({"X": X6, "Y": y})["Seq"], X6 + 1)
    with pytest.raises(GraphError, match=r"layer 10 'ti' \(TensorIterator\): .*disagree on the "
                       "iteration count"):
        model({"X": X6, "Y": y[:, :4]})


def test_ti_without_sliced_inputs_counts_from_output_dims(tmp_path):
    pm = pm_in(0, 0) + pm_in(1, 1) + pm_out(2, 3, 1, end=4) + pm_out(3, 3)
    text = ti_net(pm, out_t=4, ins=[port(0, "f32", [2, 1]), port(1, "f32", [2, 1])],
                  outer=[param(0, "X", "f32", [2, 1]), param(1, "A0", "f32", [2, 1])])
    x = np.array([[1], [2]], np.float32)
    out = read_model(write(tmp_path, text))({"X": x, "A0": A0})
    np.testing.assert_array_equal(out["Seq"], A0 + x * np.arange(1, 5, dtype=np.float32))


def test_nested_ti_is_refused(tmp_path):
    pm = pm_in(0, 0, 1) + pm_in(1, 1) + pm_out(2, 3, 1) + pm_out(3, 3)
    inner = ti_net(pm).split("<layers>", 1)[1].rsplit("</edges>", 1)[0]
    outer_body = "<layers>" + inner + "</edges>"
    with pytest.raises(IRUnsupportedError, match="TensorIterator inside a TensorIterator body"):
        read_model(write(tmp_path, ti_net(pm_in(0, 0) + pm_in(1, 1) + pm_out(2, 11, 1) +
                                          pm_out(3, 12), "", body=outer_body, t=6, part=6,
                                          out_t=6)))


# Loop: body = cumsum over a sliced or invariant x plus a condition Result
def loop_body(cond_layers=(), cond_edges=(), et_iter=None):
    extra = list(cond_layers)
    edges = list(cond_edges)
    if et_iter:
        extra.append(param(6, "iter", et_iter, []))
    return cumsum_body(1, extra_layers=extra, extra_edges=edges)


def loop_net(pm, trip, cond, body, t=6, dims_seq=None, back='<edge from-layer="3" to-layer="1"/>',
             dims_last=None):
    w = Weights()
    outer = [param(0, "X", "f32", [2, t]), param(1, "A0", "f32", [2, 1])]
    ins = [port(0, "i64", [])]
    if isinstance(trip, str):
        outer.append(param(2, "trip", "i64", []))
    else:
        outer.append(w.const(2, np.int64(trip)))
    if isinstance(cond, str):
        outer.append(param(3, "cond", "boolean", []))
    else:
        outer.append(w.const(3, np.bool_(cond)))
    ins = [port(0, "i64", []), port(1, "boolean", []), port(2, "f32", [2, t]),
           port(3, "f32", [2, 1])]
    inner = f"<port_map>{pm}</port_map><back_edges>{back}</back_edges><body>{body}</body>"
    seq = dims_seq or [2, None]
    last = dims_last or [2, 1]
    layers = [*outer, layer(10, "loop", "Loop", "opset5", ins=ins, inner=inner,
                            outs=[port(4, "f32", seq, "Seq"), port(5, "f32", last, "Last")]),
              result(11, "f32", seq), result(12, "f32", last)]
    edges = [(2, 0, 10, 0), (3, 0, 10, 1), (0, 0, 10, 2), (1, 0, 10, 3), (10, 4, 11, 0),
             (10, 5, 12, 0)]
    return net(layers, edges), w


TRUE_COND = ([layer(4, "c", "Const", data={"element_type": "boolean", "shape": "",
                                          "offset": "0", "size": "1"},
                    outs=[port(0, "boolean", [])]), result(5, "boolean", [])], [(4, 0, 5, 0)])
LOOP_PM = (pm_in(2, 0, 1) + pm_in(3, 1) + pm_out(4, 3, 1) + pm_out(5, 3)
           + pm_out(-1, 5, purpose="execution_condition"))


def write_loop(tmp_path, pm=LOOP_PM, trip="trip", cond="cond", body=None, **kw):
    text, w = loop_net(pm, trip, cond, body or loop_body(*TRUE_COND), **kw)
    w.blob[0] = 1           # the body's Const true reads byte 0
    return read_model(write(tmp_path, text, w))


def test_loop_for_and_zero_iterations(tmp_path):
    model = write_loop(tmp_path)
    out = model({"X": X6, "A0": A0, "trip": np.int64(4), "cond": np.bool_(True)})
    np.testing.assert_array_equal(out["Seq"], A0 + np.cumsum(X6[:, :4], axis=1))
    out = model({"X": X6, "A0": A0, "trip": np.int64(0), "cond": np.bool_(True)})
    assert out["Seq"].shape == (2, 0)
    np.testing.assert_array_equal(out["Last"], A0)
    with pytest.raises(GraphError, match=r"layer 10 'loop' \(Loop\): .*iteration 6 needs chunk 6"):
        model({"X": X6, "A0": A0, "trip": np.int64(7), "cond": np.bool_(True)})


def test_loop_static_scan_shape_after_zero_iterations_is_an_error(tmp_path):
    model = write_loop(tmp_path, trip=3, dims_seq=[2, 3])
    np.testing.assert_array_equal(model({"X": X6, "A0": A0, "cond": np.bool_(True)})["Seq"],
                                  A0 + np.cumsum(X6[:, :3], axis=1))
    with pytest.raises(IRError, match=r"output port 4 has shape \[2, 0\], but the IR declares "
                       r"\[2, 3\]"):
        model({"X": X6, "A0": A0, "cond": np.bool_(False)})


def test_loop_const_false_condition(tmp_path):
    with pytest.raises(IRUnsupportedError, match="Const false execution condition and a "
                       "concatenated output"):
        write_loop(tmp_path, cond=False)
    pm = pm_in(2, 0, 1) + pm_in(3, 1) + pm_out(4, 3) + pm_out(5, 3) + pm_out(
        -1, 5, purpose="execution_condition")
    model = write_loop(tmp_path, pm=pm, cond=False, dims_seq=[0, 1], dims_last=[0, 1])
    out = model({"X": X6, "A0": A0, "trip": np.int64(2)})
    assert out["Seq"].shape == (0, 1) and out["Last"].shape == (0, 1)


def test_loop_current_iteration_and_condition(tmp_path):
    # cond = iter < 2 ; Result id 5
    cond = ([layer(4, "two", "Const", data={"element_type": "i64", "shape": "", "offset": "9",
                                            "size": "8"}, outs=[port(0, "i64", [])]),
             layer(7, "lt", "Less", data={"auto_broadcast": "numpy"},
                   ins=[port(0, "i64", []), port(1, "i64", [])], outs=[port(2, "boolean", [])]),
             result(5, "boolean", [])], [(6, 0, 7, 0), (4, 0, 7, 1), (7, 2, 5, 0)])
    pm = LOOP_PM + pm_in(-1, 6, purpose="current_iteration")
    text, w = loop_net(pm, -1, "cond", loop_body(*cond, et_iter="i64"))
    w.blob += np.int64(2).tobytes()
    model = read_model(write(tmp_path, text, w))
    out = model({"X": X6, "A0": A0, "cond": np.bool_(True)})
    np.testing.assert_array_equal(out["Seq"], A0 + np.cumsum(X6[:, :3], axis=1))
    text, w = loop_net(pm, -1, "cond", loop_body(*cond, et_iter="f32"))
    w.blob += np.int64(2).tobytes()
    with pytest.raises(GraphError, match="dtype must be int32 or int64, got float32"):
        read_model(write(tmp_path, text, w, name="f"))


def test_find_rnn_cells_and_weights_in_ti_body(tmp_path):
    hs, n = 2, 3
    w = Weights()
    W, R, B = (np.full(s, v, np.float32) for s, v in (((hs, n), 0.5), ((hs, hs), 0.25), (hs, 1)))
    body = graph([param(0, "x_t", "f32", [1, 1, n]), param(1, "h_in", "f32", [1, hs]),
                  w.const(2, np.array([1], np.int64)),
                  layer(3, "sq", "Squeeze", ins=[port(0, "f32", [1, 1, n]), port(1, "i64", [1])],
                        outs=[port(2, "f32", [1, n])]),
                  w.const(4, W, "W"), w.const(5, R, "R"), w.const(6, B, "B"),
                  layer(7, "cell", "RNNCell", data={"hidden_size": hs, "activations": "relu"},
                        ins=[port(0, "f32", [1, n]), port(1, "f32", [1, hs]),
                             port(2, "f32", [hs, n]), port(3, "f32", [hs, hs]),
                             port(4, "f32", [hs])], outs=[port(5, "f32", [1, hs])]),
                  result(8, "f32", [1, hs])],
                 [(0, 0, 3, 0), (2, 0, 3, 1), (3, 2, 7, 0), (1, 0, 7, 1), (4, 0, 7, 2),
                  (5, 0, 7, 3), (6, 0, 7, 4), (7, 5, 8, 0)])
    pm = pm_in(0, 0, 1) + pm_in(1, 1) + pm_out(2, 8)
    inner = (f'<port_map>{pm}</port_map><back_edges><edge from-layer="8" to-layer="1"/>'
             f'</back_edges><body>{body}</body>')
    layers = [param(0, "X", "f32", [1, 4, n]), param(1, "H0", "f32", [1, hs]),
              layer(9, "ti", "TensorIterator", ins=[port(0, "f32", [1, 4, n]),
                                                   port(1, "f32", [1, hs])],
                    outs=[port(2, "f32", [1, hs], "H_last")], inner=inner),
              result(10, "f32", [1, hs])]
    xml = write(tmp_path, net(layers, [(0, 0, 9, 0), (1, 0, 9, 1), (9, 2, 10, 0)]), w)
    model = read_model(xml)
    cells = [(path, l) for path, l in model.graph.walk() if l.type == "RNNCell"]
    assert len(cells) == 1
    (path, cell), = cells
    assert [p.name for p in path] == ["ti"] and cell.attrs["hidden_size"] == "2"
    body_graph = path[-1].body
    weights = [body_graph.input_layer(cell, k) for k in (2, 3, 4)]
    assert [l.name for l in weights] == ["W", "R", "B"]
    np.testing.assert_array_equal(weights[0].data, W)
    assert str(cell) == "layer 7 'cell' (RNNCell) in body of layer 9 'ti' (TensorIterator)"
    x = np.ones((1, 4, n), np.float32)
    h = np.zeros((1, hs), np.float32)
    for k in range(4):
        h = np.maximum(x[:, k] @ W.T + h @ R.T + B, 0)
    np.testing.assert_array_equal(model({"X": x, "H0": np.zeros((1, hs), np.float32)})["H_last"],
                                  h)
    step = IRBody(body_graph)
    assert step.input_names == ("x_t", "h_in") and step.num_outputs == 1
    out, = step.run({"h_in": np.zeros((1, hs), np.float32), "x_t": x[:, :1]})
    np.testing.assert_array_equal(out, np.maximum(x[:, 0] @ W.T + B, 0))


def inner_loop_body():
    """A whole Loop model (X [2,3] sliced, trip 3) reused as a body: Results 11 (Seq), 12 (Last)."""
    text, w = loop_net(LOOP_PM, 3, True, loop_body(*TRUE_COND), t=3, dims_seq=[2, 3])
    w.blob[0] = 1
    cond = TRUE_COND[0][0].replace('id="4"', 'id="13"') + result(14, "boolean", [])
    head, tail = text.rsplit("</layers><edges>", 1)
    text = head + cond + "</layers><edges>" + tail
    text = text.replace("</edges></net>", '<edge from-layer="13" from-port="0" to-layer="14" '
                        'to-port="0"/></edges></net>')
    return "<layers>" + text.split("<layers>", 1)[1].rsplit("</edges>", 1)[0] + "</edges>", w


def test_loop_in_ti_and_loop_in_loop(tmp_path):
    body, w = inner_loop_body()
    want_seq, want_last = A0 + np.cumsum(X6, axis=1), A0 + X6.sum(1, keepdims=True)
    pm = pm_in(0, 0, 1, stride=3, part=3) + pm_in(1, 1) + pm_out(2, 11, 1, stride=3, part=3) + \
        pm_out(3, 12)
    text = ti_net(pm, '<edge from-layer="12" to-layer="1"/>', part=3, body=body,
                  ins=[port(0, "f32", [2, 6]), port(1, "f32", [2, 1])], dims_last=[2, 1],
                  outer=[param(0, "X", "f32", [2, 6]), param(1, "A0", "f32", [2, 1])])
    model = read_model(write(tmp_path, text, w))
    out = model({"X": X6, "A0": A0})
    np.testing.assert_array_equal(out["Seq"], want_seq)
    np.testing.assert_array_equal(out["Last"], want_last)
    loops = [(tuple(p.type for p in path), l.type) for path, l in model.graph.walk()
             if l.type in ("Loop", "TensorIterator")]
    assert loops == [((), "TensorIterator"), (("TensorIterator",), "Loop")]

    pm = pm_in(2, 0, 1, stride=3, part=3) + pm_in(3, 1) + pm_out(4, 11, 1, stride=3, part=3) + \
        pm_out(5, 12)
    text, _ = loop_net(pm, "trip", "cond", body, back='<edge from-layer="12" to-layer="1"/>')
    with pytest.raises(IRError, match="the body has no execution_condition output"):
        read_model(write(tmp_path, text, w, name="nocond"))
    pm += pm_out(-1, 14, purpose="execution_condition")
    text, _ = loop_net(pm, "trip", "cond", body, back='<edge from-layer="12" to-layer="1"/>')
    model = read_model(write(tmp_path, text, w, name="ll"))
    out = model({"X": X6, "A0": A0, "trip": np.int64(2), "cond": np.bool_(True)})
    np.testing.assert_array_equal(out["Seq"], want_seq)
    with pytest.raises(GraphError, match="iteration 2 needs chunk 2, but the input has only 2"):
        model({"X": X6, "A0": A0, "trip": np.int64(-1), "cond": np.bool_(True)})
    out = model({"X": X6, "A0": A0, "trip": np.int64(1), "cond": np.bool_(True)})
    np.testing.assert_array_equal(out["Last"], A0 + X6[:, :3].sum(1, keepdims=True))


# --------------------------------------------------------------------------- issue 10 findings
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_doctype_refused_in_any_encoding(tmp_path, encoding):
    """The byte search misses a UTF-16/32 document; expat's declaration handlers do not."""
    text = ('<?xml version="1.0" encoding="UTF-16"?>\n'
            '<!DOCTYPE net [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>\n'
            '<net name="&b;" version="11"><layers/><edges/></net>')
    raw = text.encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):
        raw = ("\ufeff" + text).encode(encoding)      # with a byte-order mark
    assert b"DOCTYPE" not in raw
    xml = tmp_path / "m.xml"
    xml.write_bytes(raw)
    with pytest.raises(IRError, match="DOCTYPE/ENTITY declarations are not allowed"):
        read_graph(xml)
    with pytest.raises(IRError, match="DOCTYPE/ENTITY declarations are not allowed"):
        read_model(xml)


def test_utf16_ir_without_declarations_reads(tmp_path):
    text, w = add_net()
    xml = tmp_path / "m.xml"
    xml.write_bytes(text.replace('<?xml version="1.0"?>',
                                 '<?xml version="1.0" encoding="UTF-16"?>').encode("utf-16"))
    (tmp_path / "m.bin").write_bytes(bytes(w.blob))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(read_model(xml)({"X": x})["Y"],
                                  x + np.array([1.5, -2.0, 0.25], np.float32))


SHARED_TI_LOOP = Path(__import__("os").environ.get("MLI_SHARED")
                      or Path(__file__).resolve().parents[1].parent / "shared") / "vectors" / \
    "ov_ti_loop"


@pytest.mark.skipif(not (SHARED_TI_LOOP / "loop_cond_false_initial.xml").is_file(),
                    reason=f"shared TI/Loop cases not found at {SHARED_TI_LOOP} (set MLI_SHARED)")
def test_loop_with_const_true_condition_and_no_trip_count_is_refused():
    """issue 10: trip_count -1 and a body condition that is a Const true ran forever."""
    model = read_model(SHARED_TI_LOOP / "loop_cond_false_initial.xml")
    inputs = {"X": np.ones((2, 3), np.float32), "A0": np.zeros((2, 3), np.float32),
              "exec_cond": np.array(True)}
    with pytest.raises(IRError, match="the Loop would never end: trip_count is -1 and the "
                                      "body's execution condition is a Const true"):
        model({**inputs, "trip_count": np.array(-1, np.int64)})
    out = model({**inputs, "trip_count": np.array(3, np.int64)})     # bounded: runs
    assert all(isinstance(v, np.ndarray) for v in out.values())
