"""Hardening (issue 5): hostile arguments and files give a clear error that
names the argument (asserted on the message), never a crash, and leave the
caller's data unchanged.

Cases that could crash the interpreter run in a subprocess, so a segfault
fails one test instead of killing pytest.  The tests marked "finding" in
their docstring reproduce bugs the fuzzing found (tests/fuzz/); they fail
until the package is fixed.
"""
import io
import os
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import mli
from mli import Status, Tensor
from mli.io import encode_idx, read_c_array, read_idx, read_raw
from mli.io.npz import read_npy, read_npz, write_npz
from mli.ir import IRError, read_model

rng = np.random.default_rng(5)


# ----------------------------------------------------------------- helpers
def i16(shape, lim=3000):
    return rng.integers(-lim, lim, shape).astype(np.int16)


def snapshot(*tensors):
    """Bytes and fields of tensors (or arrays) to compare after a call."""
    out = []
    for t in tensors:
        if isinstance(t, Tensor):
            data = bytes(np.frombuffer(t.base, np.uint8)) if t.base is not None else None
            out.append((data, t.shape4, t.rank, t.mem_stride, t.el_type, t.frac_bits, t.capacity))
        else:
            out.append(np.asarray(t).tobytes())
    return out


def raises_clean(exc_type, fn, *words, unchanged=()):
    """fn() raises exc_type whose message contains every word (case-insensitive);
    the tensors/arrays in `unchanged` are the same afterwards."""
    before = snapshot(*unchanged)
    with pytest.raises(exc_type) as ei:
        fn()
    msg = str(ei.value)
    assert msg.strip(), "empty message"
    for w in words:
        assert w.lower() in msg.lower(), f"{w!r} not in message {msg!r}"
    assert snapshot(*unchanged) == before, "caller data changed"
    return ei.value


def run_isolated(code, expect):
    """Run `code` in a fresh interpreter; it must exit 0 and print `expect`
    (a crash shows as a negative return code: -11 is SIGSEGV)."""
    env = dict(os.environ)
    home = str(Path(mli.__file__).resolve().parents[1])  # the mli this process imported
    env["PYTHONPATH"] = os.pathsep.join([home] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # cwd elsewhere than the checkout: `python -c` puts the cwd first on sys.path
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code)], cwd=tempfile.gettempdir(),
                       env=env,
                       capture_output=True, text=True, timeout=120)
    how = f"killed by signal {-p.returncode}" if p.returncode < 0 else f"exit code {p.returncode}"
    assert p.returncode == 0, f"{how}\nstdout: {p.stdout[-2000:]}\nstderr: {p.stderr[-3000:]}"
    assert expect in p.stdout, p.stdout + p.stderr


def fc_args(N=6, K=4):
    return Tensor(i16(N), 12), Tensor(i16((K, N)), 14), Tensor(i16(K), 14)


def lstm_args(T=3, N=4, M=3):
    return (Tensor(i16((T, N)), 12), Tensor(i16(M), 15), Tensor(i16((4, M, N + M)), 15), Tensor(i16((4, M)), 14),
            mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH), Tensor(i16(M), 11))


# ============================================================ wrong dtype / byte order
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.uint16, np.int64, np.bool_])
def test_tensor_rejects_dtype(dtype):
    a = np.zeros(4, dtype)
    raises_clean(TypeError, lambda: Tensor(a, 3), "data", unchanged=[a])


@pytest.mark.parametrize("dtype", [">i2", np.dtype(np.int16).newbyteorder()])
def test_tensor_rejects_non_native_byte_order(dtype):
    a = np.arange(4, dtype=np.dtype(dtype))
    raises_clean(TypeError, lambda: Tensor(a, 3), "data", "byte order", unchanged=[a])


def test_el_type_not_matching_dtype():
    a = np.zeros(4, np.int8)
    raises_clean(TypeError, lambda: Tensor(a, 3, el_type="fx16"), "data", "FX_16", unchanged=[a])


def test_kernel_with_mixed_types_names_argument():
    x, w, b = fc_args()
    w8 = Tensor(rng.integers(-100, 100, w.shape).astype(np.int8), 6)
    e = raises_clean(mli.MliTypeMismatchError, lambda: mli.fully_connected_fx16(x, w8, b), "weights",
                     unchanged=[x, w8, b])
    assert e.status == Status.TYPE_MISMATCH and e.argument == "weights"
    assert isinstance(e, TypeError)


