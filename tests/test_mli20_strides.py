"""Strides and shapes near 2^31 in mli.v2 (issue 20, N26).

MLI 2.0.2 computes the size checks of a tensor in 32 bits: the products
shape[i+1] * mem_stride[i+1] of the stride check, the extent
1 + sum (shape - 1) * mem_stride and its product with the element size wrap
around and are compared as signed numbers; the dense strides of its
contiguity test wrap too; the cells' output and scratch sizes
(T_out * M * size, gates * M * size) are 32-bit unsigned products.  Where
such a check passes although the tensor reaches past its capacity, MLI's
next check decides the status -- mli-py returns that status too -- and where
every check passes MLI goes on and accesses memory outside the buffer
(SIGSEGV in the x86 build): mli-py refuses those calls (NOT_ENGH_MEM, or
BAD_FUNC_CFG for the scratch) with ``mlipy_safety``, before any access.

The expected statuses come from MLI 2.0.2's own library (through ctypes;
calls that may crash run in a forked child) and, without it, from the
numpy model of the checks (mli.reference.mli2)."""
from __future__ import annotations

import numpy as np
import pytest

import mli
import mli.v2 as v2
from mli.reference import mli2 as R
from mli.reference.mli2.checks import _check_tensor
from mli20_ctypes import AVAILABLE, SKIP_REASON, Oracle

BIG = 2 ** 31 - 1
needs_oracle = pytest.mark.skipif(not AVAILABLE, reason=SKIP_REASON)
DT = {v2.FX_8: np.int8, v2.FX_16: np.int16, v2.SA_8: np.int8, v2.SA_32: np.int32}
EL = {"fx8": v2.FX_8, "fx16": v2.FX_16, "sa8": v2.SA_8}


@pytest.fixture(scope="module")
def oracle():
    if not AVAILABLE:
        pytest.skip(SKIP_REASON)
    return Oracle("conv")


def ours(fn, *args):
    """(status, mlipy_safety) of an mli.v2 call."""
    try:
        getattr(v2, fn)(*args)
        return 0, False
    except mli.MliError as e:
        return int(e.status), e.mlipy_safety


def agree(oracle, fn, make):
    """mli-py's answer to the call make() builds equals MLI's status where MLI
    returns one, and is a safety refusal where MLI crashes.  Returns MLI's."""
    theirs = oracle.call_forked(fn, *make())
    got = ours(fn, *make())
    if theirs < 0:                                   # MLI crashed (a signal)
        assert got[1] and got[0] in (5, 4), (fn, theirs, got)
    else:
        assert got == (theirs, False), (fn, theirs, got)
    return theirs


