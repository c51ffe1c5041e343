"""The MLI 1.1 HAR smartphone example end to end (mli/tools/har.py): the six
har_model vectors, the README figure, SPEC section 13, and the whole-sequence
forms the package uses in place of the example's per-step loops."""
import glob
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import mli
from mli.metrics import f32_ulps_apart
from mli.tools import har

SHARED = Path(os.environ.get("MLI_SHARED") or Path(__file__).resolve().parents[1].parent / "shared")
HAR = SHARED / "data" / "har"
MLI11 = SHARED / "vectors" / "mli11"
pytestmark = pytest.mark.skipif(not (HAR / "model.json").is_file() or not MLI11.is_dir(),
                                reason=f"HAR data / MLI 1.1 vectors not found under {SHARED} (set MLI_SHARED)")
KIND = {16: "fx16", 816: "fx8w16d", 8: "fx8"}

# SPEC.md section 13: (depth, layer 3) -> quality line, output integers (None: not stated)
SPEC_TABLE = {
    (16, "custom"): ("S/N=1823.9 (65.2 db)", [3289, 22476, -6835, -6376, -8794, -5650]),
    (16, "library"): ("S/N=1724.3 (64.7 db)", [3291, 22474, -6837, -6377, -8794, -5648]),
    (816, "custom"): ("S/N=56.3 (35.0 db)", [3026, 22729, -6567, -6462, -8794, -5775]),
    (816, "library"): ("S/N=56.5 (35.0 db)", None),
    (8, "custom"): ("S/N=33.2 (30.4 db)", [11, 89, -25, -26, -34, -23]),
    (8, "library"): ("S/N=30.0 (29.6 db)", None),
}


@pytest.fixture(scope="module")
def models():
    return {d: har.load_har(HAR, d) for d in har.DEPTHS}


@pytest.fixture(scope="module")
def ref():
    return har.load_reference(HAR)


def har_cases():
    return sorted(Path(p).stem for p in glob.glob(str(MLI11 / "*.npz")) if "_har_" in p)


@pytest.mark.parametrize("rounding", ["convergent", "up"])
@pytest.mark.parametrize("case", har_cases() or ["none"])
def test_har_vectors(case, rounding):
    from mli.tools.vectors import run_case

    r = run_case(str(MLI11 / f"{case}.npz"), rounding=rounding, har_data=str(HAR))
    assert r.passed, r.message


def test_six_har_vectors_exist():
    assert len(har_cases()) == 6


@pytest.mark.parametrize("case", har_cases() or ["none"])
def test_per_layer_against_vectors(case, models, ref):
    """Each layer, the input quantization and the float32 S/N, dB separately."""
    from mli.tools.vectors import load_case

    meta, a = load_case(str(MLI11 / f"{case}.npz"))
    depth = int(meta["kind"])
    x = har.quantize_input(ref[0], depth)
    np.testing.assert_array_equal(x.numpy(), a["input_fx"])
    res = har.run_har(x, depth, "library" if "layer3_library" in meta["tags"] else "custom", model=models[depth])
    for layer in har.LAYERS:
        want = a["expected_out_data" if layer == "out" else f"expected_{layer}"]
        np.testing.assert_array_equal(res[layer].numpy(), want, err_msg=layer)
    f = models[depth].frac
    assert [res[k].frac_bits for k in har.LAYERS] == [f["FC1_OUT"], f["FC1_OUT"], 15 if depth != 8 else 7,
                                                     15 if depth != 8 else 7, f["FC4_OUT"]]
    sn, db = har.sn_db(res["out"], None, ref[1])
    assert sn == np.float32(meta["expected_sn"])     # exact IEEE arithmetic
    # dB through log10f: within the vectors README's 2 float32 ulps
    assert f32_ulps_apart(db, meta["expected_db"]) <= har.DB_ULPS, (db, meta["expected_db"])


def test_default_command_prints_readme_figure(capsys):
    assert har.main(["--data", str(HAR)]) == 0
    out = capsys.readouterr().out
    assert "Result Quality: S/N=1823.9 (65.2 db)\n" in out
    assert "3289" in out and "22476" in out
    for fname in har.IR_FILES.values():
        assert fname in out


def test_c_style_format(models, ref):
    res = har.run_har(har.quantize_input(ref[0], 16), 16, model=models[16])
    assert har.format_sn(*har.sn_db(res["out"], None, ref[1]), c_style=True) == "S/N=1823.9     (65.2 db)"