def test_kernel_argument_not_a_tensor():
    x, w, b = fc_args()
    raises_clean(TypeError, lambda: mli.fully_connected_fx16(np.zeros(6, np.int16), w, b), "in",
                 unchanged=[w, b])


@pytest.mark.parametrize("fn", ["fully_connected", "basic_rnn_cell", "lstm_cell", "tanh", "eltwise_add"])
@pytest.mark.parametrize("junk", [None, np.zeros(6, np.int16), b"ab", 3])
def test_generic_dispatch_argument_not_a_tensor(fn, junk):
    """finding: the variant-picking forms read .el_type of their first
    arguments before checking they are tensors (AttributeError, not TypeError)."""
    x, w, b = fc_args()
    args = {"fully_connected": (junk, w, b), "tanh": (junk,), "eltwise_add": (junk, x),
            "basic_rnn_cell": (junk, Tensor(i16(4), 15), Tensor(i16((4, 10)), 14), b, mli.RnnCellConfig()),
            "lstm_cell": (x, Tensor(i16(4), 15), junk, b, mli.RnnCellConfig(), Tensor(i16(4), 11))}[fn]
    raises_clean(TypeError, lambda: getattr(mli, fn)(*args), "in" if fn != "lstm_cell" else "weights",
                 unchanged=[w, b])


# ============================================================ rank / shape / capacity / frac
def test_tensor_rank_above_4():
    a = np.zeros((1, 1, 1, 1, 2), np.int16)
    raises_clean(ValueError, lambda: Tensor(a, 3), "data", "rank", unchanged=[a])


@pytest.mark.parametrize("rank", [0, 5, 7, 2**32 - 1])
def test_kernel_bad_rank_names_argument(rank):
    x, w, b = fc_args()
    xr = Tensor.raw(np.frombuffer(x.numpy().tobytes(), np.uint8).copy(), shape=x.shape, rank=rank, el_type=1,
                    frac_bits=12)
    e = raises_clean(mli.MliError, lambda: mli.fully_connected_fx16(xr, w, b), unchanged=[xr, w, b])
    # rank 0 is MLI's one-element scalar: then the weights no longer fit it
    assert isinstance(e, ValueError) and e.argument == ("weights" if rank == 0 else "in"), e
    assert e.argument in str(e)


def test_shape_mismatch_names_argument():
    x, w, b = fc_args()
    b5 = Tensor(i16(5), 14)
    e = raises_clean(mli.MliShapeMismatchError, lambda: mli.fully_connected_fx16(x, w, b5), "bias",
                     unchanged=[x, w, b5])
    assert e.argument == "bias"


@pytest.mark.parametrize("shape", [[0], [2**32 - 1], [65536, 65536], [2**31, 2, 2, 2]])
def test_huge_or_zero_shape_with_small_buffer(shape):
    t = Tensor.raw(np.zeros(8, np.int16), shape=shape, el_type=1, frac_bits=12)
    e = raises_clean(mli.MliError, lambda: mli.tanh_fx16(t, out=Tensor(np.zeros(8, np.int16))), unchanged=[t])
    assert isinstance(e, ValueError)


@pytest.mark.parametrize("shape", [[2**32 - 1, 2**32 - 1], [2**32 - 1, 3]])
def test_huge_shape_fields_do_not_allocate(shape):
    """finding: the wrappers size the new output from the input's shape
    fields before C checks them against the capacity: a raw tensor claiming
    2**64 elements gives MemoryError (and smaller claims allocate gigabytes)
    instead of the capacity error."""
    t = Tensor.raw(np.zeros(8, np.int16), shape=shape, el_type=1, frac_bits=12)
    raises_clean(ValueError, lambda: mli.tanh_fx16(t), "in", unchanged=[t])
    raises_clean(ValueError, lambda: mli.convert_tensor(t, "fx8", 3), "in", unchanged=[t])


def test_capacity_above_buffer_refused():
    a = np.zeros(3, np.int16)
    raises_clean(ValueError, lambda: Tensor.raw(a, capacity=7), "capacity", unchanged=[a])
    t = Tensor(a, 3)
    raises_clean(ValueError, lambda: setattr(t, "capacity", 7), "capacity", unchanged=[a])


@pytest.mark.parametrize("cap", [0, 1, 11])
def test_capacity_below_data_names_argument(cap):
    x, w, b = fc_args()
    wr = Tensor.raw(np.frombuffer(w.numpy().tobytes(), np.uint8).copy(), shape=w.shape, el_type=1, frac_bits=14,
                    capacity=cap)
    e = raises_clean(mli.MliNotEnoughMemError, lambda: mli.fully_connected_fx16(x, wr, b), "weights", "capacity",
                     unchanged=[x, wr, b])
    assert e.argument == "weights"


