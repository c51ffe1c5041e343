"""mli-py against MLI 1.1's own kernel code (../shared/oracle_c): the x86
build of MLI's unmodified sources runs every call here, and its statuses,
buffers and output metadata are the expected values.

* The differential harness over fixed seeds (10,000 cases): 0 mismatches.
* One named regression test per cause the harness once found (C1-C4, A1-A4,
  I1); the expected values come from MLI's library, never from our code.
"""
import contextlib
import faulthandler
import importlib
import io
import sys

import numpy as np
import pytest

import mli
from conftest import SHARED

ORACLE = SHARED / "oracle_c"
pytestmark = pytest.mark.skipif(
    not (ORACLE / "run_diff.py").is_file() or not (ORACLE / "libmli11_conv.so").is_file(),
    reason=f"MLI 1.1's x86 build not found at {ORACLE} (set MLI_SHARED; CI always has it)")


@pytest.fixture(scope="module")
def R():
    """The harness module (it loads MLI's libraries and the mli under test)."""
    sys.path.insert(0, str(ORACLE))
    dont_write = sys.dont_write_bytecode
    try:
        return importlib.import_module("run_diff")
    finally:
        sys.dont_write_bytecode = dont_write


@pytest.fixture(autouse=True)
def _restore_state():
    """The harness sets the rounding mode and the ISA path per case."""
    yield
    mli.set_rounding("convergent")
    mli.use_isa(None)


@contextlib.contextmanager
def _quiet_children():
    """The harness proves an out-of-bounds access of MLI's in a forked child
    that faults on a guard page: no fault handler report from those children."""
    was = faulthandler.is_enabled()
    faulthandler.disable()
    try:
        yield
    finally:
        if was:
            faulthandler.enable()


@pytest.mark.parametrize("seed", [101, 202])
def test_harness_seed_has_no_mismatch(R, seed):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), _quiet_children():
        rc = R.main(["--cases", "5000", "--seed", str(seed)])
    text = out.getvalue()
    assert text.rstrip().endswith("5000 cases, 0 mismatches"), text[-3000:]
    assert "I1 (not counted)" not in text, text[-3000:]
    assert rc == 0


# ---------------------------------------------------------------- one call per cause
i16, i8 = np.int16, np.int8


def _case(family, kind, tensors, rounding="convergent", **kw):
    c = dict(family=family, kind=kind, tensors=tensors, rounding=rounding, isa_index=0, index=-1, key=family,
             tags=[])
    c.update(kw)
    return c


def _out(R, nbytes, et, frac, rank=0, shape=(0, 0, 0, 0)):
    return R.tspec(raw=bytes(nbytes), et=et, frac=frac, shape=list(shape), rank=rank)


def _values(R, case, result, name="out"):
    et = case["tensors"][name]["el_type"] if case["tensors"].get(name) else R.FX16
    return np.frombuffer(result["bufs"][name], i8 if et == R.FX8 else i16)


def _agrees(R, case):
    """MLI's result, after checking that mli-py's public API gives the same
    status, buffers and metadata on every ISA path, in both rounding modes."""
    first = None
    for rounding in ("convergent", "up"):
        for isa in range(len(mli.supported_isas())):
            c = dict(case, rounding=rounding, isa_index=isa)
            rm, rp, diffs, _ = R.run_case(c)
            assert not diffs, (rounding, mli.supported_isas()[isa], diffs)
            first = first or rm
    return first


def test_C1_fx16_accumulator_clamps_after_every_mac(R):
    """SPEC 4's worked example: MLI gives 511 where one clamp per sum gives 512."""
    case = _case("fc", "fx16", {"in": R.tspec(np.array([32767, 32767], i16), 15),
                                "w": R.tspec(np.array([[32767, -32767]], i16), 15),
                                "b": R.tspec(np.array([32767], i16), 0), "out": _out(R, 2, R.FX16, 0)})
    rm = _agrees(R, case)
    assert rm["status"] == 0
    assert _values(R, case, rm).tolist() == [511]  # as MLI's library computes it


