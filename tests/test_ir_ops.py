"""Per-op unit tests of mli.ir: one-op IRs against small numpy computations written from
the OpenVINO opset specifications (no openvino needed)."""

import numpy as np
import pytest

from mli.ir import IRError, IRUnsupportedError, SUPPORTED_OPS, ops_by_family, read_model

ET = {np.dtype(np.float32): ("f32", "FP32"), np.dtype(np.float16): ("f16", "FP16"),
      np.dtype(np.int32): ("i32", "I32"), np.dtype(np.int64): ("i64", "I64"),
      np.dtype(np.bool_): ("boolean", "BOOL")}
RNG = np.random.default_rng(12)


def _port(pid, a):
    return (f'<port id="{pid}" precision="{ET[np.dtype(a.dtype)][1]}">'
            + "".join(f"<dim>{d}</dim>" for d in a.shape) + "</port>")


def one_op(tmp_path, typ, ver, inputs, outputs, data=None, name="m"):
    """An IR with one ``typ`` layer.  ``inputs``: arrays (Const) or ``("name", array)``
    (Parameter); ``outputs``: arrays giving each output's dtype and shape.  Returns the
    model and the Parameter values."""
    layers, edges, blob, params = [], [], bytearray(), {}
    n = len(inputs)
    for k, x in enumerate(inputs):
        if isinstance(x, tuple):
            pname, a = x
            params[pname] = a
            et = ET[np.dtype(a.dtype)][0]
            layers.append(f'<layer id="{k}" name="{pname}" type="Parameter" version="opset1">'
                          f'<data shape="{",".join(map(str, a.shape))}" element_type="{et}"/>'
                          f'<output>{_port(0, a)}</output></layer>')
        else:
            a = np.asarray(x)
            raw = a.astype(np.uint8).tobytes() if a.dtype == np.bool_ else a.tobytes()
            layers.append(f'<layer id="{k}" name="c{k}" type="Const" version="opset1">'
                          f'<data element_type="{ET[np.dtype(a.dtype)][0]}" '
                          f'shape="{",".join(map(str, a.shape))}" offset="{len(blob)}" '
                          f'size="{len(raw)}"/><output>{_port(0, a)}</output></layer>')
            blob += raw
        edges.append((k, 0, n, k))
    args = [x[1] if isinstance(x, tuple) else np.asarray(x) for x in inputs]
    d = "" if not data else "<data " + " ".join(f'{k}="{v}"' for k, v in data.items()) + "/>"
    ins = "".join(_port(k, a) for k, a in enumerate(args))
    outs = "".join(_port(n + j, np.asarray(o)) for j, o in enumerate(outputs))
    layers.append(f'<layer id="{n}" name="op" type="{typ}" version="{ver}">{d}'
                  f'{"<input>" + ins + "</input>" if ins else ""}<output>{outs}</output></layer>')
    for j, o in enumerate(outputs):
        layers.append(f'<layer id="{n + 1 + j}" name="out{j}" type="Result" version="opset1">'
                      f'<input>{_port(0, np.asarray(o))}</input></layer>')
        edges.append((n, n + j, n + 1 + j, 0))
    e = "".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{dd}"/>'
                for a, b, c, dd in edges)
    xml = tmp_path / f"{name}.xml"
    xml.write_text(f'<?xml version="1.0"?>\n<net name="t" version="11"><layers>'
                   f'{"".join(layers)}</layers><edges>{e}</edges></net>')
    (tmp_path / f"{name}.bin").write_bytes(bytes(blob))
    return read_model(xml), params


def run(tmp_path, typ, ver, inputs, outputs, data=None):
    model, params = one_op(tmp_path, typ, ver, inputs, outputs, data)
    got = list(model(params).values())
    return got[0] if len(got) == 1 else got