@pytest.mark.parametrize("frac", [-1, 256, 1.5, "3", None, True])
def test_frac_bits_out_of_range(frac):
    a = np.zeros(3, np.int16)
    raises_clean((ValueError, TypeError), lambda: Tensor(a, frac), "frac", unchanged=[a])


def test_incompatible_frac_bits_names_argument():
    x, h = Tensor(i16((3, 4)), 12), Tensor(i16(5), 15)
    w, b = Tensor(i16((5, 9)), 14), Tensor(i16(5), 27)  # bias frac beyond in + weights frac
    e = raises_clean(mli.MliIncompatibleTensorsError,
                     lambda: mli.basic_rnn_cell_fx16(x, h, w, b, mli.RnnCellConfig(mode=1)), "bias",
                     unchanged=[x, h, w, b])
    assert e.argument == "bias"


# ============================================================ config values
@pytest.mark.parametrize("field,value", [("mode", 2**40), ("mode", -2**31 - 1), ("act", 2**31), ("act", "tanhh")])
def test_rnn_config_values(field, value):
    """What no C caller can put into an enum field (not a C int, an unknown name)."""
    e = raises_clean(mli.MliBadFuncCfgError, lambda: mli.RnnCellConfig(**{field: value}), "cfg", field)
    assert e.argument == "cfg" and e.field == field


@pytest.mark.parametrize("field,value,held", [("mode", 3, 3), ("mode", -1, -1), ("act", 3, 3),
                                              ("act", "tanh", mli.RNN_ACT_TANH),
                                              ("mode", "batch_to_last", mli.RNN_BATCH_TO_LAST)])
def test_rnn_config_holds_raw_values(field, value, held):
    """Like the C struct, RnnCellConfig holds any int (MLI does not check the enums)."""
    cfg = mli.RnnCellConfig(**{field: value})
    assert getattr(cfg, field) == held


@pytest.mark.parametrize("relu_type", [-1, 4, 9])
def test_relu_unknown_type_is_none(relu_type):
    """SPEC 7: ReLU does not check cfg; an unknown type clamps like NONE."""
    x = Tensor(i16(6), 12)
    np.testing.assert_array_equal(mli.relu_fx16(x, relu_type).numpy(), mli.relu_fx16(x, mli.MLI_RELU_NONE).numpy())


@pytest.mark.parametrize("relu_type", [2**31, -2**31 - 1, 2**40])
def test_relu_type_outside_c_int(relu_type):
    """finding: a relu_type outside C int gives Cython's OverflowError, not a
    ValueError naming the argument."""
    x = Tensor(i16(6), 12)
    raises_clean(ValueError, lambda: mli.relu_fx16(x, relu_type), "relu", unchanged=[x])


@pytest.mark.parametrize("start_dim", [-1, 2**32, 2**40])
def test_count_elem_num_start_dim_out_of_range(start_dim):
    """finding: OverflowError (not a ValueError) for a start_dim outside uint32."""
    t = Tensor(i16((2, 3)), 3)
    raises_clean(ValueError, lambda: mli.count_elem_num(t, start_dim), "start_dim", unchanged=[t])


@pytest.mark.parametrize("coords,size", [([-1], 1), ([2**32], 1), ([0], 2**40), ([0], -1)])
def test_point_to_subtensor_cfg_out_of_range(coords, size):
    """finding: OverflowError for coordinates / sizes outside the C field types."""
    t = Tensor(i16((2, 3)), 3)
    raises_clean(ValueError, lambda: mli.point_to_subtensor(t, coords, size), unchanged=[t])


def test_lstm_cfg_batch_to_last_without_ir_is_allocated():
    x, h, w, b, cfg, c = lstm_args()
    before = snapshot(x, h, w, b, c)
    y, c2 = mli.lstm_cell_fx16(x, h, w, b, mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_LAST), c)
    assert snapshot(x, h, w, b, c) == before
    assert y.shape == (3,)


# ============================================================ out= aliasing an input
def test_out_overlapping_input_partially_is_refused():
    buf = np.zeros(16, np.int16)
    w, b = Tensor(i16((8, 8)), 14), Tensor(i16(8), 14)
    x = Tensor.raw(buf, shape=[8], el_type=1, frac_bits=12, capacity=16)
    o = Tensor.raw(buf, shape=[8], el_type=1, capacity=32)
    raises_clean(ValueError, lambda: mli.fully_connected_fx16(x, w, b, out=o), "out", "overlaps", "in",
                 unchanged=[buf, w, b])


