"""mli crosscheck: case files, one-kernel flags, --har, data sets, rounding
diagnosis, exit codes, --json, --plot."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mli
from mli.tools.crosscheck import CaseError, crosscheck, main, run_case
from mli.io import write_idx
from mli.io.npz import write_npz
from mli.io.raw import write_raw

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MLI_SHARED") or ROOT.parent / "shared")
HAR = SHARED / "data" / "har"
needs_har = pytest.mark.skipif(not HAR.is_dir(), reason=f"HAR data not found at {HAR} (set MLI_SHARED)")

try:
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------- a synthetic fc -> relu -> lstm chain
T, N, H, M = 24, 5, 8, 6


def make_chain(tmp_path, kind="fx16", seed=3):
    """Float weights in an .npz, a float input in IDX, and a case file whose
    firmware dumps are (initially) the package's own outputs."""
    rng = np.random.default_rng(seed)
    w = {"fc_w": rng.uniform(-0.9, 0.9, (H, N)), "fc_b": rng.uniform(-0.5, 0.5, H),
         "l_w": rng.uniform(-0.9, 0.9, (4, M, H + M)), "l_b": rng.uniform(-0.9, 0.9, (4, M))}
    write_npz(tmp_path / "w.npz", w)
    x = rng.uniform(-1.8, 1.8, (T, N)).astype(np.float32)
    write_idx(tmp_path / "x.idx", x)
    d = 7 if kind == "fx8" else 15
    case = {
        "kind": kind, "input": "x.idx", "input_frac": d - 2,
        "layers": [
            {"name": "fc1", "kernel": "fully_connected", "weights": "w.npz:fc_w", "weights_frac": d - 1,
             "bias": "w.npz:fc_b", "bias_frac": d - 1, "out_frac": d - 3, "firmware": "fw/fc1.npy"},
            {"name": "relu1", "kernel": "relu", "firmware": "fw/relu1.idx"},
            {"name": "lstm2", "kernel": "lstm_cell", "mode": "batch_to_batch", "act": "tanh",
             "weights": "w.npz:l_w", "weights_frac": d, "bias": "w.npz:l_b", "bias_frac": d - 1,
             "prev_out": "zeros", "prev_out_frac": d, "cell": "zeros", "cell_frac": d - 4,
             "firmware": "fw/lstm2.bin", "firmware_cell": "fw/cell2.npy"},
        ],
    }
    (tmp_path / "fw").mkdir(exist_ok=True)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    return path, case


def write_dumps(tmp_path, outs):
    np.save(tmp_path / "fw" / "fc1.npy", outs["fc1"].numpy())
    write_idx(tmp_path / "fw" / "relu1.idx", outs["relu1"].numpy())
    write_raw(tmp_path / "fw" / "lstm2.bin", outs["lstm2"].numpy())       # little-endian, no header
    np.save(tmp_path / "fw" / "cell2.npy", outs["lstm2.cell"].numpy())


@pytest.mark.parametrize("kind", ["fx16", "fx8", "fx8w16d"])
def test_chain_bit_exact(tmp_path, capsys, kind):
    path, _ = make_chain(tmp_path, kind)
    outs = run_case(path)
    assert outs["lstm2"].shape == (T, M)
    write_dumps(tmp_path, outs)
    res = crosscheck(path)
    assert res.bit_exact and [r.name for r in res.layers] == ["fc1", "relu1", "lstm2", "lstm2.cell"]
    code, out, err = run_cli(capsys, path)
    assert code == 0 and err == ""
    assert out.strip().splitlines()[-1].startswith("bit-exact (4 outputs")


def test_chain_one_lsb_names_step_and_unit(tmp_path, capsys):
    path, _ = make_chain(tmp_path)
    outs = run_case(path)
    outs["lstm2"].numpy()[13, 4] += 1          # one LSB at step 13, unit 4
    write_dumps(tmp_path, outs)
    res = crosscheck(path)
    assert not res.bit_exact and res.first_mismatch.name == "lstm2"
    rep = res.first_mismatch.report
    assert (rep.n_diff, rep.first_step, rep.first_unit, rep.max_abs_diff) == (1, 13, 4, 1)
    assert rep.per_step_diff[13] == 1 and sum(rep.per_step_diff) == 1
    code, out, _ = run_cli(capsys, path)
    assert code == 1
    assert "first in lstm2 (lstm_cell_fx16) at step 13, unit 4" in out
    assert "not explained by the rounding mode" in out


