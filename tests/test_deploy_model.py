"""mli deploy MODEL.xml: an OpenVINO IR converted whole to MLI 1.1 fixed point
(``to_fixed_point(..., scope="model")``), lowered to MLI calls
(:mod:`mli.deploy.lower`) and written as firmware C.

* Every real-converter case (``ov_real``) of every kind lowers to a program
  whose integers equal the whole-model run's, tensor by tensor (body tensors
  iteration by iteration), or is refused naming the layer and the reason.
* ``make check`` prints ``bit-exact`` against the package's C core and against
  MLI 1.1's own code (``../shared/oracle_c``) for sequence ops, a CNN+LSTM,
  GRUs, an unrolled TensorIterator and a Keras while-loop.
* An arena dump with a planted one-LSB change is decoded through plan.json to
  the right tensor and element.
* Refusals (float_ops in the plan, sequence lengths given at run time) come
  before anything is written.
"""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import ASAN, SHARED, needs_build
from conftest import child_env, manifest_cases
from conftest import make_check as _make

OV, CASES = manifest_cases("ov_real", "the OpenVINO real-converter cases (ov_real)")
ORACLE = SHARED / "oracle_c" / "libmli11_conv.so"
# the only cases no kind lowers: their sequence lengths are a model input
SEQLENS = {"mo_onnx_lstm_seqlens__mo_newfe_fp32", "onnx_lstm_seqlens__onnx_fp16"}
# LowLatency2 variables (ReadValue/Assign) that the whole-model plan reads as constants
STATEFUL = "pt_lstm_uni_l1_bf__torch_static_ti_lowlatency2_fp32"
# early-exit and RNN ONNX Loops: ops with no MLI 1.1 kernel (refused by to_fixed_point already)
NO_KERNEL = {"mo_onnx_loop_early_exit__mo_legacy_fp32", "mo_onnx_loop_early_exit__mo_newfe_fp32",
             "mo_onnx_loop_rnn__mo_legacy_fp32", "mo_onnx_loop_rnn__mo_newfe_fp32"}


def _case(name):
    from mli.ir import read_model
    z = np.load(OV / f"{name}.npz")
    return read_model(OV / f"{name}.xml"), {k[4:]: z[k] for k in z.files if k.startswith("in__")}




@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """One folder for the C core's objects, shared by every check here."""
    return tmp_path_factory.mktemp("core_build")


@pytest.mark.parametrize("kind", ["fx16", "fx8w16d", "fx8"])
def test_every_ov_real_case_lowers_bit_exact_or_is_refused_by_name(kind):
    """lower() runs the program on the package's kernels and compares every
    tensor with wm.run(trace=True); here also the model outputs, once more."""
    if ASAN and kind != "fx16":
        pytest.skip("sanitizer pass: the fx16 sweep only (run time); the plain pass runs every kind")
    from mli.deploy.lower import lower
    from mli.deploy.program import DeployError
    from mli.fixed_point import FixedPointError, to_fixed_point
    from mli.fixed_point.formats import quantize
    refused, lowered = {}, 0
    for case in CASES:
        name = case["name"]
        model, inputs = _case(name)
        try:
            wm = to_fixed_point(model, inputs, kind, scope="model")
        except FixedPointError:
            assert name in NO_KERNEL
            continue
        try:
            lm = lower(wm, [inputs], name=name)
        except DeployError as e:
            refused[name] = str(e)
            continue
        lowered += 1
        out, trace = wm.run(inputs, trace=True)
        vals, _ = lm.program.run(lm.samples[0])
        for t, oname in lm.outputs.items():
            fmt = lm.program.tensors[t]
            # the model's output in its IR dtype: exact where that is f32 (f16 rounds Q15 values)
            if np.asarray(out[oname]).dtype == np.float32:
                want = quantize(out[oname], fmt.el, fmt.frac)
                np.testing.assert_array_equal(vals[t].reshape(-1), want.reshape(-1), err_msg=f"{name} {oname}")
    assert set(refused) == SEQLENS | {STATEFUL}, refused
    assert all("sequence lengths must be constants" in refused[n] for n in SEQLENS)
    assert "changes from run to run, but the whole-model plan reads it as a constant" in refused[STATEFUL]
    assert lowered == len(CASES) - len(SEQLENS) - len(NO_KERNEL) - 1