def test_out_read_only_is_refused():
    x = Tensor(i16(6), 12)
    ro = np.zeros(6, np.int16)
    ro.flags.writeable = False
    raises_clean(ValueError, lambda: mli.tanh_fx16(x, out=Tensor(ro)), "out", "read-only", unchanged=[x, ro])


def test_in_place_elementwise_is_allowed():
    a = i16(6)
    x = Tensor(a.copy(), 12)
    ref = mli.tanh_fx16(Tensor(a.copy(), 12)).numpy().copy()
    y = mli.tanh_fx16(x, out=x)
    np.testing.assert_array_equal(y.numpy(), ref)


@pytest.mark.parametrize("which", ["in", "weights", "bias"])
def test_fully_connected_out_is_an_input(which):
    """finding: out= the same Tensor object as an input is not detected (the
    bridge's overlap check skips `t is o`): the kernel overwrites its own
    input while reading it, returns wrong values and modifies the caller's
    tensor.  Expected: ValueError naming out and the input."""
    x, w, b = fc_args(N=8, K=8)
    args = {"in": x, "weights": w, "bias": b}
    raises_clean(ValueError, lambda: mli.fully_connected_fx16(x, w, b, out=args[which]), "out", which,
                 unchanged=[x, w, b])


@pytest.mark.parametrize("which", ["prev_out", "in", "weights"])
def test_lstm_cell_out_is_an_input(which):
    """finding: cell_out= (or out=) an input tensor is accepted: the wrapper
    even copies the cell into it before any check, so prev_out / in /
    weights are overwritten and the result is wrong."""
    x, h, w, b, cfg, c = lstm_args()
    target = {"prev_out": h, "in": x, "weights": w}[which]
    raises_clean(ValueError, lambda: mli.lstm_cell_fx16(x, h, w, b, cfg, c, cell_out=target), which,
                 unchanged=[x, h, w, b, c])
    raises_clean(ValueError, lambda: mli.lstm_cell_fx16(x, h, w, b, cfg, c, out=target), which,
                 unchanged=[x, h, w, b, c])


def test_prepare_out_is_an_input():
    """finding: the same skip in PreparedCall: out= the input tensor is accepted."""
    x = Tensor(i16((3, 4)), 12)
    h, w, b = Tensor(i16(4), 15), Tensor(i16((4, 8)), 14), Tensor(i16(4), 14)
    out = Tensor(np.zeros(12, np.int16))
    raises_clean(ValueError, lambda: mli.kernels.prepare(mli.basic_rnn_cell_fx16, x, h, w, b,
                                                         mli.RnnCellConfig(mode=1), out=x), "out",
                 unchanged=[x, h, w, b, out])


# ============================================================ views and crashes
@pytest.mark.parametrize("shape,stride", [([2, 2], [-1, 3]), ([1, 3], [3, -3]), ([2, 2], [-1000000, 1000001])])
def test_numpy_view_stays_inside_buffer(shape, stride):
    """finding: Tensor.numpy() with a negative mem_stride builds an as_strided
    view reaching before the buffer (out-of-bounds read, and write through
    the writable view).  Expected: a view inside the buffer, or ValueError."""
    buf = np.zeros(8, np.int16)
    t = Tensor.raw(buf, shape=shape, mem_stride=stride, el_type=1)
    try:
        a = t.numpy()
    except ValueError as e:
        assert "stride" in str(e) or "capacity" in str(e)
        return
    lo = buf.__array_interface__["data"][0]
    a_lo, a_hi = (np.byte_bounds(a) if hasattr(np, "byte_bounds") else np.lib.array_utils.byte_bounds(a))
    assert lo <= a_lo and a_hi <= lo + buf.nbytes, f"view [{a_lo - lo}, {a_hi - lo}) outside [0, {buf.nbytes})"


def test_numpy_of_value_tensor_with_unknown_el_type():
    """finding: a rank-0 value tensor whose el_type was set outside 0..3 (a
    state the docs allow) makes .numpy() raise numpy's OverflowError (the
    value is forced into uint8).  Expected: the value, or a ValueError naming
    el_type."""
    t = Tensor(np.array(-79, np.int8), 3)
    t.el_type = 5
    try:
        t.numpy()
    except ValueError as e:
        assert "el_type" in str(e)