@pytest.mark.parametrize("depth,layer3", list(SPEC_TABLE))
def test_spec_table(depth, layer3, models, ref, capsys):
    line, out = SPEC_TABLE[depth, layer3]
    res = har.run_har(har.quantize_input(ref[0], depth), depth, layer3, model=models[depth])
    assert har.format_sn(*har.sn_db(res["out"], None, ref[1])) == line
    if out is not None:
        assert res["out"].numpy().tolist() == out
    ok, n, _ = har.accuracy(models[depth], layer3)
    assert (ok, n) == (27, 30)


@pytest.mark.parametrize("layer3,line", [("custom", "S/N=35.3 (31.0 db)"), ("library", "S/N=40.6 (32.2 db)")])
def test_spec_half_up_8bit(layer3, line, models, ref):
    """SPEC 13: the 8-bit figure depends on the SHIFT-family tie rule."""
    with mli.rounding("up"):
        res = har.run_har(har.quantize_input(ref[0], 8), 8, layer3, model=models[8])
    assert har.format_sn(*har.sn_db(res["out"], None, ref[1])) == line


def test_accuracy_command(capsys):
    assert har.main(["--data", str(HAR), "--depth", "816", "--layer3", "library", "--accuracy"]) == 0
    out = capsys.readouterr().out
    assert "S/N=56.5 (35.0 db)" in out and "Accuracy: 27/30 = 90.0 %" in out


def test_per_layer_quality(models, ref):
    """Float-reference S/N per layer: the 16-bit build tracks the float model
    closely at every layer, the 8-bit build coarsely, and the last entry is
    the output figure (against ir_fc4 instead of out_scores_300)."""
    q = {}
    for d in (16, 8):
        q[d] = har.layer_quality(har.run_har(har.quantize_input(ref[0], d), d, model=models[d]), HAR)
        assert all(q[d][k][0] > (500 if d == 16 else 10) for k in har.LAYERS), q[d]
    assert all(q[16][k][0] > 20 * q[8][k][0] for k in har.LAYERS)
    assert har.format_sn(*q[16]["out"]).startswith("S/N=1823.")


@pytest.mark.parametrize("rounding", ["convergent", "up"])
@pytest.mark.parametrize("depth", sorted(har.DEPTHS))
def test_fc1_whole_sequence_is_per_step(depth, rounding, models, ref):
    """The single batch-to-batch basic RNN call with zero recurrent weights
    equals the example's 128 FC calls on point_to_subtensor rows, and the
    slow numpy reference FC, on the built-in input and the whole test set."""
    from mli.reference.dense import fully_connected as slow_fc

    m = models[depth]
    c = m.coef
    seqs = [ref[0]] + list(mli.io.read_idx(HAR / "small_test_base" / "tests.idx"))
    with mli.rounding(rounding):
        for s in seqs:
            x = har.quantize_input(s, depth)
            whole = har.run_har(x, depth, "library", model=m)["fc1"]
            step = har.fc1_per_step(x, m)
            assert whole.frac_bits == step.frac_bits == m.frac["FC1_OUT"]
            np.testing.assert_array_equal(whole.numpy(), step.numpy())
    for t in (0, 63, 127):
        slow = slow_fc(KIND[depth], x.numpy()[t], x.frac_bits, c["L1_fc_wt"].numpy(), c["L1_fc_wt"].frac_bits,
                       c["L1_fc_bias"].numpy(), c["L1_fc_bias"].frac_bits, m.frac["FC1_OUT"], rounding)
        np.testing.assert_array_equal(step.numpy()[t], slow)


@pytest.mark.parametrize("depth", sorted(har.DEPTHS))
def test_lstm_step_structure(depth, models, ref):
    """HAR LSTM layer 2 on real data: stepping the cell one-to-one over time
    (state = previous output, cell carried) equals one batch-to-batch call;
    batch-to-last equals its last row and leaves the same cell."""
    m = models[depth]
    x = har.run_har(har.quantize_input(ref[0], depth), depth, model=m)["relu1"]
    w, b, f = m.coef["L2_lstm_wt"], m.coef["L2_lstm_bias"], m.frac
    fn = getattr(mli, f"lstm_cell_{KIND[depth]}")
    dt = x.dtype
    h0, c0 = mli.Tensor(np.zeros(32, dt), f["LSTM2_OUT"]), mli.Tensor(np.zeros(32, dt), f["LSTM2_CELL"])
    cfg = mli.RnnCellConfig
    batch, c_batch = fn(x, h0, w, b, cfg(mode=mli.RNN_BATCH_TO_BATCH, act=mli.RNN_ACT_TANH), c0)
    last, c_last = fn(x, h0, w, b, cfg(mode=mli.RNN_BATCH_TO_LAST, act=mli.RNN_ACT_TANH), c0)
    h, c, rows = h0, c0, []
    for t in range(x.shape[0]):
        h, c = fn(mli.point_to_subtensor(x, [t], 1), h, w, b, cfg(mode=mli.RNN_ONE_TO_ONE, act=mli.RNN_ACT_TANH), c)
        rows.append(h.numpy().copy())
    np.testing.assert_array_equal(np.stack(rows), batch.numpy())
    np.testing.assert_array_equal(last.numpy(), batch.numpy()[-1])
    np.testing.assert_array_equal(c.numpy(), c_batch.numpy())
    np.testing.assert_array_equal(c_last.numpy(), c_batch.numpy())
    assert batch.shape == (128, 32) and last.shape == (32,)


