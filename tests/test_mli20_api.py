"""mli.v2 API: LUT tables, worked examples of SPEC_MLI2.md (values restated
there, checked here exactly), status paths and typed errors, refusals beyond
MLI (mlipy_safety), no mutation of inputs, aliasing, rounding and ISA."""
import zlib

import numpy as np
import pytest

import mli
import mli.v2 as v


def test_lut_tables_match_the_spec_checksums():
    t, s = v.tanh_lut(), v.sigm_lut()
    assert (t.length, t.input_offset, t.in_frac_bits, t.out_frac_bits) == (344, 172, 5, 15)
    assert (s.length, s.input_offset, s.in_frac_bits, s.out_frac_bits) == (320, 160, 4, 15)
    assert f"{zlib.crc32(t.table().astype('<i2').tobytes()):08x}" == "4cbbf8b6"
    assert f"{zlib.crc32(s.table().astype('<i2').tobytes()):08x}" == "589d26eb"
    assert int(t.table().sum()) == -32767 and int(s.table().sum()) == 5226497
    assert v.tanh_get_lut_size() == 688 and v.sigm_get_lut_size() == 640


def test_create_lut_too_small_sets_only_type():
    lut = v.Lut(100)
    with pytest.raises(mli.MliNotEnoughMemError):
        v.tanh_create_lut(lut)
    assert lut.type == v.FX_16 and lut.length == 0


def test_tanh_fx16_worked_example():
    x = v.Tensor.fx([4288, -4288, -1], 12)
    for mode in ("convergent", "up"):
        with mli.rounding(mode):
            out = v.tanh_fx16(x)
        assert out.numpy().tolist() == [25576, -25576, -8] and out.frac_bits == 15


def test_tanh_sa8_worked_example():
    x = v.Tensor.sa([10], -3, 20000, 18)
    out = v.tanh_sa8(x)
    assert out.numpy().tolist() == [97]
    assert (int(out.zero_point[0]), int(out.scale[0]), int(out.scale_frac_bits[0]), out.sa_dim) == (0, 1, 7, -1)


def test_fc_sa8_worked_example():
    x = v.Tensor.sa([10, -20, 35], 5, 24000, 20)
    w = v.Tensor.sa([[100, -50], [20, 7], [-127, 64]], 0, 20000, 22)
    b = v.Tensor.sa([1000, -2000], 0, 14648, 27, el_type="sa32")
    out = v.Tensor.sa([0, 0], -7, 30000, 19)
    v.fully_connected_sa8_sa8_sa32(x, w, b, v.FullyConnectedCfg(), out)
    assert out.numpy().tolist() == [-12, -8]


def test_dense_block_rounds_each_input_separately():
    """SPEC 7: 3*2 and 5*2 at frac 1+1 into frac 0: UP 2 + 3 = 5, CONVERGENT 2 + 2 = 4."""
    ins = [v.Tensor.fx([3], 1), v.Tensor.fx([5], 1)]
    ws = [v.Tensor.fx([[2]], 1), v.Tensor.fx([[2]], 1)]
    b = v.Tensor.fx([0], 0)
    for mode, want in (("up", 5), ("convergent", 4)):
        out = v.Tensor.fx([0], 0)
        with mli.rounding(mode):
            v.rnn_dense_fx16(ins, ws, b, v.RnnDenseCfg(2), out)
        assert out.numpy().tolist() == [want]


def _lstm_example():
    x = v.Tensor.fx([[8192]], 14)
    h0 = v.Tensor.fx([-16384], 15)
    wi = v.Tensor.fx(np.array([16384, -8192, 4096, 32767]).reshape(4, 1, 1), 15)
    wo = v.Tensor.fx(np.array([8192, 16384, 4096, -16384]).reshape(4, 1, 1), 15)
    b = v.Tensor.fx(np.array([512, -256, 8192, 0]).reshape(4, 1), 14)
    c = v.Tensor.fx([1000], 11)
    out = v.Tensor.fx([[0]], 15)
    return x, h0, wi, wo, b, c, out