def test_isolate_feeds_firmware_outputs(tmp_path):
    path, _ = make_chain(tmp_path)
    outs = run_case(path)
    bad_relu = outs["relu1"].numpy()
    bad_relu[5, 2] = bad_relu[5, 2] + 40         # relu differs ...
    write_dumps(tmp_path, outs)                  # ... and lstm2 was computed from the good relu
    chained = crosscheck(path)
    assert chained.first_mismatch.name == "relu1"
    isolated = crosscheck(path, isolate=True)
    # fed the firmware's own relu output, lstm2 now differs from the firmware dump from step 5 on
    names = [r.name for r in isolated.layers if not r.bit_exact]
    assert names[0] == "relu1" and "lstm2" in names
    assert isolated.layers[2].report.first_step == 5


def test_rounding_mode_only_difference_is_diagnosed(tmp_path, capsys):
    path, _ = make_chain(tmp_path)
    ties = None
    for seed in range(3, 40):      # a chain where convergent and up differ somewhere
        path, _ = make_chain(tmp_path, seed=seed)
        conv = run_case(path)
        up = run_case(path, rounding="up")
        if any(not np.array_equal(conv[k].numpy(), up[k].numpy()) for k in conv):
            ties = up
            break
    assert ties is not None, "no seed with a rounding tie"
    write_dumps(tmp_path, ties)
    res = crosscheck(path)
    assert not res.bit_exact and res.alt_bit_exact and res.alt_rounding == "up"
    code, out, _ = run_cli(capsys, path)
    assert code == 1 and "bit-exact with rounding 'up'" in out and "DSP rounding mode is 'up'" in out
    code, out, _ = run_cli(capsys, path, "--rounding", "up")
    assert code == 0
    code, out, _ = run_cli(capsys, path, "--json")
    d = json.loads(out)
    assert code == 1 and d["bit_exact"] is False and d["alt_bit_exact"] is True
    code, out, _ = run_cli(capsys, path, "--no-alt-rounding")
    assert code == 1 and "rounding 'up'" not in out


def test_json_output(tmp_path, capsys):
    path, _ = make_chain(tmp_path)
    outs = run_case(path)
    outs["fc1"].numpy()[2, 7] -= 3
    write_dumps(tmp_path, outs)
    code, out, err = run_cli(capsys, path, "--json")
    assert code == 1 and err == ""
    d = json.loads(out)
    assert d["first_mismatch"] == "fc1" and d["rounding"] == "convergent" and d["alt_rounding"] == "up"
    fc1 = d["layers"][0]
    assert fc1["report"]["first_step"] == 2 and fc1["report"]["first_unit"] == 7
    assert fc1["report"]["histogram"] == {"-3": 1} and fc1["report"]["max_abs_diff"] == 3
    assert fc1["report"]["per_step_diff"][2] == 1


def test_toml_case(tmp_path, capsys):
    pytest.importorskip("tomllib")
    path, case = make_chain(tmp_path)
    write_dumps(tmp_path, run_case(path))
    lay = case["layers"][2]
    text = ['kind = "fx16"', 'input = "x.idx"', f'input_frac = {case["input_frac"]}']
    for layer in case["layers"]:
        text.append("[[layers]]")
        text += [f"{k} = {json.dumps(v)}" for k, v in layer.items()]
    (tmp_path / "case.toml").write_text("\n".join(text) + "\n")
    assert lay["name"] == "lstm2"
    code, out, _ = run_cli(capsys, tmp_path / "case.toml")
    assert code == 0, out


