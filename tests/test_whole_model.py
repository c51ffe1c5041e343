"""to_fixed_point(..., scope="model"): every layer of an IR model on the MLI 1.1 kernels,
the plan file, the per-layer report and goldens, and ``mli fixed-point --scope model``.

Integers are checked exactly against MLI's own kernels called directly on the traced
inputs (never against numbers this code produced before); S/N figures only against
floors (they vary with the CPU's float paths)."""

import json
import subprocess
import sys

import numpy as np
import pytest

import mli
from conftest import child_env, manifest_cases
from mli.fixed_point import FixedPointError, FixedPointModel, to_fixed_point
from mli.fixed_point.constants import resolve
from mli.fixed_point.plan import Plan
from mli.ir import read_model

OV, CASES = manifest_cases("ov_real", "the OpenVINO real-converter cases (ov_real)")
CRNN = "pt_kws_crnn__torch_onnx_fp16"          # Conv2d + ReLU + LSTM + Linear + softmax
LOOP_RNN = "mo_onnx_loop_rnn__mo_newfe_fp32"    # Abs, ReduceMean, Less on data: no kernel


def _case(name):
    model = read_model(OV / f"{name}.xml")
    z = np.load(OV / f"{name}.npz")
    return model, {k[4:]: z[k] for k in z.files if k.startswith("in__")}


@pytest.fixture(scope="module")
def crnn():
    model, inputs = _case(CRNN)
    return model, inputs, to_fixed_point(model, inputs, "fx16", scope="model")


def _weights(model, layer_name, index):
    layer = next(l for l in model.graph.layers if l.name == layer_name)
    return np.asarray(resolve(((model.graph,), ()), layer, index, "w"), np.float64)


def _t(q, frac):
    return mli.Tensor(np.ascontiguousarray(q), frac)


def _fmt(wm, key):
    t = wm.plan.tensors[key]
    return t["el"], t["frac"]


# --------------------------------------------------------------------------- layers = MLI's kernels
def test_crnn_every_layer_is_the_mli_kernel_on_the_traced_inputs(crnn):
    model, inputs, wm = crnn
    out, tr = wm.run(inputs, trace=True)
    static = wm.plan.layers
    # conv2d_chw (+ its fused bias) on the input quantized by MLI's helper
    el, fx = _fmt(wm, "input.1:0")
    x = mli.Tensor.from_float(inputs["input.1"][0], el, fx, saturate=True)
    (wel, fw) = static["/conv/Conv/WithoutBiases"]["static"]["1"]
    (bel, fb) = static["/conv/Conv/WithoutBiases"]["static"]["-1"]
    w = mli.Tensor.from_float(_weights(model, "/conv/Conv/WithoutBiases", 1), wel, fw, saturate=True)
    b = mli.Tensor.from_float(_weights(model, "/conv/Conv", 1).reshape(-1), bel, fb, saturate=True)
    cfg = mli.Conv2dConfig(stride_height=1, stride_width=2, padding_top=2, padding_bottom=2,
                           padding_left=2, padding_right=2)
    fo = _fmt(wm, "/conv/Conv:0")[1]
    conv = mli.conv2d_chw_fx16(x, w, b, cfg, out_frac_bits=fo)
    assert np.array_equal(conv.numpy(), tr["/conv/Conv:0"][0])
    # relu, permute, view
    relu = mli.relu_fx16(_t(tr["/conv/Conv:0"].reshape(-1), fo))
    assert np.array_equal(relu.numpy().reshape(tr["/Relu:0"].shape), tr["/Relu:0"])
    perm = mli.permute_fx16(_t(tr["/Relu:0"], fo), mli.PermuteConfig(perm_dim=(0, 2, 1, 3)))
    assert np.array_equal(perm.numpy(), tr["/Transpose:0"])
    assert np.array_equal(tr["/Reshape:0"], tr["/Transpose:0"].reshape(1, 49, 320))
    # the last step of the LSTM's output (a sub-tensor), fully_connected + bias, softmax
    assert np.array_equal(tr["/Gather:0"], tr["Squeeze_1248073:0"][:, -1])
    fh = _fmt(wm, "/Gather:0")[1]
    (wel, fw) = static["/fc/Gemm/WithoutBiases"]["static"]["1"]
    (bel, fb) = static["/fc/Gemm/WithoutBiases"]["static"]["-1"]
    w = mli.Tensor.from_float(_weights(model, "/fc/Gemm/WithoutBiases", 1), wel, fw, saturate=True)
    b = mli.Tensor.from_float(_weights(model, "/fc/Gemm", 1).reshape(-1), bel, fb, saturate=True)
    ff = _fmt(wm, "/fc/Gemm:0")[1]
    fc = mli.fully_connected_fx16(_t(tr["/Gather:0"][0], fh), w, b, out_frac_bits=ff)
    assert np.array_equal(fc.numpy(), tr["/fc/Gemm:0"][0])
    sm = mli.softmax_fx16(_t(tr["/fc/Gemm:0"][0], ff))
    assert np.array_equal(sm.numpy(), tr["119:0"][0])
    # the model's output is the last kernel's integers, dequantized
    assert np.array_equal(out["119"].astype(np.float64), tr["119:0"] * 2.0 ** -15)