def test_lstm_fx16_worked_example_and_no_mutation():
    for mode in ("convergent", "up"):
        x, h0, wi, wo, b, c, out = _lstm_example()
        copies = [t.buffer.copy() for t in (x, h0, wi, wo, b)]
        with mli.rounding(mode):
            v.lstm_cell_fx16(x, h0, wi, wo, b, None, None, v.RnnCellCfg(0, v.RNN_OUT_ALL, v.RNN_ACT_TANH), c, out)
        assert c.numpy().tolist() == [212] and out.numpy().tolist() == [[2295]]
        assert all(np.array_equal(a, t.buffer) for a, t in zip(copies, (x, h0, wi, wo, b)))
        assert (out.rank, out.shape[:2], out.mem_stride[:2]) == (2, [1, 1], [1, 1])


def test_lstm_same_on_every_isa():
    rng = np.random.default_rng(5)
    T, N, M = 7, 37, 19
    results = []
    for isa in mli.supported_isas():
        x = v.Tensor.fx(rng.integers(-20000, 20000, (T, N)), 14) if not results else x0
        args = dict(
            wi=v.Tensor.fx(np.random.default_rng(1).integers(-32768, 32767, (4, N, M)), 15),
            wo=v.Tensor.fx(np.random.default_rng(2).integers(-32768, 32767, (4, M, M)), 15),
            b=v.Tensor.fx(np.random.default_rng(3).integers(-32768, 32767, (4, M)), 12))
        x0 = x
        c = v.Tensor.fx(np.zeros(M), 12)
        out = v.Tensor.zeros((T, M), "fx16", 13)
        with mli.use_isa(isa):
            v.lstm_cell_fx16(x, v.Tensor.fx(np.zeros(M), 15), args["wi"], args["wo"], args["b"], None, None,
                             v.RnnCellCfg(), c, out)
        results.append((out.numpy().tolist(), c.numpy().tolist()))
    assert all(r == results[0] for r in results)


def test_gru_status_paths_are_typed_and_touch_nothing():
    T, N, M = 3, 4, 5
    x = v.Tensor.fx(np.ones((T, N)), 12)
    h0 = v.Tensor.fx(np.zeros(M), 15)
    wi = v.Tensor.fx(np.ones((3, N, M)), 14)
    wo = v.Tensor.fx(np.ones((3, M, M)), 14)
    b = v.Tensor.fx(np.ones((3, M)), 12)
    out = v.Tensor.fx(np.full((T, M), 7), 14)
    cfg = v.RnnCellCfg(0, v.RNN_OUT_ALL)
    bad_w = v.Tensor.fx(np.ones((3, N, M + 1)), 14)
    with pytest.raises(mli.MliShapeMismatchError) as e:
        v.gru_cell_fx16(x, h0, bad_w, wo, b, None, None, cfg, out)
    assert e.value.status == mli.Status.SHAPE_MISMATCH and e.value.argument == "weights_in"
    assert out.numpy().tolist() == [[7] * M] * T
    with pytest.raises(mli.MliTypeMismatchError):
        v.gru_cell_fx16(x, h0, v.Tensor.fx(np.ones((3, N, M)), 7, "fx8"), wo, b, None, None, cfg, out)
    small = v.Tensor.fx(np.zeros(M), 14)
    with pytest.raises(mli.MliBadTensorError):  # MLI's status for a short output capacity
        v.gru_cell_fx16(x, h0, wi, wo, b, None, None, cfg, small)
    with pytest.raises(mli.MliBadFuncCfgError):
        v.gru_cell_fx16(x, h0, wi, wo, b, None, None, v.RnnCellCfg(0, 1, 1, np.zeros(4, np.uint8)), out)
    with pytest.raises(mli.MliNotEnoughMemError):
        v.gru_cell_fx16(x, h0, wi, wo, b, v.Lut(600), None, cfg, out)
    assert out.numpy().tolist() == [[7] * M] * T


