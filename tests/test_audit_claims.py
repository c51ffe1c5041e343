"""Issue 19 (items 2 and 3) and issue 20 (the outside audit's N27-N32): shapes
that tensors merely claim never size an allocation before the C checker has
seen them, mli.prepare checks its arguments when it binds them, and the
commands answer hostile inputs with one line instead of a traceback or an
overwritten input."""
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import mli
from mli import v2
from conftest import CHILD_MEMORY_LIMIT, cap_child_memory, child_env

LIMIT = CHILD_MEMORY_LIMIT
_env, _cap_memory = child_env, cap_child_memory


def run_py(code, timeout=300):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       cwd=tempfile.gettempdir(), env=_env(), preexec_fn=_cap_memory, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


# ------------------------------------------------------- issue 19 item 2: convert_tensor
def test_convert_tensor_allocates_what_mli_checks_need():
    """A non-fx input of capacity 0: MLI 1.1 answers OK (it converts nothing),
    given an int8 out of the 3 bytes the shape asks for (see also
    test_oracle_mli11.py, against MLI's own library)."""
    t = mli.Tensor.raw(bytearray(6), shape=(1, 1, 1, 3), el_type=4, frac_bits=1, capacity=0)
    out = mli.convert_tensor(t, 0, 5)
    assert out.shape == (1, 1, 1, 3) and out.frac_bits == 5 and out.el_type == mli.EL_FX_8
    assert out.capacity == 3


def test_convert_tensor_claims_end_in_the_checkers_error():
    # an fx input whose shape its capacity does not hold: CHK_TENSOR(in), nothing large allocated
    t = mli.Tensor.raw(np.zeros(4, np.int16), shape=(65535, 65535), el_type=mli.EL_FX_16, frac_bits=3)
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        mli.convert_tensor(t, "fx16", 3)
    assert e.value.argument == "in" and e.value.field == "capacity"
    # data NULL with a claimed capacity: the safety refusal C gives once out is large enough
    t = mli.Tensor.raw(data_null=True, capacity=2 ** 32 - 2, shape=(65535, 32767), el_type=mli.EL_FX_16)
    with pytest.raises(mli.MliBadTensorError) as e:
        mli.convert_tensor(t, "fx8", 0)
    assert e.value.argument == "in" and e.value.field == "data" and e.value.mlipy_safety
    # a result no capacity can hold: out's capacity, as MLI's check says
    t = mli.Tensor.raw(bytearray(4), capacity=0, shape=(65535, 65535), el_type=4)
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        mli.convert_tensor(t, "fx16", 0)
    assert e.value.argument == "out"
    # a non-fx input (MLI converts nothing) whose shape asks for more than the size limit
    t = mli.Tensor.raw(bytearray(4), capacity=0, shape=(65535, 65535), el_type=4)
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        mli.convert_tensor(t, "fx8", 0)
    assert e.value.argument == "in" and e.value.mlipy_safety


# ----------------------------------------------------- issue 19 item 3: mli.prepare
def _lstm_args(M=4, N=3):
    x = mli.Tensor(np.zeros(N, np.int16), 12)
    w = mli.Tensor(np.zeros((4, M, N + M), np.int16), 12)
    b = mli.Tensor(np.zeros((4, M), np.int16), 12)
    c = mli.Tensor(np.zeros(M, np.int16), 12)
    out = mli.Tensor(np.zeros(M, np.int16), 12)
    return x, w, b, c, out


def test_prepare_runs_the_c_checker_before_any_handle():
    x, w, b, c, out = _lstm_args()
    h_bad = mli.Tensor.raw(np.zeros(4, np.int16), shape=(2 ** 32 - 1,), el_type=mli.EL_FX_16, frac_bits=12)
    with pytest.raises(mli.MliNotEnoughMemError, match="prev_out.capacity is smaller than its shape needs") as e:
        mli.prepare(mli.lstm_cell_fx16, x, h_bad, w, b, mli.RnnCellConfig(), c, out=out)
    assert e.value.argument == "prev_out"
    # the same for a basic RNN, and for a check later in MLI's order (out too short)
    h = mli.Tensor(np.zeros(4, np.int16), 12)
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        mli.prepare(mli.lstm_cell_fx16, x, h, w, b, mli.RnnCellConfig(), c, out=mli.Tensor(np.zeros(2, np.int16)))
    assert e.value.argument == "out"
    rw = mli.Tensor(np.zeros((4, 7), np.int16), 12)
    rb = mli.Tensor(np.zeros(4, np.int16), 12)
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        mli.prepare(mli.basic_rnn_cell_fx16, x, h_bad, rw, rb, mli.RnnCellConfig(), out=out)
    assert e.value.argument == "prev_out"
    # good arguments still bind and run
    call = mli.prepare(mli.lstm_cell_fx16, x, h, w, b, mli.RnnCellConfig(), c, out=out)
    call()


