"""The MLI HAR example's network as an IR model through to_fixed_point(scope="model")
with the example's formats as a plan file: every layer equals ``mli har``'s integers
(its library-LSTM layer 3), at the three bit depths."""

import numpy as np
import pytest

from conftest import SHARED
from mli.fixed_point import to_fixed_point
from mli.fixed_point.examples import HAR_LAYERS, har_kind, har_plan, write_har_ir
from mli.fixed_point.plan import Plan
from mli.ir import read_model

HAR = SHARED / "data" / "har"
pytestmark = pytest.mark.skipif(not (HAR / "model.json").is_file(),
                                reason=f"HAR example data not found at {HAR} (set MLI_SHARED)")


@pytest.mark.parametrize("depth", [16, 816, 8])
def test_har_network_layer_by_layer_equals_mli_har(depth, tmp_path):
    from mli.tools.har import load_har, quantize_input, run_har
    write_har_ir(tmp_path / "har.xml", depth, HAR)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["har.bin", "har.xml"]
    model = read_model(tmp_path / "har.xml")
    rng = np.random.default_rng(depth)
    xs = [rng.uniform(-1.5, 1.5, (128, 9)).astype(np.float32) for _ in range(2)]
    calibrated = to_fixed_point(model, {"x": xs[0][None]}, har_kind(depth), scope="model")
    har_plan(calibrated, depth, HAR).save(tmp_path / "plan.json")
    wm = to_fixed_point(model, {"x": xs[0][None]}, scope="model", plan=tmp_path / "plan.json")
    assert Plan.load(tmp_path / "plan.json").kind == har_kind(depth)
    hm = load_har(HAR, depth)
    for x in xs:
        xq = quantize_input(x, depth)
        ref = run_har(xq, depth, "library", model=hm)
        x_exact = xq.numpy().astype(np.float32) * np.float32(2.0 ** -xq.frac_bits)
        _, trace = wm.run({"x": x_exact[None]}, trace=True)
        for layer, key in HAR_LAYERS.items():
            want = ref[layer]
            assert wm.plan.tensors[key]["frac"] == want.frac_bits, layer
            assert trace[key].dtype == want.numpy().dtype, layer
            assert np.array_equal(trace[key].reshape(want.shape), want.numpy()), layer


