"""The kernels and the bridge under attack (issue 10, sections 1, 2, 3.1,
4.3, 4.4, 7): hostile sizes near 2^31/2^32/2^64 through lying shapes and
capacities, threads and the rounding mode, Ctrl-C, failed calls that must
leave the caller's data alone.  Calls that could crash run in a subprocess,
so that a crash fails the test and not the run."""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np
import pytest

import mli
from mli import _core


def i16(a, f):
    return mli.Tensor(np.asarray(a, np.int16), f)


# the folder holding the mli under test (installed package or checkout)
MLI_HOME = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))


def run_py(code, timeout=120):
    """Run `code` in a fresh interpreter on the mli under test, from a folder
    outside the source tree (`python -c` puts the cwd first on sys.path);
    returns (returncode, stdout, stderr)."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1",
           "PYTHONPATH": os.pathsep.join([MLI_HOME] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                        if p])}
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=tempfile.gettempdir())
    return p.returncode, p.stdout, p.stderr


# ================================================================ 1. memory safety
def test_1_1_counts_do_not_wrap():
    """A claimed 2^68 elements over 2 bytes is refused by every capacity check;
    a sub-tensor never leaves its parent (run in a subprocess: it used to crash)."""
    rc, out, err = run_py("""
        import numpy as np, mli
        t = mli.Tensor.raw(bytearray(2), capacity=2, shape=(2**20, 2**24, 2**24, 8), el_type=mli.EL_FX_16)
        for coords in ([0, 0, 256], [0, 2**12, 0], [2**12 - 1, 2**24 - 1, 2**24 - 1]):
            try:
                mli.point_to_subtensor(t, coords, 1)
                print("accepted", coords)
            except mli.MliError as e:
                print(e.status.name)
        big = mli.Tensor.raw(bytearray(0), capacity=0, shape=(2**20, 2**20, 2**24), el_type=mli.EL_FX_16)
        x = mli.Tensor(np.arange(8, dtype=np.int16), 12)
        for fn in (lambda: mli.tanh_fx16(big), lambda: mli.convert_tensor(big, "fx16", 0),
                   lambda: mli.tanh_fx16(x, out=big)):
            try:
                fn()
                print("accepted")
            except mli.MliError as e:
                print(e.status.name)
    """)
    assert rc == 0, err
    assert out.split() == ["NOT_ENGH_MEM"] * 3 + ["NOT_ENGH_MEM"] * 3


def test_1_1_strided_size_does_not_wrap():
    """Strides whose extent sums past 2^64 are refused, not wrapped to a small size."""
    t = mli.Tensor.raw(bytearray(16), capacity=16, shape=(2**32 - 1, 2**32 - 1, 2, 1),
                       mem_stride=(2**31 - 1, 2**31 - 1, 1, 1), el_type=mli.EL_FX_16)
    with pytest.raises(mli.MliError) as e:
        mli.tanh_fx16(t)
    assert e.value.argument == "in"


def test_1_1_subtensor_stays_inside_parent():
    t = mli.Tensor(np.arange(24, dtype=np.int16).reshape(2, 3, 4), 0)
    for c0 in range(2):
        for c1 in range(3):
            sub = mli.point_to_subtensor(t, [c0, c1], 1)
            assert sub.offset + sub.capacity <= t.capacity
            assert sub.numpy().tolist() == [t.numpy()[c0, c1].tolist()]


def test_1_2_two_to_the_31_elements_refused():
    """The dense kernels count in C int: 2^31 elements are refused (documented),
    never a crash nor a silently wrong sum.  Pages of the buffer are never touched."""
    rc, out, err = run_py("""
        import numpy as np, mli
        buf = np.zeros(2**31 + 1, np.int8)
        x = mli.Tensor.raw(buf, capacity=2**31, shape=(2**31,), el_type=mli.EL_FX_8)
        w = mli.Tensor.raw(buf, shape=(1, 2**31 + 1), el_type=mli.EL_FX_8)
        wfc = mli.Tensor.raw(buf, capacity=2**31, shape=(1, 2**31), el_type=mli.EL_FX_8)
        h, b = mli.Tensor(np.zeros(1, np.int8), 7), mli.Tensor(np.zeros(1, np.int8), 0)
        for fn in (lambda: mli.basic_rnn_cell_fx8(x, h, w, b, mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE)),
                   lambda: mli.fully_connected_fx8(x, wfc, b)):
            try:
                fn()
                print("accepted")
            except mli.MliError as e:
                print(e.status.name, e.argument, e.mlipy_safety)
    """, timeout=300)
    assert rc == 0, err
    assert out.split() == ["NOT_ENGH_MEM", "in", "True"] * 2


@pytest.mark.parametrize("isa", mli.supported_isas())
def test_1_3_negative_frac_of_the_lstm_step(isa):
    """Every nonzero input saturates from f_ir <= -12 on: all paths agree with f_ir = -13."""
    with mli.using_isa(isa) if hasattr(mli, "using_isa") else _isa(isa):
        ref = np.arange(-40, 40, dtype=np.int16)
        _core.lstm_gates(1, ref, 20, -13)
        for f_ir in (-28, -40, -1000, -2**31):
            g = np.arange(-40, 40, dtype=np.int16)
            _core.lstm_gates(1, g, 20, f_ir)
            assert g.tolist() == ref.tolist(), f_ir
            g8 = np.arange(-40, 40, dtype=np.int8)
            ref8 = g8.copy()
            _core.lstm_gates(0, ref8, 20, -13)
            _core.lstm_gates(0, g8, 20, f_ir)
            assert g8.tolist() == ref8.tolist(), f_ir


class _isa:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        mli.use_isa(self.name)

    def __exit__(self, *exc):
        mli.use_isa(None)


# ================================================== 2. threads and the rounding mode
TIES = mli.Tensor(np.array([1, 5], np.int16), 1)  # 0.5 and 2.5


def test_2_1_rounding_blocks_never_block_other_threads():
    res = []

    def job():
        with mli.rounding("convergent"):
            res.append(mli.convert_tensor(TIES, "fx16", 0).numpy().tolist())

    with mli.rounding("up"):
        t = threading.Thread(target=job)
        t.start()
        t.join(10)
        assert not t.is_alive()
        assert mli.convert_tensor(TIES, "fx16", 0).numpy().tolist() == [1, 3]
    assert res == [[0, 2]]


def test_2_2_rounding_does_not_leak_into_other_threads():
    inside, leave = threading.Event(), threading.Event()

    def holder():
        with mli.rounding("up"):
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    inside.wait(10)
    try:
        assert mli.get_rounding() == "convergent"
        assert mli.convert_tensor(TIES, "fx16", 0).numpy().tolist() == [0, 2]
    finally:
        leave.set()
        t.join()


def test_2_2_every_call_uses_one_mode_while_others_switch():
    """A thread outside any block always gets the default, while another
    thread enters and leaves 'up' blocks as fast as it can."""
    stop = threading.Event()

    def switcher():
        while not stop.is_set():
            with mli.rounding("up"):
                mli.convert_tensor(TIES, "fx16", 0)

    a = mli.Tensor(np.tile(np.array([1, 5], np.int16), 5000), 1)
    want = np.tile([0, 2], 5000).tolist()
    t = threading.Thread(target=switcher)
    t.start()
    try:
        for _ in range(300):
            assert mli.convert_tensor(a, "fx16", 0).numpy().tolist() == want
    finally:
        stop.set()
        t.join()


def test_2_1_forked_child_keeps_the_forking_threads_mode():
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    rc, out, err = run_py("""
        import os, threading, numpy as np, mli
        a = mli.Tensor(np.array([1, 5], np.int16), 1)
        inside, leave = threading.Event(), threading.Event()
        def holder():
            with mli.rounding("up"):
                inside.set(); leave.wait(10)
        threading.Thread(target=holder).start(); inside.wait(10)
        with mli.rounding("up"):
            pid = os.fork()
            if pid == 0:
                r1 = mli.convert_tensor(a, "fx16", 0).numpy().tolist()
                with mli.rounding("convergent"):
                    r2 = mli.convert_tensor(a, "fx16", 0).numpy().tolist()
                print(r1, r2, flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
        leave.set()
    """, timeout=60)
    assert rc == 0, err
    assert out.strip() == "[1, 3] [0, 2]"


def _big_rnn():
    r = np.random.default_rng(0)
    q = lambda a, f: mli.Tensor.from_float(a, "fx16", f, saturate=True)  # noqa: E731
    x, w = q(r.uniform(-1, 1, (64, 512)), 12), q(r.normal(0, .3, (256, 768)), 14)
    b, h0 = q(r.normal(0, .1, 256), 14), i16(np.zeros(256), 15)
    return x, h0, w, b


def test_2_3_one_prepared_handle_from_two_threads():
    x, h0, w, b = _big_rnn()
    cfg = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH)
    ref = mli.basic_rnn_cell_fx16(x, h0, w, b, cfg).numpy()
    out = i16(np.zeros((64, 256)), 15)
    call = mli.prepare(mli.basic_rnn_cell_fx16, x, h0, w, b, cfg, out=out)
    for _ in range(20):
        go = threading.Barrier(2)

        def run():
            go.wait()
            call()

        ts = [threading.Thread(target=run) for _ in range(2)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        assert (out.numpy() == ref).all()


def test_2_3_shared_cfg_ir_is_never_written_by_two_calls_at_once():
    """Four threads, own inputs and outputs, one cfg.ir: every call either
    gives its single-threaded result or raises a clear error naming cfg.ir."""
    rng = np.random.default_rng(1)
    T, N, M = 400, 64, 64
    ir = i16(np.zeros(4 * M), 0)
    cfg = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH, ir=ir)
    w = mli.Tensor.from_float(rng.normal(0, .2, (4, M, N + M)), "fx16", 14)
    b = mli.Tensor.from_float(rng.normal(0, .1, (4, M)), "fx16", 14)
    jobs = []
    for k in range(4):
        x = mli.Tensor.from_float(rng.uniform(-1, 1, (T, N)), "fx16", 12)
        h, c = i16(np.zeros(M), 15), i16(np.zeros(M), 12)
        ref = mli.lstm_cell_fx16(x, h, w, b, mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH), c)[0].numpy()
        jobs.append((x, h, c, ref))
    results = {"ok": 0, "refused": 0, "wrong": 0}
    lock = threading.Lock()
    go = threading.Barrier(4)

    def run(x, h, c, ref):
        go.wait()
        for _ in range(10):
            try:
                y, _ = mli.lstm_cell_fx16(x, h, w, b, cfg, c)
                key = "ok" if (y.numpy() == ref).all() else "wrong"
            except ValueError as e:
                assert "cfg.ir_tsr" in str(e) and "another thread" in str(e)
                key = "refused"
            with lock:
                results[key] += 1

    ts = [threading.Thread(target=run, args=j) for j in jobs]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert results["wrong"] == 0 and results["ok"] + results["refused"] == 40


# ================================================================ 3.1 Ctrl-C
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="POSIX signals")
@pytest.mark.parametrize("prepared", [False, True])
def test_3_1_ctrl_c_interrupts_a_long_sequence(prepared):
    rc, out, err = run_py(f"""
        import os, signal, threading, time, numpy as np, mli
        x = mli.Tensor(np.full((3 * 10**7, 1), 37, np.int8), 7)
        z = lambda *s: mli.Tensor(np.full(s, 3, np.int8), 6)
        h, w, b, c = mli.Tensor(np.zeros(1, np.int8), 7), z(4, 1, 2), z(4, 1), z(1)
        cfg = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH)
        call = (mli.prepare(mli.lstm_cell_fx8, x, h, w, b, cfg, c, out=mli.Tensor(np.zeros(3 * 10**7, np.int8), 0))
                if {prepared} else lambda: mli.lstm_cell_fx8(x, h, w, b, cfg, c))
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.time()
        try:
            call()
            print("finished")
        except KeyboardInterrupt:
            print(f"{{time.time() - t0 - 0.5:.3f}}")
    """)
    assert rc == 0, err
    assert out.strip() != "finished"
    assert float(out) < 0.5  # seconds from SIGINT to KeyboardInterrupt


# ================================================ 4.3 / 4.4 the caller's data
def test_4_3_failed_lstm_leaves_cell_out_and_out_alone():
    T, N, M = 3, 2, 4
    cell_out, out = i16(np.full(M, 7), 3), i16(np.full(M * T, 9), 5)
    with pytest.raises(mli.MliShapeMismatchError):
        mli.lstm_cell_fx16(i16(np.ones((T, N)), 12), i16(np.zeros(M), 15), i16(np.ones((4, M, N + M + 1)), 14),
                           i16(np.zeros((4, M)), 14), mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH),
                           i16([100, 200, 300, 400], 12), out=out, cell_out=cell_out)
    assert cell_out.numpy().tolist() == [7] * M and cell_out.frac_bits == 3
    assert out.numpy().tolist() == [9] * (M * T) and out.frac_bits == 5


def test_4_3_failed_calls_leave_out_frac_alone():
    out = i16(np.zeros(4), 2)
    with pytest.raises(mli.MliShapeMismatchError):
        mli.basic_rnn_cell_fx16(i16(np.ones((3, 2)), 12), i16(np.zeros(4), 15), i16(np.ones((4, 7)), 14),
                                i16(np.zeros(4), 14), mli.RnnCellConfig(mode=1, act=0), out=out, out_frac_bits=11)
    assert out.frac_bits == 2
    with pytest.raises(mli.MliShapeMismatchError):
        mli.fully_connected_fx16(i16(np.ones(3), 12), i16(np.ones((4, 2)), 12), i16(np.zeros(4), 12), out=out,
                                 out_frac_bits=9)
    assert out.frac_bits == 2
    with pytest.raises(mli.MliError):
        mli.eltwise_mul_fx16(i16(np.ones(3), 12), i16(np.ones(4), 12), out=out, out_frac_bits=9)
    assert out.frac_bits == 2


def test_4_3_successful_lstm_writes_cell_out():
    T, N, M = 3, 2, 4
    cell = i16([100, 200, 300, 400], 12)
    cell_out = i16(np.zeros(M), 3)
    args = (i16(np.ones((T, N)), 12), i16(np.zeros(M), 15), i16(np.ones((4, M, N + M)), 14),
            i16(np.zeros((4, M)), 14), mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH), cell)
    y, c = mli.lstm_cell_fx16(*args, cell_out=cell_out)
    y2, c2 = mli.lstm_cell_fx16(*args)
    assert c is cell_out and c.numpy().tolist() == c2.numpy().tolist() and c.frac_bits == 12
    assert cell.numpy().tolist() == [100, 200, 300, 400]


def test_4_4_non_contiguous_out_is_refused():
    big = np.zeros((8, 2), np.int16)
    with pytest.raises(ValueError, match="non-contiguous"):
        mli.tanh_fx16(mli.Tensor(np.arange(8, dtype=np.int16) * 1000, 12), out=mli.Tensor(big[:, 0], 0))
    # as an input a strided view is read correctly
    y = mli.tanh_fx16(mli.Tensor(np.ascontiguousarray(big[:, 0]), 12))
    assert y.numpy().tolist() == mli.tanh_fx16(mli.Tensor(big[:, 0], 12)).numpy().tolist()


# ================================================================ 7. messages
def test_7_1_scratch_is_not_sized_from_a_lying_shape():
    x, h, w = i16(np.zeros((2, 4)), 12), i16(np.zeros(4), 15), i16(np.zeros((4, 8)), 14)
    for shape in ((7, 2**32 - 1), (2**31, 2**31), (2**20, 2**9)):
        b = mli.Tensor.raw(bytearray(2), shape=shape, el_type=mli.EL_FX_16, frac_bits=14)
        with pytest.raises(mli.MliNotEnoughMemError) as e:
            mli.basic_rnn_cell_fx16(x, h, w, b, mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_LAST))
        assert e.value.argument == "bias"
    p = mli.Tensor.raw(bytearray(2), shape=(2**32 - 1,), el_type=mli.EL_FX_16, frac_bits=15)
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        mli.prepare(mli.lstm_cell_fx16, x, p, i16(np.zeros((4, 4, 8)), 14), i16(np.zeros((4, 4)), 14),
                    mli.RnnCellConfig(mode=1), i16(np.zeros(4), 12), out=i16(np.zeros(8), 0))()
    assert e.value.argument == "prev_out"


@pytest.mark.parametrize("lstm", [False, True])
def test_7_2_batch_to_last_takes_an_out_of_one_step(lstm):
    T, N, M = 5, 3, 4
    cfg = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_LAST)
    x = i16(np.ones((T, N)), 12)
    if lstm:
        args = (x, i16(np.zeros(M), 15), i16(np.ones((4, M, N + M)), 14), i16(np.zeros((4, M)), 14), cfg,
                i16(np.zeros(M), 12))
        y = mli.lstm_cell_fx16(*args, out=i16(np.zeros(M), 0))[0]
        assert y.shape == (M,) and y.numpy().tolist() == mli.lstm_cell_fx16(*args)[0].numpy().tolist()
        assert mli.lstm_cell_fx16(*args)[0].capacity == 2 * M
    else:
        args = (x, i16(np.zeros(M), 15), i16(np.ones((M, N + M)), 14), i16(np.zeros(M), 14), cfg)
        y = mli.basic_rnn_cell_fx16(*args, out=i16(np.zeros(M), 0))
        assert y.shape == (M,) and mli.basic_rnn_cell_fx16(*args).capacity == 2 * M


def test_7_3_the_argument_of_the_wrong_element_type_is_named():
    M, N = 4, 16
    h0, w, b, c = i16(np.zeros(M), 15), i16(np.zeros((4, M, N + M)), 14), i16(np.zeros((4, M)), 14), i16(np.zeros(M), 12)
    cfg = mli.RnnCellConfig(mode=1)
    with pytest.raises(mli.MliTypeMismatchError) as e:
        mli.lstm_cell_fx16(mli.Tensor(np.zeros((8, N), np.int8), 7), h0, w, b, cfg, c)
    assert e.value.argument == "in"
    with pytest.raises(mli.MliTypeMismatchError) as e:
        mli.lstm_cell_fx16(i16(np.zeros((8, N)), 12), h0, mli.Tensor(np.zeros((4, M, N + M), np.int8), 7), b, cfg, c)
    assert e.value.argument == "weights"
    with pytest.raises(mli.MliTypeMismatchError) as e:
        mli.basic_rnn_cell_fx16(mli.Tensor(np.zeros((8, N), np.int8), 7), h0, i16(np.zeros((M, N + M)), 14),
                                i16(np.zeros(M), 14), cfg)
    assert e.value.argument == "in"


def test_7_3_from_float_beyond_float32_saturates():
    assert mli.Tensor.from_float(np.array([1e39, -1e39]), "fx16", 0, saturate=True).numpy().tolist() == [32767, -32768]
    with pytest.warns(mli.tensor.SaturationWarning):
        mli.Tensor.from_float(np.array([100.0]), "fx16", 12)
    with pytest.raises(ValueError, match="NaN or infinity"):
        mli.Tensor.from_float(np.array([np.inf]), "fx16", 0)


def test_prepare_refuses_out_over_the_callers_weights():
    """The handle computes from a copy of the weights; an out over the caller's
    weights would still overwrite them (found by the fuzzer under ASan)."""
    w = np.arange(24, dtype=np.int16).reshape(4, 6)
    before = w.copy()
    x, h, b = i16(np.ones(2), 12), i16(np.zeros(4), 15), i16(np.zeros(4), 14)
    out = mli.Tensor(w.reshape(-1)[:4], 0)
    with pytest.raises(ValueError, match="overlaps weights"):
        mli.prepare(mli.basic_rnn_cell_fx16, x, h, mli.Tensor(w, 14), b, mli.RnnCellConfig(mode=0, act=3), out=out)
    assert (w == before).all()