# ------------------------------------------------- N32 and the audit: claimed shapes
_SETUP = """
import numpy as np, mli
from mli import v2
def fx(a, f=12):
    return mli.Tensor(np.asarray(a, np.int16), f)
def raw(n, shape):
    return mli.Tensor.raw(np.zeros(n, np.int16), shape=shape, el_type=mli.EL_FX_16, frac_bits=12)
B2B = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH)
w4, b4 = fx(np.zeros((4, 4, 5)), 14), fx(np.zeros((4, 4)), 14)
w1, b1 = fx(np.zeros((4, 5)), 14), fx(np.zeros(4), 14)
x_lie = raw(2, (1, 10 ** 9, 0))          # N32's input: rows of 10**9 steps of nothing
big_h = fx(np.zeros(30000))
x_wide = raw(30000, (60000, 0))          # a claimed batch: out would be 60000 * 30000 elements
h_lie = raw(4, (2 ** 32 - 1,))
"""

_CALLS = {
    "basic_rnn_cell_rows": ("mli.basic_rnn_cell_rows_fx16(x_lie, fx(np.zeros(4), 15), w1, b1, B2B)", "in"),
    "lstm_cell_rows": ("mli.lstm_cell_rows_fx16(x_lie, fx(np.zeros(4), 15), w4, b4, B2B, fx(np.zeros(4)))", "in"),
    "lstm_cell_rows prev_out": ("mli.lstm_cell_rows_fx16(fx(np.zeros((2, 1))), h_lie, w4, b4, mli.RnnCellConfig(), "
                                "fx(np.zeros(4)))", "prev_out"),
    "basic_rnn_cell_rows bias": ("mli.basic_rnn_cell_rows_fx16(fx(np.zeros((2, 1))), fx(np.zeros(4)), w1, "
                                 "raw(4, (2 ** 31,)), mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_LAST))", "bias"),
    "lstm_cell": ("mli.lstm_cell_fx16(x_wide, big_h, w4, b4, B2B, fx(np.zeros(30000)))", "in"),
    "basic_rnn_cell": ("mli.basic_rnn_cell_fx16(x_wide, big_h, w1, fx(np.zeros(30000)), B2B)", "in"),
    "prepare": ("mli.prepare(mli.lstm_cell_fx16, fx(np.zeros(1)), h_lie, w4, b4, mli.RnnCellConfig(), "
                "fx(np.zeros(4)), out=fx(np.zeros(4)))", "prev_out"),
    "tanh": ("mli.tanh_fx16(raw(4, (2 ** 16, 2 ** 15)))", "in"),
    "fully_connected": ("mli.fully_connected_fx16(fx(np.zeros(4)), raw(4, (2 ** 31, 4)), fx(np.zeros(4)))",
                        "weights"),
    "convert_tensor": ("mli.convert_tensor(mli.Tensor.raw(bytearray(4), capacity=0, shape=(65535, 65535), "
                       "el_type=4), 'fx8', 0)", "in"),
    "v2.tanh": ("v2.tanh_fx16(v2.Tensor(np.zeros(4, np.int16), v2.FX_16, (10 ** 9, 4), frac_bits=12))", "in"),
    "v2.lstm_cell": ("v2.lstm_cell_fx16(v2.Tensor.fx(np.zeros((2, 3)), 12), "
                     "v2.Tensor(np.zeros(4, np.int16), v2.FX_16, (10 ** 9,), frac_bits=12), "
                     "v2.Tensor.fx(np.zeros((4, 3, 4)), 12), v2.Tensor.fx(np.zeros((4, 4, 4)), 12), "
                     "v2.Tensor.fx(np.zeros((4, 4)), 12), None, None, v2.RnnCellCfg(0, 1, 1), "
                     "v2.Tensor.fx(np.zeros(4), 12), v2.Tensor.fx(np.zeros((2, 4)), 12))", "prev_out"),
}


