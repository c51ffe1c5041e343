"""No public function modifies its inputs (bytes compared before and after),
with writable and with read-only input arrays."""
import numpy as np
import pytest

import mli

rng = np.random.default_rng(11)


def arr(shape, dt=np.int16, lim=3000):
    return rng.integers(-lim, lim, shape).astype(dt)


def T(a, f, readonly=False):
    a = a.copy()
    if readonly:
        a.flags.writeable = False
    return mli.Tensor(a, f)


def calls(ro):
    x, h, c = T(arr((4, 3)), 12, ro), T(arr(5), 15, ro), T(arr(5), 11, ro)
    w, b = T(arr((5, 8)), 14, ro), T(arr(5), 14, ro)
    w4, b4 = T(arr((4, 5, 8)), 14, ro), T(arr((4, 5)), 14, ro)
    x8, w8, b8 = T(arr((4, 3), np.int8, 100), 5, ro), T(arr((5, 8), np.int8, 100), 6, ro), T(arr(5, np.int8, 100), 6, ro)
    h8 = T(arr(5, np.int8, 100), 7, ro)
    v = T(arr(12), 10, ro)
    yield "basic_rnn_cell_fx16", (x, h, w, b, mli.RnnCellConfig(mode=1)), {}
    yield "basic_rnn_cell_fx8", (x8, h8, w8, b8, mli.RnnCellConfig(mode=2)), {}
    yield "basic_rnn_cell_fx8w16d", (x, h, w8, b8, mli.RnnCellConfig(mode=1, act=0)), {}
    yield "lstm_cell_fx16", (x, h, w4, b4, mli.RnnCellConfig(mode=1), c), {}
    yield "lstm_cell", (x, h, w4, b4, mli.RnnCellConfig(mode=2, act=2), c), {}
    yield "fully_connected_fx16", (T(arr(8), 12, ro), w, b), {}
    yield "fully_connected", (T(arr(8, np.int8, 100), 4, ro), w8, b8), {}
    for fn in ("tanh", "sigm", "relu"):
        yield fn, (v,), {}
        yield f"{fn}_fx8", (T(arr(12, np.int8, 100), 5, ro),), {}
    for op in ("add", "sub", "mul", "max", "min"):
        yield f"eltwise_{op}_fx16", (v, T(arr(12), 10, ro)), {}
        yield f"eltwise_{op}", (v, T(arr(1), 10, ro)), {}
    yield "convert_tensor", (v, "fx8", 3), {}
    yield "point_to_subtensor", (x, [1]), {}
    yield "count_elem_num", (x,), {}


@pytest.mark.parametrize("readonly", [False, True])
def test_inputs_unchanged(readonly):
    n = 0
    for name, args, kw in calls(readonly):
        before = [bytes(a.numpy().tobytes()) if isinstance(a, mli.Tensor) else None for a in args]
        meta = [(a.shape4, a.rank, a.frac_bits, a.el_type, a.capacity) if isinstance(a, mli.Tensor) else None
                for a in args]
        getattr(mli, name)(*args, **kw)
        after = [bytes(a.numpy().tobytes()) if isinstance(a, mli.Tensor) else None for a in args]
        meta2 = [(a.shape4, a.rank, a.frac_bits, a.el_type, a.capacity) if isinstance(a, mli.Tensor) else None
                 for a in args]
        assert before == after, name
        assert meta == meta2, name
        n += 1
    assert n == 26


def test_wrapping_an_array_does_not_copy_or_change_it():
    a = arr((3, 4))
    t = mli.Tensor(a, 12)
    assert np.shares_memory(t.numpy(), a)
    b = a[:, ::2]  # not contiguous: copied, caller's array untouched
    t2 = mli.Tensor(b, 12)
    assert not np.shares_memory(t2.numpy(), a)
    np.testing.assert_array_equal(t2.numpy(), b)