@pytest.mark.parametrize("fn", ["tanh_fx16", "sigm_fx16", "relu_fx16", "tanh_fx8", "sigm_fx8", "relu_fx8"])
def test_rank0_null_data_unary(fn):
    """finding (segfault): a rank-0 tensor with data == NULL and a non-zero
    capacity reaches the unary kernels, which dereference NULL."""
    el = 0 if fn.endswith("fx8") else 1
    run_isolated(f"""
        import mli
        t = mli.Tensor.raw(None, data_null=True, capacity=2, el_type={el}, shape=())
        try:
            mli.{fn}(t)
            print("returned")
        except ValueError as e:
            print("ValueError", e)
    """, "ValueError")


def test_value_tensor_with_rank_and_capacity():
    """finding (segfault): the capacity setter does not bound capacity for a
    rank-0 value tensor (data holds the value, not a pointer); give it a
    rank and a capacity and the eltwise kernels read the value as an address."""
    run_isolated("""
        import numpy as np, mli
        a = mli.Tensor.raw(scalar=5, shape=[2, 2], el_type=1, frac_bits=3)
        try:
            a.capacity = 8
        except ValueError as e:
            print("ValueError", e); raise SystemExit(0)
        try:
            mli.eltwise_add_fx16(a, mli.Tensor(np.ones((2, 2), np.int16), 3))
            print("returned")
        except ValueError as e:
            print("ValueError", e)
    """, "ValueError")


def test_prepared_call_after_input_becomes_a_value():
    """finding (segfault): a prepared call checks its tensors once; turning an
    input into a value tensor afterwards (scalar_value, capacity) makes the
    next call read the value as an address."""
    run_isolated("""
        import numpy as np, mli
        x = mli.Tensor(np.ones((3, 4), np.int16), 12)
        h, w, b = (mli.Tensor(np.zeros(5, np.int16), 15), mli.Tensor(np.ones((5, 9), np.int16), 14),
                   mli.Tensor(np.zeros(5, np.int16), 14))
        p = mli.kernels.prepare(mli.basic_rnn_cell_fx16, x, h, w, b, mli.RnnCellConfig(mode=1),
                                out=mli.Tensor(np.zeros(15, np.int16)))
        p()
        try:
            x.scalar_value = 5
            x.capacity = 24
        except ValueError as e:
            print("ValueError", e); raise SystemExit(0)
        try:
            p()
            print("returned")
        except ValueError as e:
            print("ValueError", e)
    """, "ValueError")


@pytest.mark.parametrize("call", [
    "_core.lstm_gates(1, np.zeros(64, np.int16), 2**31 - 1, 0)",
    "_core.lstm_cell_update(1, np.zeros(64, np.int16), 2**31 - 1, np.zeros(64, np.int16), 0)",
    "_core.lstm_hidden(1, np.zeros(64, np.int16), 2**31 - 1, np.zeros(64, np.int16), 0, 1, 0, np.zeros(64, np.int16))",
])
def test_lstm_step_size_check_overflow(call):
    """finding (segfault): the bridge's LSTM step functions check
    `len(gates) < 4 * M` in C int arithmetic; M = 2**31 - 1 overflows it to a
    negative number, the check passes and C walks far past the buffers."""
    run_isolated(f"""
        import numpy as np
        from mli import _core
        try:
            {call}
            print("returned")
        except (ValueError, OverflowError) as e:
            print("ValueError", e)
    """, "ValueError")


def test_nothing_written_on_failure():
    x, w, b = fc_args()
    out = Tensor(np.full(4, 77, np.int16))
    bad_b = Tensor(i16(5), 14)
    raises_clean(mli.MliError, lambda: mli.fully_connected_fx16(x, w, bad_b, out=out), unchanged=[x, w, bad_b])
    assert (out.numpy() == 77).all()


# ============================================================ quantizing NaN / inf
@pytest.mark.parametrize("v", [np.nan, np.inf, -np.inf])
def test_from_float_nan_inf(v):
    x = np.array([0.5, v, 0.25])
    raises_clean(ValueError, lambda: Tensor.from_float(x, "fx16", 12), "x", "nan", unchanged=[x])
    raises_clean(ValueError, lambda: mli.frac_bits_for(x, "fx16"), "x", "nan", unchanged=[x])
    from mli.io.c_array import qmn
    raises_clean(ValueError, lambda: qmn(x, 12, np.int16), "values", unchanged=[x])