def check(tmp_path, typ, ver, inputs, expected, data=None, exact=True, rtol=1e-6, atol=1e-6):
    exp = expected if isinstance(expected, list) else [expected]
    got = run(tmp_path, typ, ver, inputs, exp, data)
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        e = np.asarray(e)
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        if exact:
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def f32(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def i64(*v):
    return np.array(v, np.int64)


# --------------------------------------------------------------------------- registry
def test_registry_lists_families_and_versions():
    fam = ops_by_family()
    assert {"elementwise", "movement", "reduction", "nn", "recurrent", "subgraph",
            "state"} <= set(fam)
    for op in ("Broadcast-opset3", "Transpose-opset1", "Slice-opset8", "ScatterUpdate-opset3"):
        assert op in fam["movement"]
    for op in ("LSTMSequence-opset5", "GRUSequence-opset5", "RNNSequence-opset5",
               "LSTMCell-opset1", "LSTMCell-opset4"):
        assert op in fam["recurrent"]
    assert SUPPORTED_OPS["SoftMax"] == ("opset1", "opset8")
    assert SUPPORTED_OPS["Broadcast"] == ("opset1", "opset3")


def test_every_unknown_op_listed_at_once(tmp_path):
    x = ("x", f32(2, 3))
    with pytest.raises(IRUnsupportedError) as e:
        one_op(tmp_path, "Frob", "opset1", [x], [f32(2, 3)])
    assert "layer 1 'op' (Frob): op type 'Frob' is not supported (version 'opset1')" in str(e.value)
    # two unknown layers, one of them an unsupported version: both named
    text = (tmp_path / "m.xml").read_text()
    text = text.replace('<layer id="2" name="out0" type="Result" version="opset1">',
                        '<layer id="3" name="z" type="Tanh" version="opset42"><input>'
                        '<port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input>'
                        '<output><port id="1" precision="FP32"><dim>2</dim><dim>3</dim></port>'
                        '</output></layer><layer id="2" name="out0" type="Result" '
                        'version="opset1">')
    text = text.replace('</edges>', '<edge from-layer="0" from-port="0" to-layer="3" '
                                    'to-port="0"/></edges>')
    (tmp_path / "two.xml").write_text(text)
    (tmp_path / "two.bin").write_bytes(b"")
    with pytest.raises(IRUnsupportedError) as e:
        read_model(tmp_path / "two.xml")
    msg = str(e.value)
    assert msg.startswith("2 layers use unsupported ops: ")
    assert "layer 1 'op' (Frob): op type 'Frob' is not supported (version 'opset1')" in msg
    assert "layer 3 'z' (Tanh): Tanh version 'opset42' is not supported (supported: opset1)" in msg
    assert isinstance(e.value, IRError)


# --------------------------------------------------------------------------- element-wise
def test_divide(tmp_path):
    a, b = f32(2, 3), f32(3) + 2
    check(tmp_path, "Divide", "opset1", [("a", a), b], a / b, {"auto_broadcast": "numpy"})
    x, y = np.array([7, -7, 7, -7, 6], np.int32), np.array([2, 2, -2, -2, 3], np.int32)
    check(tmp_path, "Divide", "opset1", [("x", x), y], np.array([3, -4, -4, 3, 2], np.int32))
    check(tmp_path, "Divide", "opset1", [("x", x), y], np.array([3, -3, -3, 3, 2], np.int32),
          {"m_pythondiv": "false"})
    with pytest.raises(IRError, match="integer division by zero"):
        run(tmp_path, "Divide", "opset1", [("x", x), np.zeros(5, np.int32)], [x])


def test_mod_and_floor_mod(tmp_path):
    x, y = np.array([7, -7, 7, -7], np.int64), np.array([3, 3, -3, -3], np.int64)
    check(tmp_path, "Mod", "opset1", [("x", x), y], np.array([1, -1, 1, -1], np.int64))
    check(tmp_path, "FloorMod", "opset1", [("x", x), y], np.array([1, 2, -2, -1], np.int64))
    a = np.array([5.5, -5.5], np.float32)
    check(tmp_path, "Mod", "opset1", [("a", a), np.float32([2, 2])], np.float32([1.5, -1.5]))


def test_other_arithmetic(tmp_path):
    a = np.abs(f32(2, 3)) + 0.1
    check(tmp_path, "Sqrt", "opset1", [("a", a)], np.sqrt(a))
    check(tmp_path, "Power", "opset1", [("a", a), np.float32([2.0])], np.power(a, np.float32(2)))
    check(tmp_path, "Clamp", "opset1", [("a", a)], np.clip(a, np.float32(0.2), np.float32(0.5)),
          {"min": "0.2", "max": "0.5"})
    check(tmp_path, "Clamp", "opset1", [("i", i64(-3, 0, 3))], i64(-1, 0, 2),
          {"min": "-1.5", "max": "2.5"})


# --------------------------------------------------------------------------- movement
def test_broadcast_modes(tmp_path):
    x = f32(3, 1)
    check(tmp_path, "Broadcast", "opset3", [("x", x), i64(2, 3, 4)],
          np.broadcast_to(x, (2, 3, 4)).copy(), {"mode": "numpy"})
    check(tmp_path, "Broadcast", "opset1", [("x", x), i64(2, 3, 4)],
          np.broadcast_to(x, (2, 3, 4)).copy())
    check(tmp_path, "Broadcast", "opset3", [("x", x), i64(4, 1, 5)],
          np.broadcast_to(x, (4, 3, 5)).copy(), {"mode": "bidirectional"})
    v = f32(3)
    check(tmp_path, "Broadcast", "opset3", [("v", v), i64(2, 3, 4), i64(1)],
          np.broadcast_to(v[None, :, None], (2, 3, 4)).copy(), {"mode": "explicit"})
    with pytest.raises(IRError, match=r"cannot broadcast \[3, 1\] to \[2, 4, 4\]"):
        run(tmp_path, "Broadcast", "opset3", [("x", x), i64(2, 4, 4)], [f32(2, 4, 4)])
    with pytest.raises(IRError, match="Broadcast version 'opset1'|attribute mode="):
        run(tmp_path, "Broadcast", "opset1", [("x", x), i64(4, 1, 5)], [f32(4, 3, 5)],
            {"mode": "bidirectional"})


def test_transpose(tmp_path):
    x = f32(2, 3, 4)
    check(tmp_path, "Transpose", "opset1", [("x", x), i64(1, 2, 0)], x.transpose(1, 2, 0))
    check(tmp_path, "Transpose", "opset1", [("x", x), i64(-1, 0, 1)], x.transpose(2, 0, 1))
    check(tmp_path, "Transpose", "opset1", [("x", x), np.zeros(0, np.int64)], x.transpose())
    with pytest.raises(IRError, match="is not a permutation"):
        run(tmp_path, "Transpose", "opset1", [("x", x), i64(0, 0, 1)], [x])


def test_pad_modes_as_the_opset_spec_shows_them(tmp_path):
    """Pad-1/12 on the example of OpenVINO's Pad specification (DATA 1..12 in
    3 x 4, pads_begin [0, 1], pads_end [2, 3]), each mode's documented
    output; Pad-12's negative pads remove elements; bad pads are refused."""
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    want = {
        "constant": [[0, 1, 2, 3, 4, 0, 0, 0], [0, 5, 6, 7, 8, 0, 0, 0], [0, 9, 10, 11, 12, 0, 0, 0],
                     [0] * 8, [0] * 8],
        "edge": [[1, 1, 2, 3, 4, 4, 4, 4], [5, 5, 6, 7, 8, 8, 8, 8], [9, 9, 10, 11, 12, 12, 12, 12],
                 [9, 9, 10, 11, 12, 12, 12, 12], [9, 9, 10, 11, 12, 12, 12, 12]],
        "reflect": [[2, 1, 2, 3, 4, 3, 2, 1], [6, 5, 6, 7, 8, 7, 6, 5], [10, 9, 10, 11, 12, 11, 10, 9],
                    [6, 5, 6, 7, 8, 7, 6, 5], [2, 1, 2, 3, 4, 3, 2, 1]],
        "symmetric": [[1, 1, 2, 3, 4, 4, 3, 2], [5, 5, 6, 7, 8, 8, 7, 6], [9, 9, 10, 11, 12, 12, 11, 10],
                      [9, 9, 10, 11, 12, 12, 11, 10], [5, 5, 6, 7, 8, 8, 7, 6]]}
    for ver in ("opset1", "opset12"):
        for mode, out in want.items():
            check(tmp_path, "Pad", ver, [("x", x), i64(0, 1), i64(2, 3)], np.array(out, np.float32),
                  {"pad_mode": mode})
    check(tmp_path, "Pad", "opset1", [("x", x), i64(1, 0), i64(0, 1), np.float32(7)],
          np.pad(x, [(1, 0), (0, 1)], constant_values=7), {"pad_mode": "constant"})
    check(tmp_path, "Pad", "opset12", [("x", x), i64(-1, 1), i64(0, -2)],
          np.pad(x[1:, :2], [(0, 0), (1, 0)]), {"pad_mode": "constant"})
    with pytest.raises(IRError, match="negative pads"):
        run(tmp_path, "Pad", "opset1", [("x", x), i64(-1, 0), i64(0, 0)], [x[1:]], {"pad_mode": "constant"})
    with pytest.raises(IRError, match="reach beyond"):
        run(tmp_path, "Pad", "opset1", [("x", x), i64(0, 4), i64(0, 0)], [np.zeros((3, 8), np.float32)],
            {"pad_mode": "reflect"})
    with pytest.raises(IRError, match="rank"):
        run(tmp_path, "Pad", "opset1", [("x", x), i64(0), i64(0)], [x], {"pad_mode": "constant"})


def test_split_and_variadic_split(tmp_path):
    x = f32(2, 6)
    check(tmp_path, "Split", "opset1", [("x", x), i64(-1)], list(np.split(x, 3, axis=1)),
          {"num_splits": 3})
    check(tmp_path, "VariadicSplit", "opset1", [("x", x), i64(1), i64(1, -1, 2)],
          [x[:, :1], x[:, 1:4], x[:, 4:]])
    with pytest.raises(IRError, match="does not split into 4 parts"):
        run(tmp_path, "Split", "opset1", [("x", x), i64(1)], [x[:, :1]] * 4, {"num_splits": 4})


def test_slice(tmp_path):
    x = f32(4, 5)
    big = np.iinfo(np.int64).max
    check(tmp_path, "Slice", "opset8", [("x", x), i64(1), i64(big), i64(2), i64(-1)],
          x[:, 1::2])
    check(tmp_path, "Slice", "opset8", [("x", x), i64(-1, 3), i64(-big - 1, 0), i64(-1, -2)],
          x[::-1, 3:0:-2])
    check(tmp_path, "Slice", "opset8", [("x", x), i64(10), i64(20), i64(1)], x[10:20])
    with pytest.raises(IRError, match="Slice step is 0"):
        run(tmp_path, "Slice", "opset8", [("x", x), i64(0), i64(1), i64(0)], [x[:1]])


def test_strided_slice(tmp_path):
    x = f32(3, 4, 5)
    # begin_mask/end_mask 1 = ignore begin/end (whole range)
    check(tmp_path, "StridedSlice", "opset1", [("x", x), i64(1, 3, 1), i64(3, 0, 0),
                                               i64(1, 1, 2)], x[1:3, :, 1::2],
          {"begin_mask": "0,1,0", "end_mask": "0,1,1"})
    check(tmp_path, "StridedSlice", "opset1", [("x", x), i64(0, 2), i64(0, 3)], x[:, 2:3],
          {"begin_mask": "1,0", "end_mask": "1,0"})
    check(tmp_path, "StridedSlice", "opset1", [("x", x), i64(-1, 0), i64(0, 0), i64(-1, 1)],
          x[:0:-1], {"begin_mask": "0,1", "end_mask": "0,1"})
    check(tmp_path, "StridedSlice", "opset1", [("x", x), i64(1, 0, 2), i64(2, 0, 3)],
          x[1, :, 2], {"begin_mask": "0,1,0", "end_mask": "0,1,0", "shrink_axis_mask": "1,0,1"})
    check(tmp_path, "StridedSlice", "opset1", [("x", x), i64(0, 1), i64(0, 3)],
          x[np.newaxis, 1:3], {"begin_mask": "0,0", "end_mask": "0,0", "new_axis_mask": "1,0"})
    check(tmp_path, "StridedSlice", "opset1", [("x", x), i64(0, 1), i64(0, 3)], x[..., 1:3],
          {"begin_mask": "0,0", "end_mask": "0,0", "ellipsis_mask": "1,0"})


def test_scatter_update(tmp_path):
    data = np.zeros((3, 4), np.float32)
    upd = f32(3, 2)
    want = data.copy()
    want[:, 3], want[:, 0] = upd[:, 0], upd[:, 1]
    check(tmp_path, "ScatterUpdate", "opset3", [("d", data), i64(-1, 0), ("u", upd), i64(1)],
          want)
    # indices [1, 2] of shape [1, 2] along axis 0: updates [1, 2, 4]
    upd2 = f32(1, 2, 4)
    want = data.copy()
    want[1], want[2] = upd2[0, 0], upd2[0, 1]
    check(tmp_path, "ScatterUpdate", "opset3",
          [("d", data), np.array([[1, 2]], np.int64), ("u", upd2), i64(0)], want)
    with pytest.raises(IRError, match=r"ScatterUpdate index out of range \[-3, 3\)"):
        run(tmp_path, "ScatterUpdate", "opset3",
            [("d", data), i64(3), ("u", f32(1, 4)), i64(0)], [data])


def test_reverse_sequence(tmp_path):
    x = f32(2, 5, 3)
    want = x.copy()
    want[0, :3] = x[0, 2::-1]
    want[1, :5] = x[1, ::-1]
    check(tmp_path, "ReverseSequence", "opset1", [("x", x), i64(3, 5)], want)
    xt = x.transpose(1, 0, 2).copy()
    check(tmp_path, "ReverseSequence", "opset1", [("x", xt), np.int32([3, 5])],
          want.transpose(1, 0, 2).copy(), {"batch_axis": "1", "seq_axis": "0"})


# --------------------------------------------------------------------------- reductions
def test_reduce_mean(tmp_path):
    x = f32(2, 3, 4)
    check(tmp_path, "ReduceMean", "opset1", [("x", x), i64(-1, 0)],
          (x.sum(axis=(0, 2), dtype=np.float32) / np.float32(8)), exact=False, rtol=1e-6)
    check(tmp_path, "ReduceMean", "opset1", [("x", x), i64(1)], x.mean(1, keepdims=True),
          {"keep_dims": "true"}, exact=False, rtol=1e-6)
    check(tmp_path, "ReduceMean", "opset1", [("i", np.int32([[-3, -4], [3, 4]])), i64(1)],
          np.int32([-3, 3]))


# --------------------------------------------------------------------------- nn
def conv_ref(x, w, stride, dil, pb, pe, groups=1):
    """Direct loops: y[n, o, p] = sum_c,k x_padded[n, g*Ci + c, p*s + k*d] w[o, c, k] (1-D/2-D)."""
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(pb, pe)))
    N, C = x.shape[:2]
    Co, Ci = w.shape[:2]
    ks = w.shape[2:]
    out_sp = [(x.shape[2 + i] - (ks[i] - 1) * dil[i] - 1) // stride[i] + 1 for i in range(len(ks))]
    y = np.zeros((N, Co) + tuple(out_sp))
    per = Co // groups
    for o in range(Co):
        g = o // per
        for pos in np.ndindex(*out_sp):
            for kk in np.ndindex(*ks):
                idx = tuple(p * s + k * d for p, s, k, d in zip(pos, stride, kk, dil))
                y[(slice(None), o) + pos] += x[(slice(None), slice(g * Ci, (g + 1) * Ci)) + idx] \
                    @ w[(o, slice(None)) + kk]
    return y.astype(np.float32)


def test_convolution(tmp_path):
    x, w = f32(2, 3, 7, 6), f32(4, 3, 3, 2)
    attrs = {"strides": "2,1", "dilations": "1,2", "pads_begin": "1,0", "pads_end": "0,1",
             "auto_pad": "explicit"}
    check(tmp_path, "Convolution", "opset1", [("x", x), w],
          conv_ref(x, w, (2, 1), (1, 2), (1, 0), (0, 1)), attrs, exact=False, rtol=1e-5,
          atol=1e-5)
    x1, w1 = f32(1, 2, 9), f32(3, 2, 3)
    check(tmp_path, "Convolution", "opset1", [("x", x1), w1],
          conv_ref(x1, w1, (2,), (1,), (1,), (1,)),
          {"strides": "2", "dilations": "1", "pads_begin": "0", "pads_end": "0",
           "auto_pad": "same_upper"}, exact=False, rtol=1e-5, atol=1e-5)


def test_group_convolution(tmp_path):
    x, w = f32(1, 4, 5), f32(2, 3, 2, 2)          # 2 groups, 3 outputs and 2 inputs each
    check(tmp_path, "GroupConvolution", "opset1", [("x", x), w],
          conv_ref(x, w.reshape(6, 2, 2), (1,), (1,), (0,), (0,), groups=2),
          {"strides": "1", "dilations": "1", "pads_begin": "0", "pads_end": "0"},
          exact=False, rtol=1e-5, atol=1e-5)


def test_max_pool(tmp_path):
    x = f32(1, 2, 5, 5)
    attrs = {"strides": "2,2", "kernel": "2,2", "pads_begin": "0,0", "pads_end": "0,0",
             "rounding_type": "floor"}
    want = x[:, :, :4, :4].reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5))
    check(tmp_path, "MaxPool", "opset1", [("x", x)], want, attrs)
    xp = np.pad(x, [(0, 0), (0, 0), (0, 1), (0, 1)], constant_values=-np.inf)
    want = xp.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5))
    check(tmp_path, "MaxPool", "opset1", [("x", x)], want, {**attrs, "rounding_type": "ceil"})