# --------------------------------------------------------------- one kernel by flags
def test_single_kernel_flags(tmp_path, capsys):
    rng = np.random.default_rng(7)
    x = rng.integers(-2000, 2000, (6, 10)).astype(np.int16)
    w = rng.integers(-20000, 20000, (3, 10)).astype(np.int16)
    b = rng.integers(-2000, 2000, 3).astype(np.int16)
    np.save(tmp_path / "x.npy", x)
    write_npz(tmp_path / "wb.npz", {"w": w, "b": b}, frac_bits={"w": 15, "b": 14})
    y = np.stack([mli.fully_connected_fx16(mli.Tensor(r, 12), mli.Tensor(w, 15), mli.Tensor(b, 14),
                                           out_frac_bits=11).numpy() for r in x])
    y[4, 1] += 1
    write_raw(tmp_path / "y.bin", y, endian="big")
    code, out, _ = run_cli(capsys, "--kernel", "fully_connected_fx16", "--in", tmp_path / "x.npy", "--in-frac", 12,
                           "--weights", f"{tmp_path}/wb.npz:w", "--bias", f"{tmp_path}/wb.npz:b", "--out-frac", 11,
                           "--firmware", f"{tmp_path}/y.bin,endian=big")
    assert code == 1 and "step 4, unit 1" in out


def test_single_kernel_eltwise_and_rnn(tmp_path, capsys):
    rng = np.random.default_rng(8)
    a = rng.integers(-100, 100, 16).astype(np.int8)
    c = rng.integers(-100, 100, 16).astype(np.int8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "c.npy", c)
    s = mli.eltwise_add_fx8(mli.Tensor(a, 4), mli.Tensor(c, 4)).numpy()
    np.save(tmp_path / "s.npy", s)
    code, out, _ = run_cli(capsys, "--kernel", "eltwise_add_fx8", "--in", tmp_path / "a.npy", "--in-frac", 4,
                           "--in2", tmp_path / "c.npy", "--in2-frac", 4, "--firmware", tmp_path / "s.npy")
    assert code == 0, out
    # basic RNN, one-to-one, act none
    x = rng.integers(-3000, 3000, 4).astype(np.int16)
    w = rng.integers(-3000, 3000, (3, 7)).astype(np.int16)
    bias = rng.integers(-300, 300, 3).astype(np.int16)
    for n, v in (("x", x), ("w", w), ("b", bias)):
        np.save(tmp_path / f"{n}.npy", v)
    ref = mli.basic_rnn_cell_fx16(mli.Tensor(x, 12), mli.Tensor(np.zeros(3, np.int16), 10), mli.Tensor(w, 14),
                                  mli.Tensor(bias, 14), mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE,
                                                                         act=mli.RNN_ACT_NONE),
                                  out_frac_bits=10).numpy()
    np.save(tmp_path / "r.npy", ref)
    code, out, _ = run_cli(capsys, "--kernel", "basic_rnn_cell", "--kind", "fx16", "--mode", "one_to_one",
                           "--act", "none", "--in", tmp_path / "x.npy", "--in-frac", 12, "--weights",
                           tmp_path / "w.npy", "--weights-frac", 14, "--bias", tmp_path / "b.npy", "--bias-frac",
                           14, "--prev-out-frac", 10, "--out-frac", 10, "--firmware", tmp_path / "r.npy")
    assert code == 0, out