# sequence ops with glue, a CNN+LSTM with a softmax head, GRUs (lbr, bidirectional with a state input), a
# TensorIterator of LSTMCell with Select masks, a Keras while-loop of elementwise ops with ScatterUpdate,
# an unrolled export of RNN cells
MAKE_CASES = [("pt_kws_crnn__torch_onnx_fp16", "fx16"), ("mo_onnx_gru_bidir_state__mo_legacy_fp16", "fx8"),
              ("pt_kws_crnn__torch_static_ti_fp16", "fx8w16d"), ("keras_lstm_seq__keras_direct_fp32", "fx16"),
              ("onnx_gru_lbr1__onnx_fp16", "fx16"), ("pt_rnn_bi_l1_bf__torch_export_fp32", "fx8w16d"),
              ("pt_lstm_bi_l2_tf__torch_fp16", "fx8")]
if ASAN:        # the sanitizer pass: three of them (compiling every golden with ASan is slow)
    MAKE_CASES = MAKE_CASES[:3]


@needs_build
@pytest.mark.parametrize("name,kind", MAKE_CASES)
def test_make_check_ov_real(name, kind, tmp_path, build):
    import mli
    from mli.deploy import deploy_model
    d = tmp_path / "out"
    r = deploy_model(OV / f"{name}.xml", d, kind=kind)
    n = len(r["program"].steps)
    assert f"bit-exact (1 samples, {n} steps" in _make(d, f"BUILD={build}")
    if ORACLE.is_file():
        assert f"bit-exact (1 samples, {n} steps" in _make(d, f"MLI_INC={mli.get_include()}", f"MLI_LIB={ORACLE}",
                                                           f"BUILD={build}_oracle")
    model_c = (d / "model.c").read_text()
    assert "mlipy_" not in model_c and "malloc" not in model_c and "float" not in model_c