def test_crnn_quality_floors_per_kind(crnn):
    model, inputs, wm = crnn
    floors = {"fx16": 60.0, "fx8w16d": 50.0, "fx8": 25.0}       # dB; measured 72 / 63 / 31
    for kind, floor in floors.items():
        w = wm if kind == "fx16" else to_fixed_point(model, inputs, kind, scope="model")
        rep = w.report(inputs)
        assert rep["outputs"]["119"] > floor, (kind, rep["outputs"])
        keys = [row["tensor"] for row in rep["layers"]]
        assert keys[0] == "input.1:0" or "/conv/Conv:0" in keys
        assert all(row["saturated"] == 0 for row in rep["layers"])
        assert all(isinstance(row["headroom_bits"], int) for row in rep["layers"])


def test_default_scope_is_recurrent_and_bad_arguments_are_named(crnn):
    model, inputs, _ = crnn
    assert isinstance(to_fixed_point(model, inputs, "fx16"), FixedPointModel)
    with pytest.raises(ValueError, match="scope"):
        to_fixed_point(model, inputs, scope="everything")
    with pytest.raises(ValueError, match="margin"):
        to_fixed_point(model, inputs, scope="model", margin=-1)
    with pytest.raises(ValueError, match="kinds: no layer 'nope'"):
        to_fixed_point(model, inputs, scope="model", kinds={"nope": "fx8"})
    with pytest.raises(ValueError, match="kind"):
        to_fixed_point(model, inputs, "fx32", scope="model")
    with pytest.raises(ValueError, match="scope='model' only"):
        to_fixed_point(model, inputs, margin=1)
    with pytest.raises(TypeError, match="float_ops"):
        to_fixed_point(model, inputs, scope="model", float_ops="Tanh")
    with pytest.raises(ValueError, match="float_ops: 'Tanhh' names no op"):
        to_fixed_point(model, inputs, scope="model", float_ops=("Tanhh",))
    with pytest.raises(TypeError, match="kinds"):
        to_fixed_point(model, inputs, scope="model", kinds=["fx8"])


def test_mixed_kinds_per_layer(crnn):
    """fx8 convolution, fx8w16d LSTM (MLI's KWS example's mix): the fx8 conv output
    reaches the fx16 layers through mli_hlp_convert_tensor."""
    model, inputs, _ = crnn
    kinds = {"/conv/Conv/WithoutBiases": "fx8", "/conv/Conv": "fx8",
             "LSTMSequence_1246149": "fx8w16d"}
    wm = to_fixed_point(model, inputs, "fx16", scope="model", kinds=kinds)
    assert wm.plan.tensors["/conv/Conv:0"]["el"] == "fx8"
    assert wm.plan.layers["LSTMSequence_1246149"]["kind"] == "fx8w16d"
    _, tr = wm.run(inputs, trace=True)
    assert tr["/conv/Conv:0"].dtype == np.int8 and tr["/Relu:0"].dtype == np.int16
    src = _fmt(wm, "/conv/Conv:0")
    dst = _fmt(wm, "/Relu:0")
    conv = mli.convert_tensor(_t(tr["/conv/Conv:0"].reshape(-1), src[1]), dst[0], dst[1])
    relu = mli.relu_fx16(conv)
    assert np.array_equal(relu.numpy().reshape(tr["/Relu:0"].shape), tr["/Relu:0"])
    assert wm.report(inputs)["outputs"]["119"] > 25.0