def softmax_ref(x, axis):
    e = np.exp(x.astype(np.float64) - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def test_softmax_and_log_softmax(tmp_path):
    x = f32(2, 3, 4) * 5
    check(tmp_path, "SoftMax", "opset8", [("x", x)], softmax_ref(x, -1).astype(np.float32),
          {"axis": "-1"}, exact=False, rtol=1e-5)
    check(tmp_path, "SoftMax", "opset1", [("x", x)], softmax_ref(x, 1).astype(np.float32),
          {"axis": "1"}, exact=False, rtol=1e-5)
    check(tmp_path, "LogSoftmax", "opset5", [("x", x)],
          np.log(softmax_ref(x, 0)).astype(np.float32), {"axis": "0"}, exact=False, rtol=1e-5,
          atol=1e-6)
    with pytest.raises(IRError, match="SoftMax-1 axis must be non-negative"):
        run(tmp_path, "SoftMax", "opset1", [("x", x)], [x], {"axis": "-1"})


# --------------------------------------------------------------------------- recurrent
def sig(v):
    return 1 / (1 + np.exp(-v))


def ref_sequence(kind, x, states, lengths, W, R, B, direction, clip=0.0, lbr=False,
                 acts=None):
    """Row by row, direction by direction, in float64 from the opset formulas:
    LSTM gates f,i,c,o; GRU z,r,h; the reverse direction reads each row's valid part
    backwards; outputs past a row's length are 0; final states after its last valid step."""
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    f = acts[0] if acts else (np.tanh if kind == "rnn" else sig)
    g = acts[1] if acts and len(acts) > 1 else np.tanh
    hact = acts[2] if acts and len(acts) > 2 else np.tanh
    Bn, T, _ = x.shape
    dirs = [False, True] if direction == "bidirectional" else [direction == "reverse"]
    M = R.shape[-1]
    Y = np.zeros((Bn, len(dirs), T, M))
    finals = [np.zeros((Bn, len(dirs), M)) for _ in states]
    x, W, R, B = (v.astype(np.float64) for v in (x, W, R, B))
    for d, rev in enumerate(dirs):
        for b in range(Bn):
            st = [s[b, d].astype(np.float64) for s in states]
            n = int(lengths[b])
            for t in (range(n - 1, -1, -1) if rev else range(n)):
                xt, h = x[b, t], st[0]
                if kind == "lstm":
                    z = W[d] @ xt + R[d] @ h + B[d]
                    ft, it, ct, ot = np.split(cl(z), 4)
                    c = sig(ft) * st[1] + sig(it) * g(ct) if not acts else \
                        f(ft) * st[1] + f(it) * g(ct)
                    h = (f(ot) if acts else sig(ot)) * hact(c)
                    st = [h, c]
                elif kind == "gru":
                    Wz, Wr, Wh = np.split(W[d], 3)
                    Rz, Rr, Rh = np.split(R[d], 3)
                    zt = f(cl(Wz @ xt + Rz @ h + B[d][:M]))
                    rt = f(cl(Wr @ xt + Rr @ h + B[d][M:2 * M]))
                    if lbr:
                        ht = g(cl(Wh @ xt + rt * (Rh @ h + B[d][3 * M:]) + B[d][2 * M:3 * M]))
                    else:
                        ht = g(cl(Wh @ xt + Rh @ (rt * h) + B[d][2 * M:]))
                    st = [(1 - zt) * ht + zt * h]
                else:
                    st = [f(cl(W[d] @ xt + R[d] @ h + B[d]))]
                Y[b, d, t] = st[0]
            for k, s in enumerate(st):
                finals[k][b, d] = s
    return [Y.astype(np.float32)] + [s.astype(np.float32) for s in finals]


SEQ_CASES = [("forward", [5, 3]), ("reverse", [5, 2]), ("bidirectional", [4, 5]),
             ("bidirectional", [0, 5])]


@pytest.mark.parametrize("direction, lengths", SEQ_CASES)
@pytest.mark.parametrize("clip", [0.0, 0.7])
def test_lstm_sequence(tmp_path, direction, lengths, clip):
    Bn, T, N, M = 2, 5, 3, 4
    nd = 2 if direction == "bidirectional" else 1
    x, h0, c0 = f32(Bn, T, N), f32(Bn, nd, M), f32(Bn, nd, M)
    W, R, B = f32(nd, 4 * M, N), f32(nd, 4 * M, M), f32(nd, 4 * M)
    lens = np.int32(lengths)
    want = ref_sequence("lstm", x, [h0, c0], lens, W, R, B, direction, clip)
    data = {"hidden_size": M, "direction": direction, "clip": clip}
    check(tmp_path, "LSTMSequence", "opset5", [("x", x), ("h0", h0), ("c0", c0), ("len", lens),
                                               W, R, B], want, data, exact=False, rtol=1e-5,
          atol=1e-6)


@pytest.mark.parametrize("direction, lengths", SEQ_CASES)
@pytest.mark.parametrize("lbr", [False, True])
def test_gru_sequence(tmp_path, direction, lengths, lbr):
    Bn, T, N, M = 2, 5, 3, 4
    nd = 2 if direction == "bidirectional" else 1
    x, h0 = f32(Bn, T, N), f32(Bn, nd, M)
    W, R, B = f32(nd, 3 * M, N), f32(nd, 3 * M, M), f32(nd, (4 if lbr else 3) * M)
    lens = np.int64(lengths)
    want = ref_sequence("gru", x, [h0], lens, W, R, B, direction, lbr=lbr)
    data = {"hidden_size": M, "direction": direction, "linear_before_reset": str(lbr).lower()}
    check(tmp_path, "GRUSequence", "opset5", [("x", x), ("h0", h0), ("len", lens), W, R, B],
          want, data, exact=False, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("direction, lengths", SEQ_CASES)
def test_rnn_sequence(tmp_path, direction, lengths):
    Bn, T, N, M = 2, 5, 3, 4
    nd = 2 if direction == "bidirectional" else 1
    x, h0 = f32(Bn, T, N), f32(Bn, nd, M)
    W, R, B = f32(nd, M, N), f32(nd, M, M), f32(nd, M)
    lens = np.int64(lengths)
    want = ref_sequence("rnn", x, [h0], lens, W, R, B, direction, clip=0.5)
    # both directions use the first activation (converters write one per direction)
    check(tmp_path, "RNNSequence", "opset5", [("x", x), ("h0", h0), ("len", lens), W, R, B],
          want, {"hidden_size": M, "direction": direction, "clip": 0.5,
                 "activations": "tanh,tanh"}, exact=False, rtol=1e-5, atol=1e-6)


def test_activations_with_alpha_beta(tmp_path):
    Bn, T, N, M = 2, 4, 3, 4
    x, h0 = f32(Bn, T, N), f32(Bn, 1, M)
    W, R, B = f32(1, M, N), f32(1, M, M), f32(1, M)
    lens = np.int64([4, 4])
    affine = lambda v: 0.5 * v + 0.25                                      # noqa: E731
    want = ref_sequence("rnn", x, [h0], lens, W, R, B, "forward", acts=[affine])
    check(tmp_path, "RNNSequence", "opset5", [("x", x), ("h0", h0), ("len", lens), W, R, B],
          want, {"hidden_size": M, "direction": "forward", "activations": "affine",
                 "activations_alpha": "0.5", "activations_beta": "0.25"}, exact=False,
          rtol=1e-5, atol=1e-6)
    hsig = lambda v: np.clip(0.3 * v + 0.4, 0, 1)                          # noqa: E731
    leaky = lambda v: np.where(v >= 0, v, 0.1 * v)                         # noqa: E731
    W4, R4, B4, c0 = f32(1, 4 * M, N), f32(1, 4 * M, M), f32(1, 4 * M), f32(Bn, 1, M)
    want = ref_sequence("lstm", x, [h0, c0], lens, W4, R4, B4, "forward",
                        acts=[hsig, leaky, np.tanh])
    check(tmp_path, "LSTMSequence", "opset5",
          [("x", x), ("h0", h0), ("c0", c0), ("len", lens), W4, R4, B4], want,
          {"hidden_size": M, "direction": "forward", "activations": "hardsigmoid,leakyrelu,tanh",
           "activations_alpha": "0.3,0.1", "activations_beta": "0.4"}, exact=False, rtol=1e-5,
          atol=1e-6)


def test_sequence_checks(tmp_path):
    x, h0 = f32(2, 3, 2), f32(2, 1, 4)
    W, R, B = f32(1, 4, 2), f32(1, 4, 4), f32(1, 4)
    with pytest.raises(IRError, match=r"sequence_lengths \[3, 4\] outside \[0, 3\]"):
        run(tmp_path, "RNNSequence", "opset5", [("x", x), ("h0", h0), ("len", np.int64([3, 4])),
                                                W, R, B], [f32(2, 1, 3, 4), h0],
            {"hidden_size": 4, "direction": "forward"})
    with pytest.raises(IRError, match="attribute direction='sideways' is invalid"):
        run(tmp_path, "RNNSequence", "opset5", [("x", x), ("h0", h0), ("len", np.int64([3, 3])),
                                                W, R, B], [f32(2, 1, 3, 4), h0],
            {"hidden_size": 4, "direction": "sideways"})


def test_lstm_cell_v1_with_peepholes(tmp_path):
    Bn, N, M = 2, 3, 4
    x, h, c = f32(Bn, N), f32(Bn, M), f32(Bn, M)
    W, R, B, P = f32(4 * M, N), f32(4 * M, M), f32(4 * M), f32(3 * M)
    z = x.astype(np.float64) @ W.T + h @ R.T + B
    ft, it, ct, ot = np.split(z, 4, axis=1)
    pi, po, pf = np.split(P.astype(np.float64), 3)
    it, ft = it + pi * c, ft + pf * c
    c1 = sig(ft) * c + sig(it) * np.tanh(ct)
    h1 = sig(ot + po * c1) * np.tanh(c1)
    check(tmp_path, "LSTMCell", "opset1", [("x", x), ("h", h), ("c", c), W, R, B, P],
          [h1.astype(np.float32), c1.astype(np.float32)], {"hidden_size": M}, exact=False,
          rtol=1e-5, atol=1e-6)
    with pytest.raises(IRUnsupportedError, match="input_forget=true"):
        run(tmp_path, "LSTMCell", "opset1", [("x", x), ("h", h), ("c", c), W, R, B, P],
            [h, c], {"hidden_size": M, "input_forget": "true"})


# --------------------------------------------------------------------------- f16, state
def test_f16_ir_computes_in_f32(tmp_path):
    """An f16 Parameter takes f16 or f32 arrays; the op runs in f32 (f16 constants
    widened exactly); an f16 output is the f32 result rounded to f16 once."""
    x = f32(3, 4)
    c = np.float16([1.0009765625, 3.0, -0.5, 2.0])      # exact in f16
    model, _ = one_op(tmp_path, "Multiply", "opset1", [("x", x.astype(np.float16)), c],
                      [c.astype(np.float16)[None].repeat(3, 0)])
    want = (x.astype(np.float16).astype(np.float32) * c.astype(np.float32)).astype(np.float16)
    got = model({"x": x.astype(np.float16)})[model.output_names[0]]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    got32 = model({"x": x})[model.output_names[0]]        # f32 accepted, not pre-rounded
    np.testing.assert_array_equal(got32, (x * c.astype(np.float32)).astype(np.float16))
    with pytest.raises(IRError, match=r"must be float16 \(or float32\), got float64"):
        model({"x": x.astype(np.float64)})


def state_model(tmp_path):
    """y = ReadValue(v, init) + x; Assign(v, y): a running sum kept between calls."""
    text = '''<?xml version="1.0"?>
<net name="s" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="2" element_type="f32"/>
 <output><port id="0" precision="FP32" names="x"><dim>2</dim></port></output></layer>
<layer id="1" name="init" type="Const" version="opset1">
 <data element_type="f32" shape="2" offset="0" size="8"/>
 <output><port id="0" precision="FP32"><dim>2</dim></port></output></layer>
<layer id="2" name="rv" type="ReadValue" version="opset6">
 <data variable_id="acc" variable_type="f32" variable_shape="2"/>
 <input><port id="0" precision="FP32"><dim>2</dim></port></input>
 <output><port id="1" precision="FP32"><dim>2</dim></port></output></layer>
<layer id="3" name="add" type="Add" version="opset1">
 <input><port id="0" precision="FP32"><dim>2</dim></port>
 <port id="1" precision="FP32"><dim>2</dim></port></input>
 <output><port id="2" precision="FP32" names="y"><dim>2</dim></port></output></layer>
<layer id="4" name="assign" type="Assign" version="opset6"><data variable_id="acc"/>
 <input><port id="0" precision="FP32"><dim>2</dim></port></input>
 <output><port id="1" precision="FP32"><dim>2</dim></port></output></layer>
<layer id="5" name="r" type="Result" version="opset1">
 <input><port id="0" precision="FP32"><dim>2</dim></port></input></layer>
</layers><edges>
<edge from-layer="1" from-port="0" to-layer="2" to-port="0"/>
<edge from-layer="2" from-port="1" to-layer="3" to-port="0"/>
<edge from-layer="0" from-port="0" to-layer="3" to-port="1"/>
<edge from-layer="3" from-port="2" to-layer="4" to-port="0"/>
<edge from-layer="3" from-port="2" to-layer="5" to-port="0"/>
</edges></net>'''
    (tmp_path / "s.xml").write_text(text)
    (tmp_path / "s.bin").write_bytes(np.float32([10, 20]).tobytes())
    return read_model(tmp_path / "s.xml")


def test_read_value_assign_keep_state_between_calls(tmp_path):
    m = state_model(tmp_path)
    one = np.float32([1, 2])
    assert m.state == {}
    np.testing.assert_array_equal(m({"x": one})["y"], np.float32([11, 22]))
    np.testing.assert_array_equal(m({"x": one})["y"], np.float32([12, 24]))
    np.testing.assert_array_equal(m.state["acc"], np.float32([12, 24]))
    with pytest.raises(IRError):
        m({"x": np.float32([1, 2, 3])})              # a failed call leaves the state alone
    np.testing.assert_array_equal(m.state["acc"], np.float32([12, 24]))
    m.reset_state()
    assert m.state == {}
    np.testing.assert_array_equal(m({"x": one})["y"], np.float32([11, 22]))