def test_export_c_nan(tmp_path, capsys):
    from mli.tools import export_c
    write_npz(tmp_path / "w.npz", {"w": np.array([0.5, np.nan])})
    code = export_c.main([str(tmp_path / "w.npz"), "-o", str(tmp_path / "m"), "--frac-all", "12"])
    err = capsys.readouterr().err
    assert code == 2 and "nan" in err.lower() and "Traceback" not in err


# ============================================================ IDX / raw / npz / C files
def idx_bytes(a):
    return encode_idx(a)


@pytest.mark.parametrize("data,words", [
    (b"", ["truncated"]), (b"\x00\x00", ["truncated"]), (b"\x01\x00\x0b\x01", ["magic"]),
    (b"\x00\x00\x07\x01\x00\x00\x00\x01\x00", ["type code"]), (b"\x00\x00\x0b\x03\x00\x00\x00\x01", ["rank 3"]),
    (b"\x00\x00\x0b\x01\x00\x00\x00\x04\x00\x01", ["truncated", "need 8"]),
    (idx_bytes(np.arange(4, dtype=np.int16)) + b"\x00", ["trailing"]),
    (b"\x00\x00\x0b\x03" + b"\xff" * 12, ["dims"]),
    (b"\x00\x00\x0e\xff" + b"\xff" * 1020, ["dims"]),
])
def test_idx_malformed(tmp_path, data, words):
    buf = bytearray(data)
    raises_clean(ValueError, lambda: read_idx(buf), "idx", *words, unchanged=[np.frombuffer(bytes(buf), np.uint8)])
    assert bytes(buf) == data
    p = tmp_path / "x.idx"
    p.write_bytes(data)
    raises_clean(ValueError, lambda: read_idx(p), str(p), *words)


def test_idx_huge_dims_checked_before_allocating(tmp_path):
    p = tmp_path / "huge.idx"
    p.write_bytes(b"\x00\x00\x0e\x04" + b"\xff\xff\xff\xff" * 4 + b"\x00" * 16)
    raises_clean(ValueError, lambda: read_idx(p), "IDX")


def test_idx_missing_file(tmp_path):
    raises_clean(OSError, lambda: read_idx(tmp_path / "nope.idx"), "nope.idx")


@pytest.mark.parametrize("kw,words", [
    (dict(dtype="int16"), ["whole number"]), (dict(dtype="int8", shape=(2, 2)), ["shape", "needs 4"]),
    (dict(dtype="int8", offset=10), ["offset 10", "past"]), (dict(dtype="int8", offset=-1), ["offset"]),
    (dict(dtype="int8", count=9), ["9", "need"]),
    (dict(dtype="float16"), ["dtype"]), (dict(dtype="int8", endian="middle"), ["endian"]),
    (dict(dtype="int8", shape="2x-1x-1"), ["shape"]),
])
def test_raw_malformed(kw, words):
    data = bytearray(b"\x01\x02\x03")
    raises_clean(ValueError, lambda: read_raw(data, **kw), *words)
    assert data == b"\x01\x02\x03"


def test_raw_oversized_count_is_refused_not_allocated():
    raises_clean(ValueError, lambda: read_raw(b"\x00" * 16, "int32", count=2**40), "need")


def npz_bytes(compressed):
    b = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(b, a=np.arange(200, dtype=np.int16), b=np.ones(3))
    return b.getvalue()


@pytest.mark.parametrize("cut", [0, 10, 100, -30, -1])
def test_npz_truncated(tmp_path, cut):
    p = tmp_path / "t.npz"
    p.write_bytes(npz_bytes(False)[:cut])
    raises_clean(ValueError, lambda: read_npz(p, "a"), str(p))


def test_npz_missing_key_is_documented_keyerror(tmp_path):
    p = tmp_path / "t.npz"
    p.write_bytes(npz_bytes(False))
    raises_clean(KeyError, lambda: read_npz(p, "zz"), "zz", "a, b")


def test_npz_never_loads_pickles(tmp_path):
    p = tmp_path / "o.npz"
    np.savez(p, a=np.array([{"x": 1}], dtype=object))
    raises_clean(ValueError, lambda: read_npz(p, "a"), str(p))