# --------------------------------------------------------------------- errors
@pytest.mark.parametrize("mutate, match", [
    (lambda c: c["layers"][2].pop("cell_frac"), r"layer 'lstm2'\.cell_frac: frac bits are required"),
    (lambda c: c["layers"][2].update(mode="sideways"), "mode: unknown value 'sideways'"),
    (lambda c: c["layers"][2].update(weights="w.npz:fc_w"), r"weights: mli_krn_lstm_cell_fx16: weights\.rank"),
    (lambda c: c["layers"][0].update(weights="w.npz:nope"), "no array 'nope'"),
    (lambda c: c["layers"][0].update(weights="missing.npz:a"), "no such file"),
    (lambda c: c["layers"][1].update(kernel="conv3d"), "unknown kernel 'conv3d'"),
    (lambda c: c["layers"][1].update(colour="red"), "unknown key"),
    (lambda c: c.update(rounding="down"), "rounding: expected convergent or up"),
    (lambda c: c["layers"][0].update(firmware="fw/none.npy"), "firmware: .*no such file"),
    (lambda c: c["layers"][2].update(firmware="fw/fc1.npy"), r"lstm2'\.firmware: shape \(24, 8\) .* does not match the package output \(24, 6\)"),
    (lambda c: c["layers"][2].update(input="@nothing"), "names no earlier layer"),
    (lambda c: c["layers"][0].update(weights_frac=300), "frac bits 0..255"),
])
def test_bad_case_exit_2_one_line(tmp_path, capsys, mutate, match):
    path, case = make_chain(tmp_path)
    write_dumps(tmp_path, run_case(path))
    bad = json.loads(json.dumps(case))
    mutate(bad)
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    code, out, err = run_cli(capsys, tmp_path / "bad.json")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("mli crosscheck: error: ")
    import re
    assert re.search(match, err), err
    with pytest.raises(CaseError):
        crosscheck(tmp_path / "bad.json")


