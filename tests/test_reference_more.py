"""The C core of the rest of MLI 1.1, through the public API, against its slow
numpy twins (mli.reference.pool, .data, .transform.leaky_relu), by
hypothesis: pooling (chw and hwc, fx8 and fx16, every call whose input is at
least the kernel: the domain where MLI's result is the mathematical one),
permute, concat, padding2d and leaky ReLU, both rounding modes."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import mli
from mli import reference as R

T = mli.Tensor
KINDS = st.sampled_from([("fx8", np.int8), ("fx16", np.int16)])
ROUNDING = st.sampled_from(["convergent", "up"])


def _array(draw, shape, dt, extreme):
    info = np.iinfo(dt)
    lo, hi = (int(info.min), int(info.max)) if extreme else (-100, 100)
    return np.array(draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))),
                    dt).reshape(shape)


@st.composite
def pool_call(draw):
    kind, dt = draw(KINDS)
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    h, w, c = draw(st.integers(kh, 7)), draw(st.integers(kw, 7)), draw(st.integers(1, 3))
    pads = dict(padding_top=draw(st.integers(0, kh - 1)), padding_bottom=draw(st.integers(0, kh - 1)),
                padding_left=draw(st.integers(0, kw - 1)), padding_right=draw(st.integers(0, kw - 1)))
    cfg = dict(kernel_width=kw, kernel_height=kh, stride_width=draw(st.integers(1, 3)),
               stride_height=draw(st.integers(1, 3)), **pads)
    hwc = draw(st.booleans())
    x = _array(draw, (h, w, c) if hwc else (c, h, w), dt, draw(st.booleans()))
    return kind, hwc, x, cfg


@settings(max_examples=150, deadline=None)
@given(pool_call(), st.sampled_from(["maxpool", "avepool"]), ROUNDING, st.sampled_from(["", "_generic"]))
def test_pools_against_the_twin(call, op, rounding, variant):
    kind, hwc, x, cfg = call
    fn = getattr(mli, f"{op}_{'hwc' if hwc else 'chw'}_{kind}{variant}")
    with mli.rounding(rounding):
        y = fn(T(x, 5), mli.PoolConfig(**cfg))
    kw = {} if op == "maxpool" else {"rounding": rounding}
    want = getattr(R.pool, op)(x, hwc=hwc, **cfg, **kw)
    np.testing.assert_array_equal(y.numpy(), want)
    assert y.frac_bits == 5


@settings(max_examples=100, deadline=None)
@given(st.data(), KINDS)
def test_data_movement_against_the_twins(data, kind_dt):
    kind, dt = kind_dt
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    x = _array(data.draw, shape, dt, True)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    np.testing.assert_array_equal(getattr(mli, f"permute_{kind}")(T(x, 3), mli.PermuteConfig(perm)).numpy(),
                                  R.data.permute(x, perm))
    axis = data.draw(st.integers(0, len(shape) - 1))
    parts = []
    for _ in range(data.draw(st.integers(1, 4))):
        s = list(shape)
        s[axis] = data.draw(st.integers(1, 3))
        parts.append(_array(data.draw, tuple(s), dt, False))
    y = getattr(mli, f"concat_{kind}")([T(p, 3) for p in parts], mli.ConcatConfig(axis=axis))
    np.testing.assert_array_equal(y.numpy(), R.data.concat(parts, axis))
    x3 = _array(data.draw, tuple(data.draw(st.lists(st.integers(1, 4), min_size=3, max_size=3))), dt, True)
    pads = [data.draw(st.integers(0, 3)) for _ in range(4)]
    hwc = data.draw(st.booleans())
    fn = getattr(mli, f"padding2d_{'hwc' if hwc else 'chw'}_{kind}")
    np.testing.assert_array_equal(fn(T(x3, 3), mli.Padding2dConfig(*pads)).numpy(), R.data.padding2d(x3, *pads, hwc=hwc))


@settings(max_examples=150, deadline=None)
@given(st.data(), KINDS, ROUNDING)
def test_leaky_relu_against_the_twin(data, kind_dt, rounding):
    kind, dt = kind_dt
    x = _array(data.draw, (data.draw(st.integers(1, 20)),), dt, data.draw(st.booleans()))
    info = np.iinfo(dt)
    a = data.draw(st.integers(int(info.min), int(info.max)))
    fs = data.draw(st.integers(0, 17))
    with mli.rounding(rounding):
        y = getattr(mli, f"leaky_relu_{kind}")(T(x, 4), T(dt(a), fs))
    np.testing.assert_array_equal(y.numpy(), R.leaky_relu(x, 4, a, fs, rounding))
    assert y.frac_bits == 4


@st.composite
def conv_call(draw):
    kind = draw(st.sampled_from(["fx8", "fx16", "fx8w16d"]))
    dt = np.int8 if kind == "fx8" else np.int16
    wdt = np.int16 if kind == "fx16" else np.int8
    depthwise = draw(st.booleans())
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    c = draw(st.integers(1, 3))
    oc = c if depthwise else draw(st.integers(1, 3))
    h, w = draw(st.integers(kh, 7)), draw(st.integers(kw, 7))
    cfg = dict(stride_width=draw(st.integers(1, 3)), stride_height=draw(st.integers(1, 3)),
               padding_top=draw(st.integers(0, kh - 1)), padding_bottom=draw(st.integers(0, kh - 1)),
               padding_left=draw(st.integers(0, kw - 1)), padding_right=draw(st.integers(0, kw - 1)),
               relu=draw(st.integers(0, 3)))
    x = _array(draw, (c, h, w), dt, draw(st.booleans()))
    wt = _array(draw, (oc, 1 if depthwise else c, kh, kw), wdt, draw(st.booleans()))
    b = _array(draw, (oc,), wdt, draw(st.booleans()))
    f_in, f_w = draw(st.integers(0, 12)), draw(st.integers(0, 12))
    f_b = draw(st.integers(0, f_in + f_w))
    # mostly a shift that keeps sums of ~100 products of ~2^7 x 2^7 inside the output (rounding matters)
    f_out = min(12, max(0, f_in + f_w - draw(st.integers(0, 16))))
    return kind, depthwise, x, wt, b, (f_in, f_w, f_b, f_out), cfg


@settings(max_examples=150, deadline=None)
@given(conv_call(), ROUNDING, st.sampled_from(["", "_generic"]))
def test_convolutions_against_the_twin(call, rounding, variant):
    kind, depthwise, x, w, b, (f_in, f_w, f_b, f_out), cfg = call
    fam = "depthwise_conv2d_chw" if depthwise else "conv2d_chw"
    fn = getattr(mli, f"{fam}_{kind}{variant}")
    c = dict(cfg)
    relu = c.pop("relu")
    with mli.rounding(rounding):
        y = fn(T(x, f_in), T(w, f_w), T(b, f_b), mli.Conv2dConfig(relu=relu, **c), out_frac_bits=f_out)
    want = getattr(R.conv2d, fam)(x, w, b, f_in, f_w, f_b, f_out, kind, relu=relu, rounding=rounding, **c)
    np.testing.assert_array_equal(y.numpy(), want)
    assert y.frac_bits == f_out
    COUNTS["outputs"] += want.size
    COUNTS["inside"] += int(np.count_nonzero((want > np.iinfo(want.dtype).min) & (want < np.iinfo(want.dtype).max)))


COUNTS = {"outputs": 0, "inside": 0}


def test_convolution_twin_is_not_all_saturation():
    """The examples above reach the rounding: most outputs are not at a limit."""
    if COUNTS["outputs"]:
        assert COUNTS["inside"] > COUNTS["outputs"] // 4, COUNTS


@settings(max_examples=200, deadline=None)
@given(st.data(), KINDS, ROUNDING)
def test_softmax_against_the_twin(data, kind_dt, rounding):
    kind, dt = kind_dt
    n = data.draw(st.integers(1, 40))
    x = _array(data.draw, (n,), dt, data.draw(st.booleans()))
    f = data.draw(st.integers(0, 16))
    with mli.rounding(rounding):
        y = getattr(mli, f"softmax_{kind}")(T(x, f))
    want, f_out = R.softmax(kind, x, f, rounding)
    np.testing.assert_array_equal(y.numpy(), want)
    assert y.frac_bits == f_out