def test_npz_corrupt_deflate_stream(tmp_path):
    """finding: a compressed .npz whose deflate data is damaged (CRC-bearing
    header intact) raises zlib.error from zipfile, which read_npz lets
    through instead of its ValueError."""
    data = bytearray(npz_bytes(True))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        info = z.getinfo("a.npy")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 20:start + 28] = b"\xff" * 8
    p = tmp_path / "c.npz"
    p.write_bytes(bytes(data))
    raises_clean(ValueError, lambda: read_npz(p, "a"), str(p))


def test_npy_corrupt_header(tmp_path):
    """finding: a .npy whose header dict is damaged so that numpy falls back to
    its Python-2 header filter raises tokenize.TokenError through read_npy."""
    b = io.BytesIO()
    np.save(b, np.zeros(3, np.int8))
    data = bytearray(b.getvalue())
    data[10] = 0  # first byte of the header text
    p = tmp_path / "h.npy"
    p.write_bytes(bytes(data))
    raises_clean(ValueError, lambda: read_npy(p), str(p))


@pytest.mark.parametrize("text,words", [
    ("const int16_t a[] = { 1, 2", ["unterminated"]),
    ("const int8_t a[] = { 300 };", ["does not fit"]),
    ("const int8_t a[] = { 1/0 };", ["division by zero"]),
    ("const int8_t a[] = { 0.5 };", ["float"]),
    ("const int8_t a[] = { X };", ["unknown identifier"]),
    ("#define A B\n#define B A\nconst int8_t a[] = { A };", ["A"]),
    ("const int8_t a[2] = { 1, 2, 3 };", ["more than"]),
    ("const int16_t a[] = { QMN(int16_t, 14, 1e999) };", ["cannot be quantized"]),
    ("/* open comment\nconst int8_t a[] = { 1 };", ["comment"]),
])
def test_c_array_malformed(text, words):
    raises_clean(ValueError, lambda: read_c_array(text, macro="QMN"), *words)


@pytest.mark.parametrize("text", [
    "const int8_t a[] = { " + "-" * 5000 + "1 };",
    "const int8_t a[] = { " + "(" * 3000 + "1" + ")" * 3000 + " };",
    "const int8_t a[] = { " + "~" * 5000 + "1 };",
], ids=["minus5000", "parens3000", "tilde5000"])
def test_c_array_deep_nesting(text):
    """finding: deeply nested expressions hit the evaluator's recursion limit
    (RecursionError escapes) instead of a CParseError."""
    raises_clean(ValueError, lambda: read_c_array(text), "a")


@pytest.mark.parametrize("dims", ["1e999", "1<<62", "99999999999999"])
def test_c_array_huge_declared_dims(dims):
    """finding: the declared size is trusted for the zero fill: [1e999] gives
    OverflowError, [1<<62] MemoryError (smaller huge sizes allocate and fill
    gigabytes).  Expected: a CParseError naming the array."""
    run_isolated(f"""
        import os, resource
        if "asan" not in os.environ.get("LD_PRELOAD", ""):  # ASan reserves terabytes of address space
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        from mli.io import read_c_array
        try:
            read_c_array("const int8_t a[{dims}] = {{ 1 }};")
            print("returned")
        except ValueError as e:
            print("ValueError", e)
    """, "ValueError")


# ============================================================ IR files
def ir_xml(const_offset=0, const_size=8, edges=None, extra_layers="", prolog=""):
    edges = edges if edges is not None else [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)]
    e = "\n".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>' for a, b, c, d in edges)
    return f"""<?xml version="1.0"?>
{prolog}<net name="t" version="11">
<layers>
<layer id="0" name="a" type="Parameter" version="opset1"><data shape="2" element_type="i32"/>
<output><port id="0" precision="I32" names="a"><dim>2</dim></port></output></layer>
<layer id="1" name="c" type="Const" version="opset1"><data element_type="i32" shape="2" offset="{const_offset}" size="{const_size}"/>
<output><port id="0" precision="I32"><dim>2</dim></port></output></layer>
<layer id="2" name="add" type="Add" version="opset1"><data auto_broadcast="numpy"/>
<input><port id="0" precision="I32"><dim>2</dim></port><port id="1" precision="I32"><dim>2</dim></port></input>
<output><port id="2" precision="I32" names="sum"><dim>2</dim></port></output></layer>
<layer id="3" name="out" type="Result" version="opset1"><input><port id="0" precision="I32"><dim>2</dim></port></input></layer>
{extra_layers}
</layers>
<edges>
{e}
</edges>
</net>
"""


def write_ir(tmp_path, xml, bin_bytes=np.array([10, 20], np.int32).tobytes()):
    x = tmp_path / "m.xml"
    x.write_text(xml)
    if bin_bytes is not None:
        (tmp_path / "m.bin").write_bytes(bin_bytes)
    return x