def test_refusals_beyond_mli_are_flagged():
    x = v.Tensor.fx([[1]], 12)
    h0 = v.Tensor.fx([0], 15)
    wi, wo, b = v.Tensor.fx(np.ones((4, 1, 1)), 14), v.Tensor.fx(np.ones((4, 1, 1)), 14), v.Tensor.fx(np.ones((4, 1)), 12)
    c, out = v.Tensor.fx([0], 12), v.Tensor.fx([[0]], 14)
    with pytest.raises(mli.MliBadFuncCfgError) as e:  # MLI reads a NULL cfg
        v.lstm_cell_fx16(x, h0, wi, wo, b, None, None, None, c, out)
    assert e.value.mlipy_safety
    with pytest.raises(mli.MliBadFuncCfgError) as e:  # act out of range
        v.lstm_cell_fx16(x, h0, wi, wo, b, None, None, v.RnnCellCfg(0, 1, 7), c, out)
    assert e.value.mlipy_safety
    bogus = v.Lut(688)
    v.tanh_create_lut(bogus)
    bogus.length = 10000  # beyond its storage: MLI would read out of bounds
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        v.tanh_fx16(v.Tensor.fx([1], 12), bogus)
    assert e.value.mlipy_safety
    scalar = v.Tensor(np.zeros(2, np.int16), v.FX_16, [], capacity=2)
    with pytest.raises(mli.MliBadTensorError) as e:  # rank 0: MLI uses the value as an address
        v.tanh_fx16(scalar, None, v.Tensor(np.zeros(2, np.int16), v.FX_16, [], capacity=2))
    assert e.value.mlipy_safety


def test_bridge_refuses_capacity_beyond_buffer():
    x = v.Tensor.fx([1, 2], 12)
    x.capacity = 100
    with pytest.raises(v.BridgeError):
        v.tanh_fx16(x)


def test_tanh_in_place_and_strided():
    base = np.arange(-3000, 3000, 100, dtype=np.int16)
    x = v.Tensor.fx(base, 11)
    ref = v.tanh_fx16(x).numpy()
    v.tanh_fx16(x, None, x)  # in place: the same container
    assert x.numpy().tolist() == ref.tolist() and x.frac_bits == 15
    # strided rows with holes: holes untouched
    buf = np.full(2 * 8, 99, np.int16)
    buf[0:5] = base[:5]
    buf[8:13] = base[5:10]
    xs = v.Tensor(buf.copy(), v.FX_16, [2, 5], [8, 1], frac_bits=11)
    outb = np.full(2 * 8, -5, np.int16)
    out = v.Tensor(outb, v.FX_16, [2, 5], [8, 1])
    v.tanh_fx16(xs, None, out)
    x2 = v.Tensor.fx(base[:10].reshape(2, 5), 11)
    assert out.numpy().tolist() == v.tanh_fx16(x2).numpy().tolist()
    assert outb[5:8].tolist() == [-5] * 3 and outb[13:].tolist() == [-5] * 3


def test_fc_overlap_refused():
    buf = np.zeros(8, np.int16)
    x = v.Tensor(buf, v.FX_16, [4], frac_bits=12)
    out = v.Tensor(buf, v.FX_16, [4], frac_bits=12)
    w = v.Tensor.fx(np.eye(4), 12)
    b = v.Tensor.fx(np.zeros(4), 12)
    with pytest.raises(mli.MliIncompatibleTensorsError):
        v.fully_connected_fx16(x, w, b, v.FullyConnectedCfg(), out)
    with pytest.raises(mli.MliBadFuncCfgError):
        v.fully_connected_fx16(v.Tensor.fx([1, 2, 3, 4], 12), w, b, None, v.Tensor.fx([0] * 4, 12))


