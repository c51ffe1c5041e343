"""The C core against the slow numpy reference (mli.reference), on random
shapes, values and frac bits, in both rounding modes, exactly."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mli
from mli import reference as R

KINDS = ["fx8", "fx16", "fx8w16d"]
DBITS = {"fx8": 8, "fx16": 16, "fx8w16d": 16}
WBITS = {"fx8": 8, "fx16": 16, "fx8w16d": 8}
DT = {8: np.int8, 16: np.int16}
ROUNDINGS = st.sampled_from(["convergent", "up"])


def ints(rng, shape, bits, scale=1.0):
    hi = int((2 ** (bits - 1)) * scale)
    return rng.integers(-hi, hi, size=shape, endpoint=False).astype(DT[bits])


@st.composite
def dense_setup(draw, kinds=KINDS):
    kind = draw(st.sampled_from(kinds))
    db, wb = DBITS[kind], WBITS[kind]
    f_in = draw(st.integers(0, db - 1))
    f_w = draw(st.integers(0, wb - 1))
    f_b = draw(st.integers(0, min(f_in + f_w, wb + 2)))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([1.0, 0.25, 0.01]))
    return kind, db, wb, f_in, f_w, f_b, np.random.default_rng(seed), scale


@given(dense_setup(), st.integers(1, 40), st.integers(1, 12), st.integers(0, 20), ROUNDINGS)
def test_fully_connected(setup, N, K, f_out, rounding):
    kind, db, wb, f_in, f_w, f_b, rng, scale = setup
    x, w, b = ints(rng, N, db, scale), ints(rng, (K, N), wb, scale), ints(rng, K, wb, scale)
    with mli.rounding(rounding):
        y = getattr(mli, f"fully_connected_{kind}")(mli.Tensor(x, f_in), mli.Tensor(w, f_w), mli.Tensor(b, f_b),
                                                    out_frac_bits=f_out)
    ref = R.fully_connected(kind, x, f_in, w, f_w, b, f_b, f_out, rounding=rounding)
    np.testing.assert_array_equal(y.numpy(), ref)


@given(dense_setup(), st.integers(1, 12), st.integers(1, 10), st.integers(1, 6), st.sampled_from([0, 1, 2]),
       st.sampled_from([0, 1, 2]), st.integers(0, 15), ROUNDINGS, st.data())
def test_basic_rnn_cell(setup, N, M, T, mode, act, f_out, rounding, data):
    kind, db, wb, f_in, f_w, f_b, rng, scale = setup
    f_h = data.draw(st.integers(max(0, f_in - 4), db - 1))
    f_out = min(f_out, db - 1)
    x = ints(rng, (T, N) if mode else (N,), db, scale)
    h0 = ints(rng, M, db, scale)
    L = data.draw(st.integers(1, 4)) if mode == 0 else 1
    stacked = mode == 0 and L > 1
    w = ints(rng, (L, M, N + M) if stacked else (M, N + M), wb, scale)
    b = ints(rng, (L, M) if stacked else M, wb, scale)
    cfg = mli.RnnCellConfig(mode=mode, act=act)
    with mli.rounding(rounding):
        y = getattr(mli, f"basic_rnn_cell_{kind}")(mli.Tensor(x, f_in), mli.Tensor(h0, f_h), mli.Tensor(w, f_w),
                                                   mli.Tensor(b, f_b), cfg, out_frac_bits=f_out)
    ref, f_y = R.basic_rnn_cell(kind, x, f_in, h0, f_h, w, f_w, b, f_b, mode, act, f_out, rounding=rounding)
    np.testing.assert_array_equal(y.numpy(), np.asarray(ref).reshape(y.numpy().shape))
    assert y.frac_bits == f_y


@given(dense_setup(), st.integers(1, 12), st.integers(1, 8), st.integers(1, 6), st.sampled_from([0, 1, 2]),
       st.sampled_from([0, 1, 2]), ROUNDINGS, st.data())
def test_lstm_cell(setup, N, M, T, mode, act, rounding, data):
    kind, db, wb, f_in, f_w, f_b, rng, scale = setup
    f_h = data.draw(st.integers(max(0, f_in - 4), db - 1))
    f_c = data.draw(st.integers(0, db - 2))  # cell frac db-1 can overflow the 32-bit update (SPEC 14.4)
    x = ints(rng, (T, N) if mode else (N,), db, scale)
    h0, c0 = ints(rng, M, db, scale), ints(rng, M, db, scale)
    w, b = ints(rng, (4, M, N + M), wb, scale), ints(rng, (4, M), wb, scale)
    cfg = mli.RnnCellConfig(mode=mode, act=act)
    cell = mli.Tensor(c0, f_c)
    with mli.rounding(rounding):
        y, c = getattr(mli, f"lstm_cell_{kind}")(mli.Tensor(x, f_in), mli.Tensor(h0, f_h), mli.Tensor(w, f_w),
                                                 mli.Tensor(b, f_b), cfg, cell)
    ref, f_y, c_ref, _ = R.lstm_cell(kind, x, f_in, h0, f_h, w, f_w, b, f_b, c0, f_c, mode, act, rounding=rounding)
    np.testing.assert_array_equal(y.numpy(), np.asarray(ref).reshape(y.numpy().shape))
    np.testing.assert_array_equal(c.numpy(), np.asarray(c_ref).reshape(M))
    assert y.frac_bits == f_y
    np.testing.assert_array_equal(cell.numpy(), c0)  # the caller's cell is untouched


@given(st.sampled_from(["fx8", "fx16"]), st.sampled_from(["tanh", "sigm"]), st.integers(0, 20),
       st.integers(1, 300), st.integers(0, 2**32 - 1), ROUNDINGS)
def test_lut(kind, fn, f, n, seed, rounding):
    bits = DBITS[kind]
    x = ints(np.random.default_rng(seed), n, bits)
    with mli.rounding(rounding):
        y = getattr(mli, f"{fn}_{kind}")(mli.Tensor(x, f))
    ref, f_y = getattr(R, fn)(kind, x, f, rounding=rounding)
    np.testing.assert_array_equal(y.numpy(), ref)
    assert y.frac_bits == f_y


def test_lut_exhaustive():
    """Every int16 input at every third frac bit count 0..20, both modes, on
    every ISA path (the SIMD look-ups pick or gather table entries in their
    own orders); an odd length leaves tails for the 8-lane and scalar code."""
    x = np.arange(-32768, 32768 - 3, dtype=np.int16)
    for rounding in ("convergent", "up"):
        for fn in ("tanh", "sigm"):
            for f in range(0, 21, 3):
                ref = getattr(R, fn)("fx16", x, f, rounding=rounding)[0]
                for isa in mli.supported_isas():
                    with mli.use_isa(isa), mli.rounding(rounding):
                        y = getattr(mli, f"{fn}_fx16")(mli.Tensor(x, f)).numpy()
                    np.testing.assert_array_equal(y, ref, err_msg=f"{fn} frac {f} {rounding} on {isa}")


@given(st.sampled_from(["fx8", "fx16"]), st.sampled_from([0, 1, 2, 3]), st.integers(0, 20), st.integers(1, 50),
       st.integers(0, 2**32 - 1))
def test_relu(kind, rt, f, n, seed):
    x = ints(np.random.default_rng(seed), n, DBITS[kind])
    y = getattr(mli, f"relu_{kind}")(mli.Tensor(x, f), rt)
    np.testing.assert_array_equal(y.numpy(), R.relu(x, f, rt))


@given(st.sampled_from(["fx8", "fx16"]), st.sampled_from(["add", "sub", "mul", "max", "min"]),
       st.sampled_from(["same", "scalar1", "scalar2", "rank0_1", "rank0_2"]), st.integers(1, 30),
       st.integers(0, 12), st.integers(0, 12), st.integers(0, 20), st.integers(0, 2**32 - 1), ROUNDINGS)
def test_eltwise(kind, op, layout, n, fa, fb, fo, seed, rounding):
    bits = DBITS[kind]
    rng = np.random.default_rng(seed)
    if op != "mul":
        fb = fa
    a = ints(rng, n, bits)
    b = ints(rng, n, bits)
    if layout in ("scalar1", "rank0_1"):
        a = a[:1]
    if layout in ("scalar2", "rank0_2"):
        b = b[:1]
    ta = mli.Tensor(a[0] if layout == "rank0_1" else a, fa)
    tb = mli.Tensor(b[0] if layout == "rank0_2" else b, fb)
    with mli.rounding(rounding):
        y = getattr(mli, f"eltwise_{op}_{kind}")(ta, tb, out_frac_bits=fo)
    ref, f_y = R.eltwise(op, kind, a, fa, b, fb, fo, rounding=rounding)
    np.testing.assert_array_equal(y.numpy().reshape(-1), np.asarray(ref).reshape(-1))
    assert y.frac_bits == f_y


@given(st.sampled_from([8, 16]), st.sampled_from([8, 16]), st.integers(0, 20), st.integers(0, 20),
       st.integers(1, 50), st.integers(0, 2**32 - 1), ROUNDINGS)
def test_convert(bits_in, bits_out, f_in, f_out, n, seed, rounding):
    x = ints(np.random.default_rng(seed), n, bits_in)
    with mli.rounding(rounding):
        y = mli.convert_tensor(mli.Tensor(x, f_in), "fx8" if bits_out == 8 else "fx16", f_out)
    np.testing.assert_array_equal(y.numpy(), R.convert_tensor(x, f_in, bits_out, f_out, rounding=rounding))


@given(st.sampled_from(["fx8", "fx16"]), st.integers(0, 20),
       st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=1, max_size=40))
def test_float_conversions(el, f, xs):
    x = np.array(xs, np.float32)
    t = mli.Tensor.from_float(x, el, f, saturate=True)   # saturation is part of what is compared
    np.testing.assert_array_equal(t.numpy(), R.float_to_fx(x, DBITS[el], f))
    np.testing.assert_array_equal(t.to_float().view(np.uint32), R.fx_to_float(t.numpy(), f).view(np.uint32))