@pytest.mark.parametrize("name", list(_CALLS))
def test_claimed_huge_shapes_end_in_the_checkers_error(name):
    """Under a 3 GiB address-space limit, every public entry point given a
    tensor whose shape claims gigabytes answers with the MliError naming that
    tensor, never a MemoryError (the outputs, cfg.ir, scratch and copies are
    allocated only after the C checker has seen the shapes)."""
    call, arg = _CALLS[name]
    code = _SETUP + textwrap.dedent(f"""
        try:
            {call}
        except mli.MliError as e:
            print("MliError", e.argument, e)
        except BaseException as e:
            print("other", type(e).__name__, e)
        else:
            print("no error")
        """)
    rc, out, err = run_py(code)
    assert rc == 0, err
    assert out.startswith(f"MliError {arg} "), out


def test_claimed_weights_never_size_the_workspace():
    """The packed-weights workspace of a basic RNN / LSTM call is sized from
    the shapes of weights and prev_out only when their buffers hold them: a
    lie (here 4 x 4096 x 8192 weights in 8 bytes) takes no memory before the
    checker refuses it (it took some 300 MB)."""
    code = _SETUP + textwrap.dedent("""
        import resource
        x = fx(np.zeros(4096))
        h = raw(4, (4096,))
        w = raw(4, (4, 4096, 8192))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for call in (lambda: mli.lstm_cell_fx16(x, h, w, fx(np.zeros((4, 4096))), mli.RnnCellConfig(), fx(np.zeros(4096))),
                     lambda: mli.basic_rnn_cell_fx16(x, h, raw(4, (4096, 8192)), fx(np.zeros(4096)), mli.RnnCellConfig())):
            try:
                call()
            except mli.MliError as e:
                print(e.argument)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
        """)
    rc, out, err = run_py(code)
    assert rc == 0, err
    lines = out.split()
    assert lines[:2] == ["prev_out", "prev_out"], out
    assert int(lines[2]) < 32, f"{lines[2]} MiB taken"


def test_ir_read_value_shape_within_the_size_limit(tmp_path):
    """A ReadValue with no init_value starts from zeros of the variable_shape
    the IR file states: above the size limit that is an IRError naming the
    variable, before anything is allocated."""
    from mli.ir import IRError, read_model
    text = '''<?xml version="1.0"?>
<net name="s" version="11"><layers>
<layer id="0" name="rv" type="ReadValue" version="opset6">
 <data variable_id="acc" variable_type="f32" variable_shape="SHAPE"/>
 <output><port id="1" precision="FP32"><dim>2</dim></port></output></layer>
<layer id="1" name="r" type="Result" version="opset1">
 <input><port id="0" precision="FP32"><dim>2</dim></port></input></layer>
</layers><edges>
<edge from-layer="0" from-port="1" to-layer="1" to-port="0"/>
</edges></net>'''
    (tmp_path / "s.xml").write_text(text.replace("SHAPE", "2"))
    (tmp_path / "s.bin").write_bytes(b"")
    np.testing.assert_array_equal(list(read_model(tmp_path / "s.xml")({}).values())[0], np.zeros(2, np.float32))
    (tmp_path / "s.xml").write_text(text.replace("SHAPE", "100000,100000"))
    with pytest.raises(IRError, match="variable 'acc'.*more than the limit"):
        read_model(tmp_path / "s.xml")({})


def test_v2_numpy_refuses_strides_that_leave_the_buffer():
    """mli.v2.Tensor.numpy(): a negative stride read before the buffer, a
    zero one copied a claimed shape (10**9 elements) out of one element."""
    t = v2.Tensor(np.arange(4, dtype=np.int16), v2.FX_16, (2,), mem_stride=[-1])
    with pytest.raises(ValueError, match="must be positive"):
        t.numpy()
    t = v2.Tensor(np.zeros(4, np.int16), v2.FX_16, (10 ** 9,), mem_stride=[0])
    with pytest.raises(ValueError, match="must be positive"):
        t.numpy()
    assert v2.Tensor.fx(np.arange(6).reshape(2, 3), 3).numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert v2.Tensor.zeros((0, 3)).numpy().shape == (0, 3)