@pytest.mark.parametrize("argv, match", [
    ([], "give a case file"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--kernel", "lstm_cell_fx16"], "--weights: required by lstm_cell_fx16"),
    (["--kernel", "relu_fx16"], "--in: the first layer needs an input file"),
    (["--kernel", "relu", "--in", "x.npy", "--in-frac", "3"], "no layer names a firmware output"),
    (["--kernel", "relu_fx8w16d", "--in", "x"], "has no fx8w16d variant"),
    (["nonexistent.json"], "cannot read the case file"),
    (["--har", "/nonexistent", "--weights", "w.npz"], "--weights: does not apply with --har"),
    (["--time-axis", "sideways", "--kernel", "relu"], "--time-axis"),
])
def test_usage_errors(tmp_path, capsys, argv, match):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and match in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_bad_json_and_unreadable_firmware(tmp_path, capsys):
    (tmp_path / "c.json").write_text("{not json")
    code, _, err = run_cli(capsys, tmp_path / "c.json")
    assert code == 2 and "not valid JSON" in err
    path, _ = make_chain(tmp_path)
    write_dumps(tmp_path, run_case(path))
    (tmp_path / "fw" / "fc1.npy").write_bytes(b"garbage")
    code, _, err = run_cli(capsys, path)
    assert code == 2 and "fc1.npy" in err and "firmware" in err


@pytest.mark.skipif(HAVE_MPL, reason="matplotlib is installed: the no-matplotlib path cannot be shown")
def test_plot_without_matplotlib_exits_2(tmp_path, capsys):
    path, _ = make_chain(tmp_path)
    code, out, err = run_cli(capsys, path, "--plot", tmp_path / "p.png")
    assert code == 2 and "--plot: needs matplotlib" in err and out == ""


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib is not installed (optional)")
def test_plot_writes_png(tmp_path, capsys):
    path, _ = make_chain(tmp_path)
    outs = run_case(path)
    outs["lstm2"].numpy()[3, 1] += 2
    write_dumps(tmp_path, outs)
    code, _, _ = run_cli(capsys, path, "--plot", tmp_path / "p.png")
    assert code == 1 and (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_python_m_mli_no_traceback(tmp_path):
    import mli

    # the mli the tests import (in-place build or installed), not necessarily the source tree
    where = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))
    env = dict(os.environ, PYTHONPATH=where + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "mli", "crosscheck", "--kernel", "lstm_cell_fx16", "--in",
                        str(tmp_path / "none.idx"), "--in-frac", "3", "--weights", "w", "--bias", "b",
                        "--cell-frac", "3", "--firmware", "f.npy"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


# ------------------------------------------------------------------- data sets
@pytest.mark.parametrize("jobs", ["1", "2"])    # --jobs 2: the same lines, in the same order
def test_dataset_folder_of_inputs(tmp_path, capsys, jobs):
    rng = np.random.default_rng(11)
    (tmp_path / "in").mkdir()
    (tmp_path / "fw").mkdir()
    w = rng.integers(-100, 100, (4, 6)).astype(np.int8)
    b = rng.integers(-50, 50, 4).astype(np.int8)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "b.npy", b)
    for i in range(5):
        x = rng.integers(-100, 100, 6).astype(np.int8)
        np.save(tmp_path / "in" / f"v{i:02d}.npy", x)
        y = mli.fully_connected_fx8(mli.Tensor(x, 5), mli.Tensor(w, 7), mli.Tensor(b, 6), out_frac_bits=4).numpy()
        if i == 3:
            y = y.copy()
            y[2] += 1
        np.save(tmp_path / "fw" / f"v{i:02d}.npy", y)
    argv = ["--kernel", "fully_connected_fx8", "--in", tmp_path / "in", "--in-frac", 5, "--weights",
            tmp_path / "w.npy", "--weights-frac", 7, "--bias", tmp_path / "b.npy", "--bias-frac", 6, "--out-frac", 4,
            "--firmware", tmp_path / "fw", "--jobs", jobs]
    code, out, err = run_cli(capsys, *argv)
    lines = out.strip().splitlines()
    assert code == 1 and len(lines) == 6, out
    assert lines[3].startswith("vector v03.npy: MISMATCH fully_connected: 1/4 differ, first at element 2")
    assert lines[0] == "vector v00.npy: bit-exact (1 output)"
    assert lines[-1] == "5 vectors: 4 bit-exact, 1 mismatch"
    assert err == ""          # no progress bar: stderr is not a terminal
    code, out, _ = run_cli(capsys, *argv, "--json")
    d = json.loads(out)
    assert [v["bit_exact"] for v in d["vectors"]] == [True, True, True, False, True]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_dataset_idx_with_many_vectors(tmp_path, capsys, jobs):
    path, case = make_chain(tmp_path)
    rng = np.random.default_rng(5)
    xs = rng.uniform(-1.5, 1.5, (4, T, N)).astype(np.float32)
    write_idx(tmp_path / "xs.idx", xs)
    dumps = {"fc1": [], "relu1": [], "lstm2": [], "lstm2.cell": []}
    for x in xs:
        write_idx(tmp_path / "x.idx", x)
        o = run_case(path)
        for k in dumps:
            dumps[k].append(o[k].numpy())
    st = {k: np.stack(v) for k, v in dumps.items()}
    st["lstm2"][2, 9, 0] += 1
    np.save(tmp_path / "fw" / "fc1.npy", st["fc1"])
    write_idx(tmp_path / "fw" / "relu1.idx", st["relu1"])
    write_raw(tmp_path / "fw" / "lstm2.bin", st["lstm2"])
    np.save(tmp_path / "fw" / "cell2.npy", st["lstm2.cell"])
    case["input"] = "xs.idx"
    case["vectors"] = True
    (tmp_path / "ds.json").write_text(json.dumps(case))
    code, out, _ = run_cli(capsys, tmp_path / "ds.json", "--jobs", jobs)
    lines = out.strip().splitlines()
    assert code == 1 and len(lines) == 5
    assert lines[2].startswith("vector 2: MISMATCH lstm2: 1/") and "step 9, unit 0" in lines[2]
    assert lines[-1] == "4 vectors: 3 bit-exact, 1 mismatch"


# ------------------------------------------------------------------------ HAR
def _har_dumps(tmp_path, depth=16, perturb=None, mode="convergent", layer3="custom", ext="idx"):
    from mli.tools import har
    x, _ = har.load_reference(HAR)
    with mli.rounding(mode):
        res = har.run_har(har.quantize_input(x, depth), depth, layer3, data_dir=HAR)
    d = tmp_path / f"dump_{depth}_{mode}"
    d.mkdir(exist_ok=True)
    for k, v in res.items():
        a = v.numpy().copy()
        if perturb and k == perturb[0]:
            a[perturb[1:]] += 1
        if ext == "idx":
            write_idx(d / f"{k}.idx", a)
        else:
            write_raw(d / f"{k}.bin", a)
    return d