@pytest.mark.parametrize("kind", ["fx16", "fx8w16d", "fx8"])
def test_C1_rnn_and_lstm_near_the_limit(R, kind):
    """Long full-scale rows whose partial sums cross +-2^39 in both parts,
    through the SIMD paths (batch modes) and the plain path."""
    rng = np.random.default_rng(7)
    dt = i8 if kind == "fx8" else i16
    wt = i16 if kind == "fx16" else i8
    wmax = 32767 if wt is i16 else 127
    dmax = 127 if dt is i8 else 32767
    N, M, T = 600, 24, 3
    x = np.where(rng.random((T, N)) < .5, -dmax - 1, dmax).astype(dt)
    h0 = np.full(M, dmax, dt)
    w = np.where(rng.random((M, N + M)) < .5, -wmax, wmax).astype(wt)
    w[:, : N // 2] = wmax  # a long run of one sign first, then both signs
    b = np.full(M, wmax, wt)
    frac = 7 if dt is i8 else 15
    for mode in (0, 1, 2):
        xm = x[0] if mode == 0 else x
        tensors = {"in": R.tspec(xm, frac), "prev": R.tspec(h0, frac), "w": R.tspec(w, frac),
                   "b": R.tspec(b, 0), "out": _out(R, M * T * dt().itemsize, R.FX8 if dt is i8 else R.FX16, 0),
                   "ir": _out(R, M * dt().itemsize, R.FX8 if dt is i8 else R.FX16, 0)}
        rm = _agrees(R, _case("rnn", kind, tensors, mode=mode, act=0))
        assert rm["status"] == 0


def test_C2_rnn_mode_outside_the_enum_computes(R):
    case = _case("rnn", "fx16", {"in": R.tspec(np.array([[100], [200]], i16), 8),
                                 "prev": R.tspec(np.array([0], i16), 15),
                                 "w": R.tspec(np.array([[16384, 8192]], i16), 14),
                                 "b": R.tspec(np.array([0], i16), 14), "out": _out(R, 4, R.FX16, 0)}, mode=3, act=1)
    rm = _agrees(R, case)
    assert rm["status"] == 0 and rm["meta"]["out"]["rank"] == 2


@pytest.mark.parametrize("mode,act", [(3, 0), (7, 2), (1, 5), (2, 9), (0, -1), (-2, 1)])
def test_C2_cfg_values_outside_the_enums(R, mode, act):
    """Basic RNN and LSTM with every kind of out-of-enum cfg value; the
    state of the steps after the first is read from out as MLI does."""
    rng = np.random.default_rng(abs(mode * 31 + act))
    for lstm in (False, True):
        T, N, M = 3, 5, 4
        K = 4 * M if lstm else M
        x = rng.integers(-3000, 3000, (T, N)).astype(i16)
        tensors = {"in": R.tspec(x if mode != 0 else x[0], 12), "prev": R.tspec(rng.integers(-900, 900, M).astype(i16), 15),
                   "w": R.tspec(rng.integers(-9000, 9000, (4, M, N + M) if lstm else (M, N + M)).astype(i16), 14),
                   "b": R.tspec(rng.integers(-900, 900, (4, M) if lstm else M).astype(i16), 14),
                   "out": R.tspec(raw=rng.integers(0, 256, 2 * M * T).astype(np.uint8).tobytes(), et=R.FX16, frac=9,
                                  shape=[0, 0, 0, 0], rank=0),
                   "ir": _out(R, 2 * K, R.FX16, 0)}
        if lstm:
            tensors["cell"] = R.tspec(rng.integers(-2000, 2000, M).astype(i16), 11)
        rm = _agrees(R, _case("lstm" if lstm else "rnn", "fx16", tensors, mode=mode, act=act))
        assert rm["status"] == 0


def test_C3_convert_tensor_ignores_other_element_types(R):
    case = _case("convert_tensor", "", {"in": R.tspec(raw=np.array([1, 2], i8).tobytes(), et=R.ASYM8, frac=3,
                                                      shape=[2], rank=1)}, out_et=R.FX8, out_frac=3)
    rm = _agrees(R, case)
    assert rm["status"] == 0


def test_convert_tensor_out_sized_by_mlis_checks_not_the_input_capacity(R):
    """Issue 19 item 2: a non-fx input of capacity 0 whose shape asks for 3
    elements.  MLI 1.1, given an int8 out of the 3 bytes its check asks for,
    answers OK with out's shape (1, 1, 1, 3); mli.convert_tensor allocated a
    1-byte out (sized through the input's capacity) and raised NOT_ENGH_MEM."""
    case = _case("convert_tensor", "", {"in": R.tspec(raw=bytes(6), et=4, frac=1, shape=[1, 1, 1, 3], rank=4,
                                                      capacity=0)}, out_et=R.FX8, out_frac=5)
    rm = _agrees(R, case)
    assert rm["status"] == 0
    t = mli.Tensor.raw(bytearray(6), shape=(1, 1, 1, 3), el_type=4, frac_bits=1, capacity=0)
    out = mli.convert_tensor(t, 0, 5)
    assert (out.shape, out.frac_bits, out.el_type, out.capacity) == ((1, 1, 1, 3), 5, mli.EL_FX_8, 3)


def test_C4_eltwise_keeps_in2_status(R):
    bad1 = R.tspec(np.array([[1, 2], [3, 4]], i16), 8)
    bad1["mem_stride"] = [-1, 0, 0, 0]
    case = _case("eltwise", "fx16", {"in1": bad1, "in2": R.tspec(np.array([[10, 20], [30, 40]], i16), 8),
                                     "out": _out(R, 8, R.FX16, 8, 1)}, op="add")
    rm = _agrees(R, case)
    assert rm["status"] == 0 and _values(R, case, rm).tolist() == [11, 22, 33, 44]


@pytest.mark.parametrize("lstm", [False, True])
def test_A1_batch_to_last_out_of_one_step(R, lstm):
    M = 1
    tensors = {"in": R.tspec(np.array([[1000], [2000], [3000]], i16), 12), "prev": R.tspec(np.array([0], i16), 15),
               "w": R.tspec(np.array([[[16384, 8192]]] * 4 if lstm else [[16384, 8192]], i16), 14),
               "b": R.tspec(np.array([[0]] * 4 if lstm else [0], i16), 14), "out": _out(R, 2 * M, R.FX16, 0),
               "ir": _out(R, 8 * M if lstm else 2 * M, R.FX16, 0)}
    if lstm:
        tensors["cell"] = R.tspec(np.array([100], i16), 12)
    rm = _agrees(R, _case("lstm" if lstm else "rnn", "fx16", tensors, mode=2, act=1))
    assert rm["status"] == 0


@pytest.mark.parametrize("rank", [5, 6])
@pytest.mark.parametrize("out_shape0", [0, 1, 2])
def test_C7_eltwise_rank_beyond_four_reads_the_struct(R, rank, out_shape0):
    """Eltwise reaches the layout check with an operand of rank 5 or 6 (its
    own bad status only remembered): MLI reads mem_stride[4..5] and
    shape[4..5] past the arrays, which in its struct are out's shape[0..1]
    and in1's rank and el_type.  Harness seed 1129306, case 18025: out's
    shape[0] of 0 passed the check in MLI (BAD_TENSOR) where mli-py said
    INCOMPATEBLE_TENSORS."""
    in1 = R.tspec(raw=bytes(1), et=R.FX8, frac=9, shape=[1, 1, 0, 0], rank=rank)
    out = R.tspec(raw=bytes(5), et=R.FX8, frac=2, shape=[out_shape0, 0, 0, 0], rank=4, mem_stride=(1, 3, 2, 2))
    case = _case("eltwise", "fx8", {"in1": in1, "in2": R.tspec(np.array([7], i8), 9), "out": out}, op="max")
    rm = _agrees(R, case)
    assert rm["status"] != 0


@pytest.mark.parametrize("rank", [5, 6])
@pytest.mark.parametrize("kind,dt,et", [("fx8", i8, 0), ("fx16", i16, 1)])
@pytest.mark.parametrize("in2_n", [1, 4])
def test_C7_eltwise_rank_beyond_four_counts_past_the_shape(R, rank, kind, dt, et, in2_n):
    """The same reads in the element count: an operand of rank 5 with shape
    [1, 1, 1, 1] has 5 elements for MLI (shape[4] is the rank), 5 * el_type
    at rank 6, so it is never a scalar; mli-py had counted 1 and called it a
    bad scalar (BAD_TENSOR where MLI gives SHAPE_MISMATCH or
    INCOMPATEBLE_TENSORS)."""
    in1 = R.tspec(raw=bytes(8), et=et, frac=9, shape=[1, 1, 1, 1], rank=rank)
    out = R.tspec(raw=bytes(16), et=et, frac=2, shape=[4, 0, 0, 0], rank=1, mem_stride=(1, 3, 2, 2))
    case = _case("eltwise", kind, {"in1": in1, "in2": R.tspec(np.arange(in2_n, dtype=dt), 9), "out": out}, op="add")
    rm = _agrees(R, case)
    assert rm["status"] != 0


def test_A2_eltwise_rank0_operand_with_out(R):
    case = _case("eltwise", "fx8", {"in1": R.tspec(scalar=5, frac=3, et=R.FX8),
                                    "in2": R.tspec(np.arange(4, dtype=i8), 3), "out": _out(R, 4, R.FX8, 3, 1)},
                 op="add")
    rm = _agrees(R, case)
    assert rm["status"] == 0 and _values(R, case, rm).tolist() == [5, 6, 7, 8]


@pytest.mark.parametrize("which", ["data", "tensor", "capacity_after_shape"])
def test_A3_out_checks_in_mli_order(R, which):
    o = _out(R, 4, R.FX16, 0)
    if which == "data":
        o["data_null"] = True
        case = _case("tanh", "fx16", {"in": R.tspec(np.array([1, 2], i16), 12), "out": o})
    elif which == "tensor":
        case = _case("tanh", "fx16", {"in": R.tspec(np.array([1, 2], i16), 12), "out": None})
    else:  # FC: a shape mismatch comes before the out capacity
        case = _case("fc", "fx16", {"in": R.tspec(np.array([1, 2, 3], i16), 12),
                                    "w": R.tspec(np.ones((4, 2), i16), 12), "b": R.tspec(np.zeros(4, i16), 12),
                                    "out": _out(R, 2, R.FX16, 0)})
    rm = _agrees(R, case)
    assert rm["status"] == {"data": 1, "tensor": 1, "capacity_after_shape": 2}[which]


def test_A4_tensor_checks_before_cfg(R):
    bad_in = R.tspec(np.array([1, 2], i16), 12)
    bad_in["rank"] = 5
    case = _case("rnn", "fx16", {"in": bad_in, "prev": R.tspec(np.array([0], i16), 15),
                                 "w": R.tspec(np.array([[1, 2, 3]], i16), 14), "b": R.tspec(np.array([0], i16), 14),
                                 "out": _out(R, 2, R.FX16, 0)}, mode=0, act=9)
    rm = _agrees(R, case)
    assert rm["status"] == 1  # BAD_TENSOR


@pytest.mark.parametrize("family", ["tanh", "sigm", "relu"])
def test_I1_metadata_beyond_rank_untouched(R, family):
    o = R.tspec(raw=bytes(4), et=R.FX16, frac=0, shape=[9, 9, 9, 9], rank=4)
    o["mem_stride"] = [0, 0, 5, 6]
    case = _case(family, "fx16", {"in": R.tspec(np.array([1, 2], i16), 12), "out": o}, relu=1)
    rm = _agrees(R, case)
    assert rm["meta"]["out"]["shape"][1:] == [9, 9, 9] and rm["meta"]["out"]["mem_stride"][1:] == [0, 5, 6]


def test_C5_lstm_cell_with_set_strides_skips_the_output_activation(R):
    """An LSTM cell tensor whose mem_stride is set and not dense (MLI checks no
    layout of `cell`): MLI's tanh/sigm of the cell into the out row refuses it
    without failing the call, so h = out(p * o) takes p from what the row held
    and out's frac bits end as 0 (found by run_diff --seed 901 --only 764)."""
    case = R.make_case(901, 764)
    rm = _agrees(R, case)
    assert rm["status"] == 0 and rm["meta"]["out"]["frac"] == 0     # MLI's answer
    rng = np.random.default_rng(55)
    for i in range(48):    # every kind, mode and activation, strides 2..7
        c = R.gen_rnn(rng, True)
        cell = c["tensors"]["cell"]
        st = int(rng.integers(2, 8))
        need = (1 + (cell["shape"][0] - 1) * st) * (2 if cell["el_type"] == R.FX16 else 1)
        if cell["capacity"] < need:
            cell["bytes"] += bytes(need - len(cell["bytes"]))
            cell["capacity"] = need
        cell["mem_stride"] = [st, 0, 0, 0]
        c.update(isa_index=0, index=i)
        _agrees(R, c)


def test_C6_eltwise_broadcast_operand_read_once_under_an_aliased_out(R):
    """run_diff --seed 7043 case 4611: an out over the one-element operand.  MLI
    reads the broadcast value once, before its loop, so the elements after the
    first still see the old value (mli-py reread it after out[0] was written)."""
    assert R.main(["--seed", "7043", "--only", "4611"]) == 0


@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
@pytest.mark.parametrize("kind,dt,et", [("fx16", i16, 1), ("fx8", i8, 0)])
@pytest.mark.parametrize("scalar_first", [True, False])
def test_C6_eltwise_broadcast_over_its_own_out(R, op, kind, dt, et, scalar_first):
    """Every op and type, the scalar as in1 or in2, out over the scalar's buffer:
    MLI's library (called here directly) and mli-py give the same buffer."""
    import ctypes as C
    mli11 = sys.modules.get("mli11") or importlib.import_module("mli11")
    n = 9
    other = np.array([(-1) ** i * (7 * i + 3) for i in range(n)], dt)
    results = []
    for impl in ("mli", "mlipy"):
        buf = np.zeros(n, dt)
        buf[0] = 20
        if impl == "mli":
            lib = mli11.lib("conv")
            lib.reset_dsp()

            def T(arr, shape):
                t = mli11.MliTensor()
                t.data, t.capacity, t.rank, t.el_type = arr.ctypes.data, arr.nbytes, len(shape), et
                for i, s in enumerate(shape):
                    t.shape[i] = s
                t.el_params.fx.frac_bits = 3
                return t
            s, o, out = T(buf, [1]), T(other, [n]), T(buf, [n])
            args = (s, o) if scalar_first else (o, s)
            st = lib.fn(f"mli_krn_eltwise_{op}_{kind}")(C.byref(args[0]), C.byref(args[1]), C.byref(out))
            assert st == 0
        else:
            s = mli.Tensor.raw(buf, shape=(1,), el_type=et, frac_bits=3)
            out = mli.Tensor.raw(buf, shape=(n,), el_type=et, frac_bits=3)
            o = mli.Tensor(other.copy(), 3)
            args = (s, o) if scalar_first else (o, s)
            getattr(mli, f"eltwise_{op}_{kind}")(*args, out=out)
        results.append(buf.tolist())
    assert results[0] == results[1]