def test_model_case_crosschecks_firmware_dumps_of_any_layer(tmp_path):
    """mli crosscheck on a case naming the model and plan: mli har's own layer outputs as
    the 'firmware' dumps are bit-exact; one planted LSB is found at its layer."""
    import json
    import subprocess
    import sys

    from conftest import child_env
    from mli.tools.crosscheck import crosscheck
    from mli.tools.har import load_har, quantize_input, run_har
    write_har_ir(tmp_path / "har.xml", 16, HAR)
    model = read_model(tmp_path / "har.xml")
    x = np.random.default_rng(5).uniform(-1, 1, (128, 9)).astype(np.float32)
    xq = quantize_input(x, 16)
    x_exact = (xq.numpy().astype(np.float32) * np.float32(2.0 ** -xq.frac_bits))[None]
    np.savez(tmp_path / "inputs.npz", x=x_exact)
    har_plan(to_fixed_point(model, {"x": x_exact}, scope="model"), 16, HAR).save(tmp_path / "plan.json")
    ref = run_har(xq, 16, "library", model=load_har(HAR, 16))
    (tmp_path / "fw").mkdir()
    dumps = {}
    for layer, key in HAR_LAYERS.items():
        np.save(tmp_path / "fw" / f"{layer}.npy", ref[layer].numpy())
        dumps[key] = f"fw/{layer}.npy"
    case = {"model": "har.xml", "plan": "plan.json", "inputs": "inputs.npz", "dumps": dumps}
    (tmp_path / "case.json").write_text(json.dumps(case))
    res = crosscheck(str(tmp_path / "case.json"))
    assert res.bit_exact and [r.name for r in res.layers] == list(HAR_LAYERS.values())
    bad = ref["lstm2"].numpy().copy()
    bad[70, 3] += 1
    np.save(tmp_path / "fw" / "lstm2.npy", bad)
    res = crosscheck(str(tmp_path / "case.json"))
    assert [r.name for r in res.layers if not r.bit_exact] == ["lstm2:0"]
    assert res.layers[2].report.n_diff == 1
    r = subprocess.run([sys.executable, "-m", "mli", "crosscheck", str(tmp_path / "case.json")],
                       cwd=tmp_path / "fw", env=child_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "lstm2:0" in r.stdout, r.stdout + r.stderr


KWS = SHARED / "data" / "kws"


@pytest.mark.skipif(not (KWS / "model.json").is_file(),
                    reason=f"KWS example data not found at {KWS} (set MLI_SHARED)")
def test_kws_network_layer_by_layer_equals_mli_kws(tmp_path):
    """The KWS example's network (fx8 convolutions, fx16 pooling, fx8w16d LSTM and fully
    connected: the example's mix of kinds) with its formats as a plan: every layer equals
    mli kws's network, and the softmax the example's x86 reference."""
    from mli.fixed_point.examples import KWS_LAYERS, kws_plan, write_kws_ir
    from mli.tools.kws import network
    from mli.tools.kws.data import load_model
    write_kws_ir(tmp_path / "kws.xml", KWS)
    model = read_model(tmp_path / "kws.xml")
    ref = np.load(KWS / "x86_reference.npz")
    feats = ref["features_fx8"]

    def window(n):
        fx = feats[16 * n:16 * n + 65]
        return fx, (fx.astype(np.float32) * np.float32(2.0 ** -3))[None, None]
    calibrated = to_fixed_point(model, {"features": window(0)[1]}, "fx16", scope="model")
    kws_plan(calibrated, KWS).save(tmp_path / "plan.json")
    wm = to_fixed_point(model, {"features": window(0)[1]}, scope="model",
                        plan=tmp_path / "plan.json")
    assert wm.plan.layers["L1/conv"]["kind"] == "fx8"
    assert wm.plan.layers["L5/lstm"]["kind"] == "fx8w16d"
    km = load_model(KWS)
    for n in (0, 7, 17):
        fx, x = window(n)
        want = network.run_network(fx, km)
        _, trace = wm.run({"features": x}, trace=True)
        for layer, key in KWS_LAYERS.items():
            w = want[layer]
            assert wm.plan.tensors[key]["frac"] == w.frac_bits, layer
            assert trace[key].dtype == w.numpy().dtype, layer
            assert np.array_equal(trace[key].reshape(w.shape), w.numpy()), (n, layer)
        assert np.array_equal(trace["L6/softmax:0"][0], ref["softmax_q15"][n])


def test_float_prelu_and_avgpool_ops():
    """The two float IR ops the KWS model needs (PRelu-1, AvgPool-1) against numpy."""
    import mli.ir.registry as reg
    from mli.ir.graph import Layer, Port

    def build(typ, attrs, n_in):
        layer = Layer(0, "t", typ, "opset1", attrs, tuple(Port(i, "f32", ()) for i in range(n_in)),
                      (Port(n_in, "f32", ()),))
        return reg.build(layer, None)
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    prelu = build("PRelu", {}, 2)
    assert np.array_equal(prelu(x, np.array([0.25], np.float32)), np.where(x < 0, x * np.float32(0.25), x))
    pool = build("AvgPool", {"kernel": "2,2", "strides": "2,1", "pads_begin": "0,0",
                             "pads_end": "0,0", "exclude-pad": "true"}, 1)
    want = np.stack([np.stack([x[:, :, 2 * i:2 * i + 2, j:j + 2].mean(axis=(2, 3)) for j in range(4)], -1)
                     for i in range(2)], -2)
    assert np.allclose(pool(x), want, rtol=1e-6, atol=1e-7)


def test_har_data_set_accuracy_and_confusion_equal_mli_har(tmp_path, monkeypatch):
    """report(dataset, labels=...) on the HAR test set through the example's formats: the
    fixed-point accuracy is mli har's (library layer 3), the confusion matrix holds every
    sample; --jobs on worker processes gives the same report."""
    from mli.io import read_idx
    from mli.tools.har import accuracy, load_har, quantize_input
    write_har_ir(tmp_path / "har.xml", 16, HAR)
    model = read_model(tmp_path / "har.xml")
    tests = read_idx(HAR / "small_test_base" / "tests.idx")
    labels = read_idx(HAR / "small_test_base" / "labels.idx").astype(np.int64)
    xs = np.stack([quantize_input(t, 16).numpy() for t in tests]).astype(np.float32) * np.float32(2.0 ** -13)
    x0 = {"x": xs[:1]}
    wm = to_fixed_point(model, x0, scope="model",
                        plan=har_plan(to_fixed_point(model, x0, scope="model"), 16, HAR))
    rep = wm.report({"x": xs}, labels=labels)
    correct, total, _ = accuracy(load_har(HAR, 16), "library", HAR)
    assert rep["samples"] == total == len(labels)
    assert rep["accuracy"]["fixed"] == correct / total
    conf = np.array(rep["confusion"])
    assert conf.sum() == total and np.trace(conf) == correct
    assert 0.0 <= rep["accuracy"]["float"] <= 1.0 and 0.0 <= rep["agreement"] <= 1.0
    assert [row["tensor"] for row in rep["layers"]][-1] == "fc4/add:0"
    monkeypatch.setenv("MLI_JOBS_PROCESSES", "1")
    rep2 = wm.report({"x": xs}, labels=labels, jobs=2)
    assert rep2["confusion"] == rep["confusion"] and rep2["accuracy"] == rep["accuracy"]
    assert [r["saturated"] for r in rep2["layers"]] == [r["saturated"] for r in rep["layers"]]
    with pytest.raises(ValueError, match="labels: 3 labels for 30 samples"):
        wm.report({"x": xs}, labels=labels[:3])
    with pytest.raises(ValueError, match="dataset: 'y' is not a model input"):
        wm.report({"y": xs}, labels=labels)


def test_lstm_goldens_hold_every_steps_h_and_c(tmp_path):
    """HAR's LSTM layer 2, the example's formats: the traced c at every step, re-run one
    step at a time, continues into the next step's h as mli's lstm_cell one-to-one does,
    and its h per step are the layer's batch-to-batch output (mli har's lstm2)."""
    import mli
    from mli.tools.har import load_har, quantize_input, run_har
    write_har_ir(tmp_path / "har.xml", 16, HAR)
    model = read_model(tmp_path / "har.xml")
    x = np.random.default_rng(9).uniform(-1, 1, (128, 9)).astype(np.float32)
    xq = quantize_input(x, 16)
    xe = (xq.numpy().astype(np.float32) * np.float32(2.0 ** -13))[None]
    wm = to_fixed_point(model, {"x": xe}, scope="model",
                        plan=har_plan(to_fixed_point(model, {"x": xe}, scope="model"), 16, HAR))
    _, tr = wm.run({"x": xe}, trace=True)
    hm = load_har(HAR, 16)
    ref = run_har(xq, 16, "library", model=hm)
    c_steps = tr["lstm2:c_steps"]
    assert c_steps.shape == (1, 1, 128, 32) and c_steps.dtype == np.int16
    f = hm.frac
    cfg = mli.RnnCellConfig(mode=mli.RnnMode.ONE_TO_ONE, act=mli.RnnActivation.TANH)
    for t in (0, 1, 64, 127):
        prev_c = c_steps[0, 0, t - 1] if t else np.zeros(32, np.int16)
        prev_h = ref["lstm2"].numpy()[t - 1] if t else np.zeros(32, np.int16)
        c = mli.Tensor(prev_c.copy(), f["LSTM2_CELL"])
        h = mli.Tensor(prev_h.copy(), 15)
        y, c_out = mli.lstm_cell(mli.Tensor(ref["relu1"].numpy()[t].copy(), f["FC1_OUT"]), h,
                                 hm.coef["L2_lstm_wt"], hm.coef["L2_lstm_bias"], cfg, c)
        assert np.array_equal(y.numpy(), ref["lstm2"].numpy()[t])
        assert np.array_equal(np.asarray(c_out.numpy()), c_steps[0, 0, t])