def tensor(shape, strides, el=v2.FX_16, nbytes=64, frac=8, capacity=None):
    t = v2.Tensor(np.zeros(nbytes // np.dtype(DT[el]).itemsize, DT[el]), el, shape, strides, frac_bits=frac,
                  capacity=capacity)
    if el in (v2.SA_8, v2.SA_32):
        t.set_sa(0, 16384, 20)
    return t


# ---------------------------------------------------------------------------- tanh / sigm

def test_the_audit_example_gets_mlis_status():
    """MLI's wrapped extent passes the size check; its stride check then says
    INCOMPATEBLE_TENSORS (mli-py said NOT_ENGH_MEM)."""
    x = v2.Tensor.fx(np.arange(4), 8)
    x.mem_stride[0] = BIG
    with pytest.raises(mli.MliIncompatibleTensorsError) as e:
        v2.tanh_fx16(x)
    assert not e.value.mlipy_safety and e.value.argument == "in"


CASES = [((4,), (BIG,)), ((2,), (2 ** 30 + 5,)), ((3,), (BIG,)), ((2, 2), (BIG, 1)), ((2, 2), (2 ** 30, 1)),
         ((3, 2), (2 ** 30 + 1, 1)), ((9, 2), (2 ** 29, 1)), ((2, 2, 2), (2 ** 30, 2 ** 30, 1)),
         ((2, 3, 1), (1, 715827883, 1)), ((2, 3, 1), (1, 715827882, 1)), ((2, 4, 2), (5, 2 ** 30, 1)),
         ((2, 2, 1), (4, BIG, 1)), ((1, 1, 2), (1, 2, 1)), ((3, 3, 1), (BIG, 715827883, 1))]


@needs_oracle
@pytest.mark.parametrize("fn", ["tanh", "sigm"])
@pytest.mark.parametrize("kind", ["fx16", "fx8", "sa8"])
@pytest.mark.parametrize("role", ["in", "out"])
@pytest.mark.parametrize("shape, strides", CASES)
def test_transfer_statuses_and_crashes_are_mlis(oracle, fn, kind, role, shape, strides):
    el = EL[kind]

    def make():
        odd = tensor(shape, strides, el)
        plain = tensor(shape, None, el, nbytes=int(np.prod(shape)) * np.dtype(DT[el]).itemsize)
        return (odd, None, plain) if role == "in" else (plain, None, odd)

    agree(oracle, f"{fn}_{kind}", make)


def _random_tensor(rng):
    r = int(rng.integers(1, 5))
    shape = [int(rng.choice([1, 2, 3, 5, 17, int(rng.integers(1, 2 ** 31))])) for _ in range(r)]
    strides = []
    for _ in range(r):
        c = rng.random()
        strides.append(int(rng.integers(-2, 2 ** 31)) if c < 0.45 else
                       int(rng.choice([1, 2, 2 ** 29 + 1, 2 ** 30, BIG, 715827883, 858993460])) if c < 0.8 else
                       int(rng.integers(1, 64)))
    return shape, strides


@pytest.mark.parametrize("seed", range(4))
def test_random_strides_get_the_status_of_mlis_checks(seed):
    """1,000 random shapes and strides for tanh's input, out of another type so
    that the call stops at the type check when TENSOR(in) passes: mli-py's
    status equals that of the numpy model of MLI's 32-bit checks, and MLI's
    own where ../shared is present."""
    rng = np.random.default_rng([seed, 26])
    orc = Oracle("conv") if AVAILABLE else None
    for k in range(250):
        kind = ["fx16", "fx8", "sa8"][k % 3]
        el = EL[kind]
        shape, strides = _random_tensor(rng)
        cap = int(rng.choice([0, 2, 8, 64, 256]))
        x = tensor(shape, strides, el, nbytes=256, capacity=cap)
        out = v2.Tensor.fx([1, 2], 3, "fx8" if kind == "fx16" else "fx16")
        got = ours(f"tanh_{kind}", x, None, out)
        ref = R.Tensor(shape=list(shape) + [0] * (4 - len(shape)), mem_stride=list(strides) + [0] * (4 - len(strides)),
                       rank=len(shape), el_type=el, capacity=cap, buf=R.Buffer.of(np.zeros(256, np.uint8)))
        want = _check_tensor(ref) or R.TYPE_MISMATCH
        assert got == (want, False), (shape, strides, cap, got, want)
        if orc is not None:
            assert orc.call(f"tanh_{kind}", x, None, out) == want


# ---------------------------------------------------------------------------- the cells

def cell_args(cell_kind, kind, T=3, N=2, M=3):
    G = 4 if cell_kind == "lstm" else 3
    d, w, b = {"fx16": ("fx16", "fx16", "fx16"), "fx16_fx8_fx8": ("fx16", "fx8", "fx8"),
               "sa8_sa8_sa32": ("sa8", "sa8", "sa32")}[kind]
    rng = np.random.default_rng(7)

    def t(shape, el, frac, lim=60):
        if el in ("sa8", "sa32"):
            sfb = 28 if el == "sa32" else 21
            return v2.Tensor.sa(rng.integers(-lim, lim, shape), 0, 16384, sfb, -1, el)
        return v2.Tensor.fx(rng.integers(-lim, lim, shape), frac, el)

    x, h = t((T, N), d, 12), t((M,), d, 15)
    wi, wo, bias = t((G, N, M), w, 7), t((G, M, M), w, 7), t((G, M), b, 10)
    cell = t((M,), d, 12)
    out = v2.Tensor.zeros((T, M), d, 15)
    if d == "sa8":
        out.set_sa(0, 16384, 21)
    return {"in": x, "prev_out": h, "weights_in": wi, "weights_out": wo, "bias": bias, "cell": cell, "out": out}


def cell_call(cell_kind, a, scratch=None, results=1):
    G = 4 if cell_kind == "lstm" else 3
    scratch = np.zeros(64, np.uint8) if scratch is None else scratch
    cfg = v2.RnnCellCfg(0, results, 1, scratch)
    args = (a["in"], a["prev_out"], a["weights_in"], a["weights_out"], a["bias"], None, None, cfg)
    return args + ((a["cell"],) if G == 4 else ()) + (a["out"],)


KINDS = ["fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell_kind", ["lstm", "gru"])
@pytest.mark.parametrize("role", ["in", "out", "prev_out", "cell"])
def test_cell_tensor_with_stride_2_31_minus_1(cell_kind, kind, role):
    """The audit's cases: MLI 3 (its contiguity / innermost-stride checks), mli-py was 5."""
    if role == "cell" and cell_kind == "gru":
        pytest.skip("the GRU has no cell")
    a = cell_args(cell_kind, kind)
    a[role].mem_stride[0] = BIG
    assert ours(f"{cell_kind}_cell_{kind}", *cell_call(cell_kind, a)) == (3, False)


@needs_oracle
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell_kind", ["lstm", "gru"])
@pytest.mark.parametrize("role, stride", [("in", BIG), ("out", BIG), ("prev_out", BIG), ("cell", BIG),
                                          ("bias", 2 ** 30), ("bias", BIG), ("weights_in", BIG),
                                          ("weights_out", BIG), ("weights_in", 2 ** 30), ("weights_out", 2 ** 29)])
def test_cell_strides_near_2_31_against_mli(oracle, cell_kind, kind, role, stride):
    """Statuses where MLI returns one; where MLI passes every check and crashes
    (bias or weights rows 2^30 elements apart), a safety refusal."""
    if role == "cell" and cell_kind == "gru":
        pytest.skip("the GRU has no cell")

    def make():
        a = cell_args(cell_kind, kind)
        a[role].mem_stride[0] = stride
        return cell_call(cell_kind, a)

    theirs = agree(oracle, f"{cell_kind}_cell_{kind}", make)
    if role in ("bias", "weights_in") and stride >= 2 ** 30:
        assert theirs < 0                            # MLI's SIGSEGV of the audit


@pytest.mark.parametrize("kind", KINDS)
def test_lstm_bias_rows_2_30_apart_are_a_safety_refusal(kind):
    a = cell_args("lstm", kind)
    a["bias"].mem_stride[0] = 2 ** 30
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        v2.__dict__[f"lstm_cell_{kind}"](*cell_call("lstm", a))
    assert e.value.mlipy_safety and e.value.argument == "bias"
    assert "MLI 2.0.2 would not detect this" in str(e.value)


def _huge_m(cell_kind, T, results, scratch_bytes, bias_frac=8):
    """A cell whose M = 2^30 passes MLI's 32-bit checks with 64-byte buffers."""
    M, G = 2 ** 30, (4 if cell_kind == "lstm" else 3)

    def t(shape, st, frac=8):
        return tensor(shape, st, v2.FX_16, 64, frac)

    a = {"in": t((T, 1), (1, 1)), "prev_out": t((M,), (1,)), "weights_in": t((G, 1, M), (M, M, 1)),
         "weights_out": t((G, M, M), (1, M, 1)), "bias": t((G, M), (M, 1), bias_frac), "cell": t((M,), (1,)),
         "out": t((1,), (1,))}
    return cell_call(cell_kind, a, np.zeros(64, np.uint8) if scratch_bytes else np.zeros(1, np.uint8),
                     results)


# (cell, T, results, scratch of 64 bytes, bias frac): MLI 2.0.2's status (verified with its library)
HUGE_M = [("lstm", 2, 1, True, 30, 3),     # T_out * M * 2 = 2^32 wraps to 0: passes; gates * M * 2 too
          ("lstm", 2, 0, True, 30, 1),     # LAST: 2^31, compared unsigned: out too small
          ("lstm", 3, 1, True, 30, 1),
          ("lstm", 16, 1, True, 30, 3),
          ("lstm", 2, 1, False, 30, 3),    # a 1-byte scratch: 4 * 2^30 * 2 wraps to 0, not above 1 byte
          ("gru", 2, 1, True, 30, 4),      # 3 * 2^30 * 2 = 2^31 (unsigned): the scratch is too small
          ("gru", 16, 1, True, 30, 4)]


@pytest.mark.parametrize("cell_kind, T, results, scratch, bias_frac, status", HUGE_M)
def test_cell_size_products_wrap_in_32_bits(cell_kind, T, results, scratch, bias_frac, status):
    args = _huge_m(cell_kind, T, results, scratch, bias_frac)
    assert ours(f"{cell_kind}_cell_fx16", *args) == (status, False)


@needs_oracle
@pytest.mark.parametrize("cell_kind, T, results, scratch, bias_frac, status", HUGE_M)
def test_cell_size_products_wrap_in_32_bits_against_mli(oracle, cell_kind, T, results, scratch, bias_frac, status):
    assert agree(oracle, f"{cell_kind}_cell_fx16", lambda: _huge_m(cell_kind, T, results, scratch, bias_frac)) == status


@needs_oracle
def test_lstm_passing_every_wrapped_check_crashes_mli_and_is_refused(oracle):
    args = lambda: _huge_m("lstm", 2, 1, True, 8)           # noqa: E731 (fresh objects per call)
    assert oracle.call_forked("lstm_cell_fx16", *args()) < 0
    got = ours("lstm_cell_fx16", *args())
    assert got == (5, True)


@pytest.mark.parametrize("kind", KINDS)
def test_wrapped_dense_strides_are_contiguous_as_in_mli(kind):
    """out (1, 65537, 65536) with strides (65536, 65536, 1): 65537 * 65536 wraps to
    65536, so MLI takes out as contiguous and writes its T_out * M elements;
    mli-py said INCOMPATEBLE_TENSORS (then NOT_ENGH_MEM)."""
    a = cell_args("lstm", kind)
    el = a["out"].el_type
    out = v2.Tensor(np.zeros(2 ** 17 // np.dtype(DT[el]).itemsize, DT[el]), el, (1, 65537, 65536),
                    (65536, 65536, 1), frac_bits=15)
    if el == v2.SA_8:
        out.set_sa(0, 16384, 21)
    ref = v2.Tensor.zeros((3, 3), out.el_type, 15)
    if el == v2.SA_8:
        ref.set_sa(0, 16384, 21)
    c1 = v2.Tensor(a["cell"].buffer.copy(), a["cell"].el_type, (3,), frac_bits=a["cell"].frac_bits)
    if el == v2.SA_8:
        c1.set_sa(0, 16384, 21)
    f = getattr(v2, f"lstm_cell_{kind}")
    f(*cell_call("lstm", dict(a, out=ref, cell=c1)))
    f(*cell_call("lstm", dict(a, out=out)))
    assert out.rank == 2 and out.shape[:2] == [3, 3]
    assert out.numpy().tolist() == ref.numpy().tolist()
    assert a["cell"].numpy().tolist() == c1.numpy().tolist()


@needs_oracle
@pytest.mark.parametrize("kind", KINDS)
def test_wrapped_dense_strides_against_mli(oracle, kind):
    def make():
        a = cell_args("lstm", kind)
        el = a["out"].el_type
        out = v2.Tensor(np.zeros(2 ** 17 // np.dtype(DT[el]).itemsize, DT[el]), el, (1, 65537, 65536),
                        (65536, 65536, 1), frac_bits=15)
        if el == v2.SA_8:
            out.set_sa(0, 16384, 21)
        return cell_call("lstm", dict(a, out=out))

    a_mli, a_ours = make(), make()
    assert oracle.call("lstm_cell_" + kind, *a_mli) == 0
    getattr(v2, f"lstm_cell_{kind}")(*a_ours)
    assert np.array_equal(a_mli[-1].buffer, a_ours[-1].buffer) and np.array_equal(a_mli[-2].buffer, a_ours[-2].buffer)


# ---------------------------------------------------------------------------- fully_connected, rnn_dense

@needs_oracle
@pytest.mark.parametrize("stride", [2 ** 30, BIG, 2 ** 29 + 1])
@pytest.mark.parametrize("kind", ["fx16", "fx16_fx8_fx8", "fx8", "sa8_sa8_sa32"])
def test_fully_connected_weight_rows_far_apart(oracle, kind, stride):
    def make():
        d, w, b = {"fx16": ("fx16",) * 3, "fx16_fx8_fx8": ("fx16", "fx8", "fx8"), "fx8": ("fx8",) * 3,
                   "sa8_sa8_sa32": ("sa8", "sa8", "sa32")}[kind]
        sa = d == "sa8"
        x = v2.Tensor.sa([1, 2, 3], 0, 16384, 21) if sa else v2.Tensor.fx([1, 2, 3], 4, d)
        wt = v2.Tensor.sa(np.ones((3, 2)), 0, 16384, 21) if sa else v2.Tensor.fx(np.ones((3, 2)), 4, w)
        wt.mem_stride[0] = stride
        bias = v2.Tensor.sa([1, 2], 0, 16384, 28, -1, "sa32") if sa else v2.Tensor.fx([1, 2], 4, b)
        out = v2.Tensor.zeros((2,), d, 6)
        if sa:
            out.set_sa(0, 16384, 20)
        return x, wt, bias, v2.FullyConnectedCfg(0), out

    agree(oracle, f"fully_connected_{kind}", make)


@needs_oracle
@pytest.mark.parametrize("stride", [2 ** 30, BIG])
@pytest.mark.parametrize("kind", KINDS)
def test_rnn_dense_weight_rows_far_apart(oracle, kind, stride):
    def make():
        sa = kind.startswith("sa8")
        w8 = "fx16" if kind == "fx16" else "fx8"
        x = v2.Tensor.sa([1, 2, 3], 0, 16384, 21) if sa else v2.Tensor.fx([1, 2, 3], 4)
        wt = v2.Tensor.sa(np.ones((3, 2)), 0, 16384, 21) if sa else v2.Tensor.fx(np.ones((3, 2)), 4, w8)
        wt.mem_stride[0] = stride
        bias = v2.Tensor.sa([1, 2], 0, 16384, 28, -1, "sa32") if sa else v2.Tensor.fx([1, 2], 4, w8)
        out = v2.Tensor.zeros((2,), "sa8" if sa else "fx16", 6)
        if sa:
            out.set_sa(0, 16384, 20)
        return [x], [wt], bias, v2.RnnDenseCfg(1), out

    agree(oracle, f"rnn_dense_{kind}", make)