@needs_build
def test_data_set_calibration_gives_several_goldens_and_a_dump_decodes(tmp_path, build):
    """A data set (one more leading axis) as calibration: the first two
    sets are the goldens.  An arena dump after the LSTM's call, with one
    LSB planted in its output, is found at that tensor and element."""
    from mli.deploy import deploy_model
    from mli.tools.crosscheck import crosscheck_deploy
    name = "pt_kws_crnn__torch_onnx_fp16"
    _, inputs = _case(name)
    x = inputs["input.1"]
    cal = {"input.1": np.stack([x, 0.5 * x, -x])}
    d = tmp_path / "out"
    r = deploy_model(OV / f"{name}.xml", d, calibration=cal, samples=2)
    assert len(r["goldens"]) == 2
    assert "bit-exact (2 samples" in _make(d, f"BUILD={build}")
    prog = r["program"]
    k = next(i for i, s in enumerate(prog.steps) if s.func.startswith("mli_krn_lstm_cell"))
    y = prog.base(prog.steps[k].out)
    img = tmp_path / "arena.bin"
    run = subprocess.run([str(d / "check_core"), "--dump", str(img), "1", str(k)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout
    res = crosscheck_deploy(d, img, after=str(k), sample=1)
    assert res.bit_exact
    raw = bytearray(img.read_bytes())
    off = r["slots"][y].offset + 2 * 37             # int16 element 37
    raw[off] = (raw[off] + 1) & 0xFF if raw[off] != 0xFF else 0xFE
    bad = tmp_path / "planted.bin"
    bad.write_bytes(bytes(raw))
    res = crosscheck_deploy(d, bad, after=str(k), sample=1)
    fm = res.first_mismatch
    assert fm.name in (y, prog.steps[k].out) and fm.report.n_diff == 1 and fm.report.max_abs_diff == 1


@needs_build
def test_pools_concat_prelu_make_check(tmp_path, build):
    """A small NCHW model through MaxPool (padded), AvgPool, PRelu of one slope,
    a 10-input Concat and Maximum with a constant: the pools as the specialised
    functions MLI's dispatcher picks, bit-exact in C with the core and MLI's code."""
    import mli
    from mli.deploy import deploy_model
    from mli.fixed_point.examples import _IR, _out
    from mli.ir import read_model
    ir = _IR("small")
    x = ir.layer("x", "Parameter", [], [(1, 2, 6, 8)], {"shape": "1,2,6,8", "element_type": "f32"})
    pool = ir.layer("pool", "MaxPool", [_out(x, 0, (1, 2, 6, 8))], [(1, 2, 4, 4)],
                    {"kernel": "2,2", "strides": "2,2", "pads_begin": "1,0", "pads_end": "1,1",
                     "rounding_type": "floor", "auto_pad": "explicit"})
    avg = ir.layer("avg", "AvgPool", [_out(pool, 1, (1, 2, 4, 4))], [(1, 2, 4, 4)],
                   {"kernel": "3,3", "strides": "1,1", "pads_begin": "0,0", "pads_end": "0,0",
                    "rounding_type": "floor", "auto_pad": "same_upper", "exclude-pad": "true"})
    pr = ir.layer("prelu", "PRelu", [_out(avg, 1, (1, 2, 4, 4)), ir.const("slope", np.array([0.125], np.float32))],
                  [(1, 2, 4, 4)])
    cat = ir.layer("cat", "Concat", [_out(pr, 2, (1, 2, 4, 4))] * 10, [(1, 20, 4, 4)], {"axis": "1"})
    mx = ir.layer("max", "Maximum", [_out(cat, 10, (1, 20, 4, 4)),
                                     ir.const("floor", np.full((1, 20, 4, 4), -0.25, np.float32))], [(1, 20, 4, 4)])
    ir.layer("y", "Result", [_out(mx, 2, (1, 20, 4, 4))], [])
    ir.write(tmp_path / "small.xml")
    xs = {"x": np.random.default_rng(3).uniform(-1.5, 1.5, (4, 1, 2, 6, 8)).astype(np.float32)}
    for kind in ("fx16", "fx8"):
        d = tmp_path / kind
        r = deploy_model(read_model(tmp_path / "small.xml"), d, kind=kind, calibration=xs, samples=2)
        funcs = [s.func for s in r["program"].steps]
        assert funcs[0] == f"mli_krn_maxpool_chw_{kind}_k2x2" and f"mli_krn_leaky_relu_{kind}" in funcs
        assert any(f.startswith(f"mli_krn_avepool_chw_{kind}") for f in funcs)
        n = len(funcs)
        assert f"bit-exact (2 samples, {n} steps" in _make(d, f"BUILD={build}")
        if ORACLE.is_file():
            assert f"bit-exact (2 samples, {n} steps" in _make(d, f"MLI_INC={mli.get_include()}",
                                                               f"MLI_LIB={ORACLE}", f"BUILD={build}_oracle")


def test_stacked_outputs_are_written_in_place():
    """A TensorIterator's stacked output: each iteration's cell writes its h
    straight into its slot (fold_copies), no copy into the stack remains."""
    from mli.deploy.lower import lower
    from mli.fixed_point import to_fixed_point
    name = "pt_kws_crnn__torch_static_ti_fp16"
    model, inputs = _case(name)
    prog = lower(to_fixed_point(model, inputs, "fx16", scope="model"), [inputs]).program
    cells = [st for st in prog.steps if st.func.startswith("mli_krn_lstm_cell")]
    stack = {prog.base(st.out) for st in cells}
    assert len(cells) == 49 and len(stack) == 1         # every step's h: a slot of one stacked tensor
    copies_into = [st for st in prog.steps if st.func == "mli_hlp_convert_tensor" and prog.base(st.out) in stack]
    assert copies_into == []


def test_refusals_name_what_and_write_nothing(tmp_path):
    from mli.deploy import DeployError, deploy_model
    from mli.fixed_point import to_fixed_point
    d = tmp_path / "out"
    with pytest.raises(DeployError, match="sequence lengths must be constants equal to the sequence's 20 steps"):
        deploy_model(OV / "onnx_lstm_seqlens__onnx_fp16.xml", d)
    assert not d.exists()
    # a plan keeping two layers in float: both named, in one message
    name = "pt_kws_crnn__torch_onnx_fp16"
    model, inputs = _case(name)
    wm = to_fixed_point(model, inputs, "fx16", scope="model", float_ops=["/Relu", "/fc/Gemm/WithoutBiases"])
    plan = tmp_path / "plan.json"
    wm.plan.save(plan)
    with pytest.raises(DeployError, match=r"float \(float_ops\).*/Relu, /fc/Gemm/WithoutBiases"):
        deploy_model(OV / f"{name}.xml", d, plan=plan)
    assert not d.exists()
    with pytest.raises(DeployError, match="no in__<name> arrays|not among the model's inputs"):
        deploy_model(OV / f"{name}.xml", d, calibration={"nope": inputs["input.1"]})
    with pytest.raises(DeployError, match="samples: a positive int"):
        deploy_model(OV / f"{name}.xml", d, samples=0)
    assert not d.exists()


def test_cli_model(tmp_path):
    xml = OV / "onnx_gru_fwd__onnx_fp32.xml"
    d = tmp_path / "gru"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "mli", "deploy", *map(str, args)], capture_output=True,
                              text=True, env=child_env(), timeout=600, cwd=tmp_path)     # not the source tree
    r = cli(xml, "-o", d, "--kind", "fx8")
    assert r.returncode == 0, r.stderr
    assert "bit-exact with the fixed-point model on 1 golden sample(s)" in r.stdout and "RAM (arena)" in r.stdout
    plan = json.loads((d / "plan.json").read_text())
    assert plan["model"] == "onnx_gru_fwd__onnx_fp32" and plan["steps"]
    r = cli(xml, "-o", d)                       # not empty
    assert r.returncode == 2 and "is not empty" in r.stderr
    r = cli(xml, "--example", "kws", "-o", tmp_path / "x")
    assert r.returncode == 2 and "not both" in r.stderr
    r = cli(xml, "-o", tmp_path / "y", "--kind", "fx16", "--plan", tmp_path / "p.json")
    assert r.returncode == 2 and "one of --kind and --plan" in r.stderr
    r = cli(OV / "onnx_lstm_seqlens__onnx_fp16.xml", "-o", tmp_path / "z")
    assert r.returncode == 2 and "sequence lengths" in r.stderr and not (tmp_path / "z").exists()
    bad = tmp_path / "bad.xml"
    bad.write_text("<net><layers>")
    r = cli(bad, "-o", tmp_path / "v")
    assert r.returncode == 2 and r.stderr.count(str(bad)) == 1 and "malformed XML" in r.stderr
    r = cli(xml, "-o", tmp_path / "v", "--calibration", bad)
    assert r.returncode == 2 and "not a readable .npz" in r.stderr and not (tmp_path / "v").exists()
    cal = tmp_path / "cal.npz"
    z = np.load(OV / "onnx_gru_fwd__onnx_fp32.npz")
    np.savez(cal, in__X=np.stack([z["in__X"], z["in__X"][::-1]]))
    r = cli(xml, "-o", tmp_path / "w", "--calibration", cal, "--samples", "2")
    assert r.returncode == 0 and "on 2 golden sample(s)" in r.stdout, r.stderr