@needs_har
@pytest.mark.parametrize("depth, step, unit", [(16, 17, 4), (816, 0, 31), (8, 127, 0)])
def test_har_one_lsb_names_exactly_that_step_and_unit(tmp_path, capsys, depth, step, unit):
    d = _har_dumps(tmp_path, depth, ("lstm2", step, unit), ext="idx" if depth != 8 else "bin")
    code, out, _ = run_cli(capsys, "--har", d, "--depth", depth, "--data", HAR)
    assert code == 1
    assert f"MISMATCH: first in lstm2 (lstm_cell_{'fx8w16d' if depth == 816 else 'fx16' if depth == 16 else 'fx8'}" \
           f" batch-to-batch) at step {step}, unit {unit}" in out
    assert "1 of 4096 elements differ" in out and "not explained by the rounding mode" in out
    code, out, _ = run_cli(capsys, "--har", d, "--depth", depth, "--data", HAR, "--json")
    j = json.loads(out)
    lstm2 = next(lr for lr in j["layers"] if lr["name"] == "lstm2")
    assert (lstm2["report"]["first_step"], lstm2["report"]["first_unit"]) == (step, unit)
    assert [lr["bit_exact"] for lr in j["layers"]] == [True, True, False, True, True]


@needs_har
def test_har_bit_exact_and_float_reference(tmp_path, capsys):
    d = _har_dumps(tmp_path, 16)
    code, out, _ = run_cli(capsys, "--har", d, "--data", HAR)
    assert code == 0 and out.strip().splitlines()[-1].startswith("bit-exact (5 outputs")
    assert "vs float reference: firmware 65.2 dB, package 65.2 dB" in out     # the example's README figure


@needs_har
def test_har_rounding_up_firmware_is_diagnosed(tmp_path, capsys):
    d = _har_dumps(tmp_path, 16, mode="up")
    code, out, _ = run_cli(capsys, "--har", d, "--data", HAR)
    assert code == 1 and "bit-exact with rounding 'up'" in out
    code, out, _ = run_cli(capsys, "--har", d, "--data", HAR, "--rounding", "up")
    assert code == 0


@needs_har
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_har_dataset_stacked_dumps(tmp_path, capsys, jobs):
    from mli.tools import har
    from mli.io import read_idx
    tests = read_idx(HAR / "small_test_base" / "tests.idx")[:4]
    write_idx(tmp_path / "t.idx", tests)
    m = har.load_har(HAR, 8)
    outs = {k: np.stack([har.run_har(har.quantize_input(t, 8), 8, model=m)[k].numpy() for t in tests])
            for k in har.LAYERS}
    outs["out"][1, 5] -= 2
    (tmp_path / "fw").mkdir()
    for k, v in outs.items():
        np.save(tmp_path / "fw" / f"{k}.npy", v)
    code, out, _ = run_cli(capsys, "--har", tmp_path / "fw", "--depth", 8, "--data", HAR, "--in", tmp_path / "t.idx",
                           "--vectors", "--jobs", jobs)
    lines = out.strip().splitlines()
    assert code == 1 and len(lines) == 5
    assert lines[1].startswith("vector 1: MISMATCH out: 1/6 differ, first at element 5")
    assert lines[-1] == "4 vectors: 3 bit-exact, 1 mismatch"


@needs_har
def test_har_errors(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(capsys, "--har", tmp_path / "empty", "--data", HAR)
    assert code == 2 and "holds no dump named like a layer" in err
    code, _, err = run_cli(capsys, "--har", tmp_path / "empty", "--data", HAR, "--depth", 12)
    assert code == 2 and "depth" in err
    d = _har_dumps(tmp_path, 16)
    np.save(d / "out.npy", np.zeros(7, np.int16))
    os.remove(d / "out.idx")
    code, _, err = run_cli(capsys, "--har", d, "--data", HAR)
    assert code == 2 and "out" in err and "does not match" in err