def test_from_float_sa8_per_axis_roundtrip():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 6, 3))
    t = v.Tensor.from_float(w, "sa8", dim=0, symmetric=True)
    assert t.sa_dim == 0 and t.scale.shape == (4,) and not t.zero_point.any()
    err = np.abs(t.to_float() - w).max(axis=(1, 2))
    step = t.scale * 2.0 ** -t.scale_frac_bits.astype(float)
    assert np.all(err <= step / 2 + 1e-12)
    d = v.Tensor.from_float(rng.uniform(0.5, 3.0, size=10), "sa8")
    assert -128 <= int(d.zero_point[0]) <= 127
    assert np.abs(d.to_float() - d.to_float().clip(0)).max() == 0


def test_gil_released_threads_agree():
    import threading
    x = v.Tensor.fx(np.random.default_rng(9).integers(-30000, 30000, 5000), 12)
    ref = v.sigm_fx16(x).numpy()
    res = []

    def run():
        res.append(v.sigm_fx16(x).numpy())

    ts = [threading.Thread(target=run) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert all(np.array_equal(r, ref) for r in res)


# ================================================================ Ctrl-C
@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGINT") or __import__("os").name == "nt",
                    reason="POSIX signals")
@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("kind", ["fx16", "sa8_sa8_sa32"])
def test_ctrl_c_interrupts_a_long_v2_sequence(cell, kind):
    """SIGINT during a whole-sequence 2.x cell raises KeyboardInterrupt soon
    (the cell polls every MLIPY2_POLL_STEPS steps with the GIL released)."""
    import os
    import subprocess
    import sys
    import tempfile
    import textwrap
    g = 4 if cell == "lstm" else 3
    code = textwrap.dedent(f"""
        import os, signal, threading, time, numpy as np
        import mli.v2 as v
        T, g = 3 * 10**7, {g}
        if "{kind}" == "fx16":
            x = v.Tensor.fx(np.full((T, 1), 37, np.int16), 12); h = v.Tensor.fx(np.zeros(1, np.int16), 15)
            wi = v.Tensor.fx(np.full((g, 1, 1), 300, np.int16), 12); wo = v.Tensor.fx(np.full((g, 1, 1), 300, np.int16), 12)
            b = v.Tensor.fx(np.zeros((g, 1), np.int16), 12); c = v.Tensor.fx(np.zeros(1, np.int16), 12)
            out = v.Tensor.zeros((1, 1), "fx16", 15)
        else:
            x = v.Tensor.sa(np.full((T, 1), 37, np.int8), 0, 16384, 21); h = v.Tensor.sa(np.zeros(1), 0, 16384, 21)
            wi = v.Tensor.sa(np.full((g, 1, 1), 30), 0, 16384, 21); wo = v.Tensor.sa(np.full((g, 1, 1), 30), 0, 16384, 21)
            b = v.Tensor.sa(np.zeros((g, 1)), 0, 8192, 27, el_type="sa32"); c = v.Tensor.sa(np.zeros(1), 0, 16384, 17)
            out = v.Tensor.sa(np.zeros((1, 1)), 0, 16384, 21)
        cfg = v.RnnCellCfg(0, v.RNN_OUT_LAST, v.RNN_ACT_TANH)
        fn = v.{cell}_cell_{kind}
        args = (x, h, wi, wo, b, None, None, cfg) + ((c, out) if "{cell}" == "lstm" else (out,))
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.time()
        try:
            fn(*args)
            print("finished")
        except KeyboardInterrupt:
            print(f"{{time.time() - t0 - 0.5:.3f}}")
    """)
    import mli

    # the mli under test (an in-place build, or the installed one in CI), not the source tree
    root = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))
    env = {**os.environ, "PYTHONPATH": root}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                       cwd=tempfile.gettempdir())
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() != "finished"
    assert float(p.stdout) < 0.5  # seconds from SIGINT to KeyboardInterrupt