@pytest.mark.parametrize("depth", sorted(har.DEPTHS))
def test_coefficients_follow_qmn_rule(depth, models):
    """quantized_<depth>.npz = the README's compile-time QMN rule applied to coefficients.npz."""
    with np.load(HAR / "coefficients.npz") as z:
        for name, (_, fkey) in har.COEFFICIENTS.items():
            t = models[depth].coef[name]
            info = np.iinfo(t.dtype)
            v = z[name] * 2.0 ** models[depth].frac[fkey]
            v = np.clip(v + np.where(z[name] >= 0, 0.5, -0.5), info.min, info.max)
            np.testing.assert_array_equal(t.numpy(), np.trunc(v).astype(t.dtype), err_msg=name)


def test_missing_data_folder(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        har.load_har(missing)
    assert har.main(["--data", str(missing)]) == 2
    assert "HAR data folder not found" in capsys.readouterr().err


def test_malformed_data(tmp_path):
    shutil.copy(HAR / "model.json", tmp_path / "model.json")
    with pytest.raises(FileNotFoundError, match="quantized_16.npz"):
        har.load_har(tmp_path, 16)
    with np.load(HAR / "quantized_16.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["L2_lstm_wt"] = arrays["L2_lstm_wt"][:, :, :32]
    np.savez(tmp_path / "quantized_16.npz", **arrays)
    with pytest.raises(ValueError, match="L2_lstm_wt"):
        har.load_har(tmp_path, 16)
    (tmp_path / "model.json").write_text(json.dumps({"frac_bits": {}}))
    with pytest.raises(ValueError, match="model.json"):
        har.load_har(tmp_path, 16)
    with pytest.raises(ValueError, match="depth"):
        har.load_har(HAR, 12)


def test_bad_input_and_options(models, ref):
    with pytest.raises(ValueError, match="quantize_input"):
        har.run_har(har.quantize_input(ref[0], 8), 16, model=models[16])
    with pytest.raises(ValueError, match="layer3"):
        har.run_har(har.quantize_input(ref[0], 16), 16, "lstm", model=models[16])


def test_env_default(monkeypatch):
    monkeypatch.setenv("MLI_HAR_DATA", str(HAR))
    assert har.default_data_dir() == str(HAR)
    assert har.load_har(depth=8).data_dir == str(HAR)


def test_case_finds_data_beside_its_shared_tree(monkeypatch, tmp_path):
    # An installed package has no ../shared of its own: a har_model case must
    # find the data of the shared tree it sits in, whatever the cwd and env.
    from mli.tools.vectors import run_case
    monkeypatch.delenv("MLI_HAR_DATA", raising=False)
    monkeypatch.delenv("MLI_SHARED", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(har, "_candidate_dirs", lambda: iter([str(tmp_path / "nowhere")]))
    assert har.data_dir_for_case(MLI11 / "0628_har_d16_custom.npz") == os.path.normpath(HAR)
    r = run_case(str(MLI11 / "0632_har_d8_custom.npz"))
    assert r.passed, r.message


def test_default_search_order(monkeypatch, tmp_path):
    monkeypatch.delenv("MLI_HAR_DATA", raising=False)
    monkeypatch.delenv("MLI_SHARED", raising=False)
    a, b = tmp_path / "a", tmp_path / "b"
    b.mkdir()
    monkeypatch.setattr(har, "_candidate_dirs", lambda: iter([str(a), str(b)]))
    assert har.default_data_dir() == str(b)            # the first that exists
    b.rmdir()
    assert har.default_data_dir() == str(a)            # none: the first, for the error message
    with pytest.raises(FileNotFoundError, match="HAR data folder not found"):
        har.load_har(depth=16)