# --------------------------------------------------------------------------- refusal, float_ops
def test_refusal_lists_every_op_without_a_kernel_and_float_ops_runs_them():
    model, inputs = _case(LOOP_RNN)
    with pytest.raises(FixedPointError) as e:
        to_fixed_point(model, inputs, scope="model")
    msg = str(e.value)
    for op in ("Abs-opset1", "ReduceMean-opset1", "Less-opset1"):
        assert op in msg
    assert "\n" not in msg and "float_ops" in msg
    wm = to_fixed_point(model, inputs, scope="model", float_ops=("Abs", "ReduceMean", "Less"))
    assert sorted(wm.plan.layers[k]["op"] for k in wm.float_ops) == \
        ["Abs-opset1", "Less-opset1", "ReduceMean-opset1"]
    rep = wm.report(inputs)
    marked = {row["op"] for row in rep["layers"] if row["float"]}
    assert {"Abs-opset1", "ReduceMean-opset1"} <= marked
    assert min(rep["outputs"].values()) > 40.0


# --------------------------------------------------------------------------- the plan file
def test_plan_round_trip_edit_and_refusals(crnn, tmp_path):
    model, inputs, wm = crnn
    path = tmp_path / "plan.json"
    wm.plan.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
    d = json.loads(path.read_text())
    assert d["format"] == "mli-fixed-point-plan" and d["kind"] == "fx16"
    assert d["tensors"]["/fc/Gemm:0"]["shape"] == [1, 12]
    again = to_fixed_point(model, inputs, scope="model", plan=path)
    a, b = wm.run(inputs, trace=True)[1], again.run(inputs, trace=True)[1]
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    # an edited frac takes effect: the fully connected layer one frac bit lower
    f = d["tensors"]["/fc/Gemm:0"]["frac"]
    d["tensors"]["/fc/Gemm/WithoutBiases:0"]["frac"] = f - 1
    d["tensors"]["/fc/Gemm:0"]["frac"] = f - 1
    path.write_text(json.dumps(d))
    edited = to_fixed_point(model, inputs, scope="model", plan=path)
    assert edited.plan.tensors["/fc/Gemm:0"]["frac"] == f - 1
    tr = edited.run(inputs, trace=True)[1]
    sm = mli.softmax_fx16(_t(tr["/fc/Gemm:0"][0], f - 1))
    assert np.array_equal(sm.numpy(), tr["119:0"][0])
    # an edited kind
    d["layers"]["/Relu"]["kind"] = "fx8"
    d["tensors"]["/Relu:0"]["el"] = "fx8"
    d["tensors"]["/Relu:0"]["frac"] = 6
    for k in ("/Transpose:0", "/Reshape:0", "/lstm/Transpose:0", "Transpose_1246108:0"):
        d["tensors"][k]["el"], d["tensors"][k]["frac"] = "fx8", 6
    for k in ("/Transpose", "/lstm/Transpose", "Transpose_1246108"):
        d["layers"][k]["kind"] = "fx8"
    path.write_text(json.dumps(d))
    assert to_fixed_point(model, inputs, scope="model", plan=path).run(
        inputs, trace=True)[1]["/Relu:0"].dtype == np.int8
    # plans that do not fit, refused naming the tensor / layer
    bad = json.loads(json.dumps(d))
    del bad["tensors"]["/Relu:0"]
    path.write_text(json.dumps(bad))
    with pytest.raises(FixedPointError, match="tensor '/Relu:0'.*missing"):
        to_fixed_point(model, inputs, scope="model", plan=path)
    bad = json.loads(json.dumps(d))
    bad["tensors"]["/fc/Gemm:0"]["shape"] = [1, 13]
    path.write_text(json.dumps(bad))
    with pytest.raises(FixedPointError, match="tensor '/fc/Gemm:0' has shape"):
        to_fixed_point(model, inputs, scope="model", plan=path)
    bad = json.loads(json.dumps(d))
    bad["layers"]["ghost"] = bad["layers"].pop("/Relu")
    path.write_text(json.dumps(bad))
    with pytest.raises(FixedPointError, match="layer 'ghost' is not in the model"):
        to_fixed_point(model, inputs, scope="model", plan=path)
    bad = json.loads(json.dumps(d))
    bad["tensors"]["/Relu:0"]["frac"] = 99
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="tensor '/Relu:0': frac"):
        to_fixed_point(model, inputs, scope="model", plan=path)
    bad = json.loads(json.dumps(d))
    bad["tensors"]["/Reshape:0"]["frac"] = 5
    path.write_text(json.dumps(bad))
    with pytest.raises(FixedPointError, match="tensor '/Reshape:0' holds the integers of its input"):
        to_fixed_point(model, inputs, scope="model", plan=path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        Plan.load(path)


def test_margin_lowers_the_calibrated_formats(crnn):
    model, inputs, wm = crnn
    m2 = to_fixed_point(model, inputs, scope="model", margin=2)
    assert m2.plan.tensors["/fc/Gemm:0"]["frac"] == wm.plan.tensors["/fc/Gemm:0"]["frac"] - 2
    assert m2.plan.tensors["119:0"]["frac"] == 15          # softmax: MLI's fixed output


# --------------------------------------------------------------------------- every ov_real case
def test_every_ov_real_case_runs_or_is_refused_in_one_message():
    """fx16 on every case (the kinds fx8w16d/fx8 on a sample): each runs with an S/N
    per layer, or is refused naming ops MLI 1.1 has no kernel for."""
    refused, ran = {}, {}
    for case in CASES:
        model, inputs = _case(case["name"])
        try:
            wm = to_fixed_point(model, inputs, "fx16", scope="model")
        except FixedPointError as e:
            refused[case["name"]] = str(e)
            continue
        ran[case["name"]] = min(wm.report(inputs)["outputs"].values())
    assert set(refused) == {"mo_onnx_loop_early_exit__mo_legacy_fp32",
                            "mo_onnx_loop_early_exit__mo_newfe_fp32",
                            "mo_onnx_loop_rnn__mo_legacy_fp32", "mo_onnx_loop_rnn__mo_newfe_fp32"}
    assert all("no MLI 1.1 kernel for" in m for m in refused.values())
    assert min(ran.values()) > 50.0, sorted(ran.items(), key=lambda kv: kv[1])[:3]


# --------------------------------------------------------------------------- the command
def _cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "mli", "fixed-point"] + args, cwd=cwd,
                          env=child_env(), capture_output=True, text=True, timeout=300)


