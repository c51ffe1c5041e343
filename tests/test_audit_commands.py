"""Issue 20 (the outside audit's N27-N31): the commands answer hostile inputs
with one line (exit 2) or a failed case, never a traceback, and never
overwrite an input."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import mli
from conftest import CHILD_MEMORY_LIMIT, SHARED, cap_child_memory, child_env

LIMIT = CHILD_MEMORY_LIMIT
_env, _cap_memory = child_env, cap_child_memory


def run_mli(*argv, cwd=None, timeout=300):
    r = subprocess.run([sys.executable, "-m", "mli", *map(str, argv)], capture_output=True, text=True,
                       cwd=cwd or tempfile.gettempdir(), env=_env(), preexec_fn=_cap_memory, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


# ------------------------------------------------------------------ N27: --plot
def _tanh_files(tmp_path):
    np.arange(-8, 8, dtype=np.int16).tofile(tmp_path / "x.raw")
    np.arange(-8, 8, dtype=np.int16).tofile(tmp_path / "fw.raw")
    return ["--kernel", "tanh_fx16", "--in", "x.raw,dtype=int16", "--in-frac", "12", "--firmware", "fw.raw"]


@pytest.mark.parametrize("target,named", [("fw.raw", "fw.raw"), ("./x.raw", "x.raw (--in)"),
                                          ("link.raw", "fw.raw (--firmware)")])
def test_plot_refuses_to_overwrite_an_input(tmp_path, target, named):
    """Checked before matplotlib is imported (it need not be installed);
    compared as files (another spelling or a link counts)."""
    argv = _tanh_files(tmp_path)
    os.symlink(tmp_path / "fw.raw", tmp_path / "link.raw")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    rc, out, err = run_mli("crosscheck", *argv, "--plot", target, cwd=tmp_path)
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == [f"mli crosscheck: error: --plot: would overwrite the input {named}"]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_plot_refuses_a_file_of_a_case_and_an_input_folder(tmp_path):
    _tanh_files(tmp_path)
    case = {"kernel": "tanh_fx16", "input": "x.raw,dtype=int16", "input_frac": 12, "firmware": "fw.raw"}
    (tmp_path / "case.json").write_text(json.dumps(case))
    for target in ("fw.raw", "case.json"):
        rc, out, err = run_mli("crosscheck", "case.json", "--plot", target, cwd=tmp_path)
        assert rc == 2 and "--plot: would overwrite the input" in err and target in err, err
    (tmp_path / "vecs").mkdir()
    np.zeros((2, 4), np.int16).tofile(tmp_path / "vecs" / "v0.raw")
    rc, out, err = run_mli("crosscheck", "--kernel", "tanh_fx16", "--in", "vecs", "--in-frac", "12", "--firmware",
                           "fw.raw", "--plot", "vecs/v0.raw", cwd=tmp_path)
    assert rc == 2 and "--plot: would overwrite the input vecs/v0.raw" in err, err


# ------------------------------------------------------------- N28: fixed-point
def test_fixed_point_errors_are_one_line(tmp_path):
    rc, out, err = run_mli("fixed-point", tmp_path / "missing.xml")
    assert rc == 2 and err.strip().splitlines() == [
        f"mli fixed-point: error: {tmp_path / 'missing.xml'}: No such file or directory"]
    (tmp_path / "notxml.xml").write_text("root:x:0:0:root:/root:/bin/bash\n")
    rc, out, err = run_mli("fixed-point", tmp_path / "notxml.xml")
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"mli fixed-point: error: {tmp_path / 'notxml.xml'}: malformed XML"), err
    assert "Traceback" not in err


def test_fixed_point_model_errors_name_the_layer():
    xml = SHARED / "vectors" / "ov_real" / "onnx_gru_lbr1__onnx_fp16.xml"
    if not xml.is_file():
        pytest.skip(f"{xml} not found")
    rc, out, err = run_mli("fixed-point", xml, "--library", "mli2")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "GRUSequence" in err and "linear_before_reset" in err
    # an IR without recurrent ops
    xml = SHARED / "vectors" / "ov_ti_loop" / "loop_bool_scan.xml"
    if xml.is_file():
        rc, out, err = run_mli("fixed-point", xml)
        assert rc == 2 and err.startswith("mli fixed-point: error: ") and "no recurrent op" in err, err


# --------------------------------------------------------------- N29: vectors
def _tanh_case(folder, name, **meta_over):
    meta = dict(kernel="tanh", kind="fx16", expected_status=0, in_el_type=1, in_capacity=8, in_shape=[4, 0, 0, 0],
                in_rank=1, in_mem_stride=[0, 0, 0, 0], in_frac=12, out_el_type=1, out_capacity=8,
                out_shape=[4, 0, 0, 0], out_rank=1, out_mem_stride=[0, 0, 0, 0], out_frac=0)
    meta.update(meta_over)
    np.savez(folder / f"{name}.npz", meta_json=np.array(json.dumps(meta)), in_data=np.zeros(4, np.int16))


def test_vectors_capacity_above_the_limit_is_a_failed_case(tmp_path):
    _tanh_case(tmp_path, "0001_tanh_fx16", in_capacity=2 ** 32 - 1)
    _tanh_case(tmp_path, "0002_tanh_fx16")
    rc, out, err = run_mli("vectors", tmp_path)
    assert rc == 1, (out, err)
    lines = out.strip().splitlines()
    assert lines[0].startswith("FAIL 0001_tanh_fx16: cannot read case: in_capacity: 4294967295 bytes"), out
    assert lines[-1] == "1 passed, 1 failed" and "Traceback" not in err


def test_vectors_mli20_malformed_cases_fail_one_by_one(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"schema": "mli20"}))
    np.savez(tmp_path / "a_no_kernel.npz", meta_json=np.array(json.dumps({"schema": "mli20"})))
    (tmp_path / "b_not_a_zip.npz").write_text("not a zip file\n")
    np.savez(tmp_path / "c_huge.npz", meta_json=np.array(json.dumps(
        {"schema": "mli20", "kernel": "tanh", "kind": "fx16", "args": ["in", "out"], "expected_status": 0,
         "in_el_type": 1, "in_capacity": 2 ** 32 - 1})))
    rc, out, err = run_mli("vectors", tmp_path)
    assert rc == 1 and "Traceback" not in err, (out, err)
    lines = out.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines[:3]] == ["FAIL a_no_kernel", "FAIL b_not_a_zip", "FAIL c_huge"], out
    assert all("cannot read case" in ln for ln in lines[:3]), out
    assert "in_capacity" in lines[2]
    assert lines[-1] == "0 passed, 3 failed"


# -------------------------------------------------------------- N30: export-c --mli 2
def _coefs(tmp_path):
    np.savez(tmp_path / "coefs.npz", w=np.random.default_rng(0).normal(0, .3, (4, 3, 5)).astype("f4"))


def test_export_c_mli2_refuses_saturation_as_the_11_export(tmp_path):
    _coefs(tmp_path)
    msg = "w: 38 value(s) saturated at 10 frac bits in fx8 (lower the frac bits, or --allow-saturation)"
    for mli_flag in ([], ["--mli", "2"]):
        rc, out, err = run_mli("export-c", *mli_flag, "coefs.npz:w", "-o", "m", "--type", "fx8", "--frac-all", 10,
                               cwd=tmp_path)
        assert rc == 2 and err.strip() == f"mli export-c: error: {msg}", err
    assert not (tmp_path / "m.c").exists()
    rc, out, err = run_mli("export-c", "--mli", "2", "coefs.npz:w", "-o", "m", "--type", "sa8", "--sa", "w=0,1,20",
                           cwd=tmp_path)
    assert rc == 2 and "w: 60 value(s) saturated" in err and "--allow-saturation" in err, err
    rc, out, err = run_mli("export-c", "--mli", "2", "coefs.npz:w", "-o", "m", "--type", "fx8", "--frac-all", 10,
                           "--allow-saturation", cwd=tmp_path)
    assert rc == 0 and "warning: w: 38 value(s) saturated" in err and (tmp_path / "m.c").exists()


@pytest.mark.parametrize("sa,ok", [("w=500,16384,20", False), ("w=-129,16384,20", False), ("w=127,16384,22", True),
                                   ("w=0,16384,20", True)])
def test_export_c_mli2_zero_points_as_mli_checks_them(tmp_path, sa, ok):
    _coefs(tmp_path)
    rc, out, err = run_mli("export-c", "--mli", "2", "coefs.npz:w", "-o", "m", "--type", "sa8", "--sa", sa,
                           "--allow-saturation", cwd=tmp_path)
    if ok:
        assert rc == 0, err
    else:
        assert rc == 2 and "zero point" in err and "refused by MLI 2.0.2" in err, err
    from mli.tools.export_c import ExportError
    from mli.tools.export_c2 import make_tensor2
    with pytest.raises(ExportError, match="zero point 3"):
        make_tensor2("b", np.zeros(4, np.int32), el_type="sa32", sa=(3, 1, 0))


def test_export_c_buffers_beyond_a_capacity_are_refused(tmp_path):
    _coefs(tmp_path)
    for extra in (["--buffer", "h,shape=100000x100000"], ["--rnn-cfg", "c,ir=4000000000"],
                  ["--mli", "2", "--rnn-cfg", "c,scratch=40000000000"]):
        rc, out, err = run_mli("export-c", "coefs.npz:w", "-o", "m", "--frac-all", 8, *extra, cwd=tmp_path)
        assert rc == 2 and "more than an MLI capacity" in err and "MemoryError" not in err, err


# ------------------------------------------------------------ N31: --sa-dim of a cell
def test_crosscheck_sa_dim_of_lstm_weights(tmp_path):
    r = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", r.normal(0, .5, (5, 3)).astype("f4"))
    np.save(tmp_path / "wi.npy", r.normal(0, .3, (4, 3, 4)).astype("f4"))
    np.save(tmp_path / "wo.npy", r.normal(0, .3, (4, 4, 4)).astype("f4"))
    np.save(tmp_path / "b.npy", r.normal(0, .1, (4, 4)).astype("f4"))
    np.save(tmp_path / "fw.npy", r.integers(-20, 20, (5, 4)).astype("i1"))
    argv = ["crosscheck", "--kernel", "lstm_cell_sa8", "--in", "x.npy", "--weights-in", "wi.npy", "--weights-out",
            "wo.npy", "--bias", "b.npy", "--firmware", "fw.npy", "--sa", "prev_out=0,16384,21", "--sa",
            "cell=0,16384,19", "--sa", "out=0,16384,21"]
    rc, out, err = run_mli(*argv, "--sa-dim", "weights_in=1", cwd=tmp_path)
    assert rc == 2 and err.strip() == ("mli crosscheck: error: --sa-dim weights_in=1: the LSTM's weights are "
                                       "quantized per gate (dim 0); MLI 2.0.2 refuses any other dimension"), err
    rc, out, err = run_mli(*argv, "--sa-dim", "weights_in=0", "--sa-dim", "weights_out=0", cwd=tmp_path)
    assert rc in (0, 1) and "error" not in err, err