def test_ir_baseline_runs(tmp_path):
    m = read_model(write_ir(tmp_path, ir_xml()))
    a = np.array([1, 2], np.int32)
    np.testing.assert_array_equal(m({"a": a})["sum"], [11, 22])
    np.testing.assert_array_equal(a, [1, 2])


@pytest.mark.parametrize("prolog", [
    '<!DOCTYPE net [<!ENTITY x "aaaa">]>\n',
    '<!DOCTYPE net SYSTEM "file:///etc/passwd">\n',
    '<!ENTITY x SYSTEM "file:///etc/hostname">\n',
    '<!doctype net>\n',
])
def test_ir_doctype_entity_refused(tmp_path, prolog):
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(prolog=prolog))), "DOCTYPE")


def test_ir_billion_laughs_refused_fast(tmp_path):
    laughs = '<!DOCTYPE net [<!ENTITY a "lol">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9)) + "]>\n"
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(prolog=laughs))), "DOCTYPE")


def test_ir_cycle(tmp_path):
    extra = """<layer id="4" name="loop1" type="Add" version="opset1"><data auto_broadcast="numpy"/>
<input><port id="0" precision="I32"><dim>2</dim></port><port id="1" precision="I32"><dim>2</dim></port></input>
<output><port id="2" precision="I32"><dim>2</dim></port></output></layer>
<layer id="5" name="loop2" type="Add" version="opset1"><data auto_broadcast="numpy"/>
<input><port id="0" precision="I32"><dim>2</dim></port><port id="1" precision="I32"><dim>2</dim></port></input>
<output><port id="2" precision="I32"><dim>2</dim></port></output></layer>"""
    edges = [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0), (0, 0, 4, 0), (5, 2, 4, 1), (4, 2, 5, 0), (0, 0, 5, 1)]
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(edges=edges, extra_layers=extra))), "cycle",
                 "loop1")


@pytest.mark.parametrize("edge,words", [
    ((0, 0, 99, 0), ["dangling", "99"]), ((99, 0, 2, 0), ["dangling", "99"]),
    ((0, 7, 2, 0), ["dangling", "output port 7"]), ((0, 0, 2, 9), ["dangling", "input port 9"]),
])
def test_ir_dangling_edge(tmp_path, edge, words):
    edges = [edge, (1, 0, 2, 1), (2, 2, 3, 0)] if edge[2] != 99 else [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0), edge]
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(edges=edges))), *words)


def test_ir_unconnected_input(tmp_path):
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(edges=[(0, 0, 2, 0), (2, 2, 3, 0)]))),
                 "not connected", "add")


@pytest.mark.parametrize("offset,size,words", [
    (4, 8, ["outside", "8-byte"]), (-4, 8, ["outside"]), (0, 16, ["outside"]), (0, 4, ["too small"]),
    (2**63, 8, ["outside"]), ("x", 8, ["offset", "not an integer"]),
])
def test_ir_bin_offset_size(tmp_path, offset, size, words):
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(const_offset=offset, const_size=size))),
                 "c", *words)


def test_ir_bin_missing_or_truncated(tmp_path):
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(), bin_bytes=None)), "weights file")
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml(), bin_bytes=b"\x00" * 5)), "outside")


@pytest.mark.parametrize("cut", [0, 1, 50, 300, 900])
def test_ir_truncated_xml(tmp_path, cut):
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, ir_xml()[:cut])), "m.xml")


def test_ir_result_without_input(tmp_path):
    """finding: a Result layer without an input port passes the structural
    checks and then fails with IndexError in Model() (ir.py: r.inputs[0])."""
    xml = ir_xml(extra_layers='<layer id="4" name="r2" type="Result" version="opset1"/>')
    raises_clean(IRError, lambda: read_model(write_ir(tmp_path, xml)), "r2")


def test_ir_wrong_inputs_do_not_change_caller_arrays(tmp_path):
    m = read_model(write_ir(tmp_path, ir_xml()))
    a64 = np.array([1, 2], np.int64)
    raises_clean(IRError, lambda: m({"a": a64}), "a", "int32", unchanged=[a64])
    a3 = np.array([1, 2, 3], np.int32)
    raises_clean(IRError, lambda: m({"a": a3}), "a", "shape", unchanged=[a3])
    raises_clean(IRError, lambda: m({"b": a3}), "b")