def test_cli_scope_model_json_and_save_plan(tmp_path):
    plan = tmp_path / "p.json"
    r = _cli([str(OV / f"{CRNN}.xml"), "--scope", "model", "--kind", "all", "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d["outputs"]) == {"119"} and set(d["outputs"]["119"]) == {"fx16", "fx8w16d", "fx8"}
    assert d["outputs"]["119"]["fx16"] > 60.0
    assert {row["kind"] for row in d["layers"]} == {"fx16", "fx8w16d", "fx8"}
    assert list(tmp_path.iterdir()) == []
    r = _cli([str(OV / f"{CRNN}.xml"), "--scope", "model", "--kind", "all", "--save-plan",
              str(plan)], tmp_path)
    assert r.returncode == 2 and "--save-plan writes one plan" in r.stderr
    assert list(tmp_path.iterdir()) == []
    r = _cli([str(OV / f"{CRNN}.xml"), "--scope", "model", "--kind", "fx8", "--save-plan",
              str(plan)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]
    r = _cli([str(OV / f"{CRNN}.xml"), "--scope", "model", "--plan", str(plan),
              "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert list(json.loads(r.stdout)["outputs"]["119"]) == ["fx8"]


def test_cli_refusal_is_one_line_exit_2(tmp_path):
    r = _cli([str(OV / f"{LOOP_RNN}.xml"), "--scope", "model"], tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Abs-opset1" in lines[0] and "ReduceMean-opset1" in lines[0]
    r = _cli([str(OV / f"{LOOP_RNN}.xml"), "--scope", "model", "--float-ops",
              "Abs,ReduceMean,Less"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "(float op)" in r.stdout
    r = _cli([str(OV / f"{CRNN}.xml"), "--json"], tmp_path)
    assert r.returncode == 2 and "--json needs --scope model" in r.stderr


def test_cli_dataset_labels_accuracy_confusion(tmp_path):
    model, inputs = _case(CRNN)
    x = inputs["input.1"]
    xs = np.stack([x, x * 0.5, -x, x[:, :, ::-1].copy()])
    labels = np.array([int(np.argmax(model({"input.1": s})["119"])) for s in xs])
    np.savez(tmp_path / "data.npz", **{"input.1": xs, "labels": labels})
    r = _cli([str(OV / f"{CRNN}.xml"), "--scope", "model", "--kind", "fx16", "--dataset",
              str(tmp_path / "data.npz"), "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["samples"] == 4 and d["accuracy"]["fx16"]["float"] == 1.0      # labels = float classes
    conf = np.array(d["confusion"]["fx16"])
    assert conf.sum() == 4 and np.trace(conf) == round(4 * d["accuracy"]["fx16"]["fixed"])
    assert d["agreement"]["fx16"] == d["accuracy"]["fx16"]["fixed"]
    r = _cli([str(OV / f"{CRNN}.xml"), "--scope", "model", "--labels", "labels"], tmp_path)
    assert r.returncode == 2 and "--labels, --output and --jobs need --dataset" in r.stderr
    r = _cli([str(OV / f"{CRNN}.xml"), "--scope", "model", "--dataset", str(tmp_path / "data.npz"),
              "--labels", "nope"], tmp_path)
    assert r.returncode == 2 and "--labels" in r.stderr and "'nope'" in r.stderr


# --------------------------------------------------------------------------- more kernels
def test_maxpool_concat_max_on_mli_kernels(tmp_path):
    """A small NCHW model through MaxPool (padded), a 10-input Concat and Maximum with a
    constant: each layer's integers are MLI's kernel on the traced inputs."""
    from mli.fixed_point.examples import _IR, _out
    ir = _IR("small")
    x = ir.layer("x", "Parameter", [], [(1, 2, 6, 8)], {"shape": "1,2,6,8", "element_type": "f32"})
    pool = ir.layer("pool", "MaxPool", [_out(x, 0, (1, 2, 6, 8))], [(1, 2, 4, 4)],
                    {"kernel": "2,2", "strides": "2,2", "pads_begin": "1,0", "pads_end": "1,1",
                     "rounding_type": "floor", "auto_pad": "explicit"})
    cat = ir.layer("cat", "Concat", [_out(pool, 1, (1, 2, 4, 4))] * 10, [(1, 20, 4, 4)],
                   {"axis": "1"})
    mx = ir.layer("max", "Maximum", [_out(cat, 10, (1, 20, 4, 4)),
                                     ir.const("floor", np.full((1, 20, 4, 4), -0.25, np.float32))],
                  [(1, 20, 4, 4)])
    ir.layer("y", "Result", [_out(mx, 2, (1, 20, 4, 4))], [])
    ir.write(tmp_path / "small.xml")
    model = read_model(tmp_path / "small.xml")
    xs = {"x": np.random.default_rng(3).uniform(-1.5, 1.5, (1, 2, 6, 8)).astype(np.float32)}
    wm = to_fixed_point(model, xs, "fx16", scope="model")
    assert [wm.plan.layers[k]["role"] for k in ("pool", "cat", "max")] == \
        ["maxpool", "concat", "eltwise_max"]
    _, tr = wm.run(xs, trace=True)
    el, fx = _fmt(wm, "x:0")
    xq = mli.Tensor.from_float(xs["x"][0], el, fx, saturate=True)
    pooled = mli.maxpool_chw_fx16(xq, mli.PoolConfig(
        kernel_width=2, kernel_height=2, stride_width=2, stride_height=2, padding_top=1,
        padding_bottom=1, padding_left=0, padding_right=1))
    assert np.array_equal(pooled.numpy(), tr["pool:0"][0])
    assert np.array_equal(tr["cat:0"], np.concatenate([tr["pool:0"]] * 10, axis=1))
    f = _fmt(wm, "max:0")[1]
    floor = mli.Tensor.from_float(np.full(320, -0.25, np.float32), "fx16", f, saturate=True)
    got = mli.eltwise_max_fx16(_t(tr["cat:0"].reshape(-1), f), floor)
    assert np.array_equal(got.numpy().reshape(tr["max:0"].shape), tr["max:0"])
    assert wm.report(xs)["outputs"]["y"] > 60.0


def test_clamps_activations_and_eltwise_on_mli_kernels(tmp_path):
    """Clamp(0, 6) -> relu RELU_6, Clamp(-1, 1) -> RELU_1, Sigmoid, Tanh, Multiply and
    Subtract: each layer's integers are MLI's kernel on the traced inputs."""
    from mli.fixed_point.examples import _IR, _out
    ir = _IR("acts")
    d = (2, 3, 5)
    x = ir.layer("x", "Parameter", [], [d], {"shape": "2,3,5", "element_type": "f32"})
    r6 = ir.layer("r6", "Clamp", [_out(x, 0, d)], [d], {"min": "0", "max": "6"})
    r1 = ir.layer("r1", "Clamp", [_out(x, 0, d)], [d], {"min": "-1", "max": "1"})
    sg = ir.layer("sg", "Sigmoid", [_out(r6, 1, d)], [d])
    th = ir.layer("th", "Tanh", [_out(r1, 1, d)], [d])
    mul = ir.layer("mul", "Multiply", [_out(sg, 1, d), _out(th, 1, d)], [d])
    sub = ir.layer("sub", "Subtract", [_out(mul, 2, d), _out(x, 0, d)], [d])
    ir.layer("y", "Result", [_out(sub, 2, d)], [])
    ir.write(tmp_path / "acts.xml")
    model = read_model(tmp_path / "acts.xml")
    xs = {"x": np.random.default_rng(4).uniform(-8, 8, d).astype(np.float32)}
    wm = to_fixed_point(model, xs, "fx16", scope="model")
    _, tr = wm.run(xs, trace=True)
    fx = _fmt(wm, "x:0")
    xq = mli.Tensor.from_float(xs["x"].reshape(-1), fx[0], fx[1], saturate=True)
    assert np.array_equal(mli.relu_fx16(xq, mli.ReluType.RELU_6).numpy(), tr["r6:0"].reshape(-1))
    assert np.array_equal(mli.relu_fx16(xq, mli.ReluType.RELU_1).numpy(), tr["r1:0"].reshape(-1))
    sg_ = mli.sigm_fx16(_t(tr["r6:0"].reshape(-1), fx[1]))
    th_ = mli.tanh_fx16(_t(tr["r1:0"].reshape(-1), fx[1]))
    assert np.array_equal(sg_.numpy(), tr["sg:0"].reshape(-1))
    assert np.array_equal(th_.numpy(), tr["th:0"].reshape(-1))
    fm = _fmt(wm, "mul:0")[1]
    mul_ = mli.eltwise_mul_fx16(sg_, th_, out_frac_bits=fm)
    assert np.array_equal(mul_.numpy(), tr["mul:0"].reshape(-1))
    fs = _fmt(wm, "sub:0")[1]          # MLI: both inputs and the output at one frac
    a = mli.convert_tensor(mul_, "fx16", fs)
    b = mli.convert_tensor(xq, "fx16", fs)
    assert np.array_equal(mli.eltwise_sub_fx16(a, b).numpy(), tr["sub:0"].reshape(-1))
    assert wm.report(xs)["outputs"]["y"] > 50.0


@pytest.mark.parametrize("name", ["onnx_gru_fwd__onnx_ti_fp16", "pt_rnn_bi_l1_bf__torch_fp16",
                                  "keras_lstm_state__keras_savedmodel_fp16"])
def test_plan_round_trip_gives_the_same_integers(name, tmp_path):
    """GRU in a TensorIterator, a bidirectional RNN sequence, a Keras Loop: a saved plan fed
    back gives the same integers in every layer."""
    model, inputs = _case(name)
    wm = to_fixed_point(model, inputs, "fx8w16d", scope="model")
    wm.plan.save(tmp_path / "plan.json")
    again = to_fixed_point(model, inputs, scope="model", plan=tmp_path / "plan.json")
    a, b = wm.run(inputs, trace=True)[1], again.run(inputs, trace=True)[1]
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_pad_on_padding2d(tmp_path):
    """Pad-1 (constant 0, H and W of NCHW) -> padding2d_chw: the layer's
    integers are MLI's kernel on the traced input; the float Pad the IR
    runs agrees with the documented modes."""
    from mli.fixed_point.examples import _IR, _out
    ir = _IR("pad")
    d, o = (1, 3, 4, 5), (1, 3, 6, 8)
    x = ir.layer("x", "Parameter", [], [d], {"shape": "1,3,4,5", "element_type": "f32"})
    pad = ir.layer("pad", "Pad", [_out(x, 0, d), ir.const("pb", np.array([0, 0, 1, 2], np.int64)),
                                  ir.const("pe", np.array([0, 0, 1, 1], np.int64))], [o],
                   {"pad_mode": "constant"})
    ir.layer("y", "Result", [_out(pad, 3, o)], [])
    ir.write(tmp_path / "pad.xml")
    model = read_model(tmp_path / "pad.xml")
    xs = {"x": np.random.default_rng(5).uniform(-2, 2, d).astype(np.float32)}
    np.testing.assert_array_equal(model(xs)["y"], np.pad(xs["x"], [(0, 0), (0, 0), (1, 1), (2, 1)]))
    wm = to_fixed_point(model, xs, "fx16", scope="model")
    assert wm.plan.layers["pad"]["role"] == "padding2d"
    _, tr = wm.run(xs, trace=True)
    el, fx = _fmt(wm, "x:0")
    xq = mli.Tensor.from_float(xs["x"][0], el, fx, saturate=True)
    want = mli.padding2d_chw_fx16(xq, mli.Padding2dConfig(padding_top=1, padding_bottom=1, padding_left=2,
                                                          padding_right=1))
    assert np.array_equal(want.numpy(), tr["pad:0"][0])


def test_plan_sets_a_gru_cells_formats(tmp_path):
    """A GRU cell's formats (input, each weight and bias part) are in the plan and
    a user's edit of them is what the converted cell uses; a cell entry with other
    keys is refused naming the layer."""
    import json
    from mli.fixed_point.gru import GruCell
    model, inputs = _case("onnx_gru_fwd__onnx_ti_fp16")
    wm = to_fixed_point(model, inputs, "fx16", scope="model")
    gru = [k for k, v in wm.plan.layers.items() if v.get("cells") and "w_zr" in v["cells"][0]]
    assert gru, "the GRU layer's cells are in the plan"
    path = tmp_path / "plan.json"
    wm.plan.save(path)
    d = json.loads(path.read_text())
    cell = d["layers"][gru[0]]["cells"][0]
    cell["x"] -= 1
    cell["w_zr"] -= 1
    cell["b_zr"] = min(cell["b_zr"], cell["x"] + cell["w_zr"])
    path.write_text(json.dumps(d))
    edited = to_fixed_point(model, inputs, scope="model", plan=path)
    bodies = [c.body for cells in edited.cells.values() for c in cells if isinstance(c.body, GruCell)]
    assert bodies and bodies[0].fracs["x"] == cell["x"] and bodies[0].fracs["w_zr"] == cell["w_zr"]
    assert bodies[0].fracs["b_zr"] == cell["b_zr"]
    del cell["w_zr"]
    path.write_text(json.dumps(d))
    with pytest.raises(FixedPointError, match=f"{gru[0]}.*GRU cell's formats"):
        to_fixed_point(model, inputs, scope="model", plan=path)
