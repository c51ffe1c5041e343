"""What the mli.v2 bridge keeps of a Tensor's SA parameters between calls
(``Tensor._sa_cache``, issue 26): a call after the caller changed a
parameter -- in place, by assignment or with ``set_sa`` -- gives what a
fresh tensor with those parameters gives; what one tensor's cache holds
never reaches another (copies included); four threads calling at once on
shared inputs get the integers of one thread; bad parameters set after a
cached call fail as they do on a fresh tensor; out keeps its parameter
arrays when the kernel leaves them as they are and gets new ones when it
changes them."""
from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

import mli
import mli.v2 as v

G, N, M, T = 4, 6, 8, 3


def _params(seed, per_axis):
    """Per-tensor (zp, scale, fb) of x, h0, cell, out and weights' scales / fbs per gate."""
    r = np.random.default_rng(seed)
    p = {k: (int(r.integers(-20, 20)), int(r.integers(1 << 14, 1 << 15)), int(r.integers(14, 20)))
         for k in ("x", "h", "c", "o")}
    ng = G if per_axis else 1
    p["sw"] = [int(r.integers(1 << 14, 1 << 15)) for _ in range(ng)]
    p["fw"] = [int(r.integers(18, 22)) for _ in range(ng)]
    return p


def _bias_format(p):
    sx, fx = p["x"][1], p["x"][2]
    return [(sx * s) >> 15 for s in p["sw"]], [fx + f - 15 for f in p["fw"]]


DATA = np.random.default_rng(26)
XQ = DATA.integers(-128, 128, (T, N))
HQ = DATA.integers(-128, 128, (M,))
CQ = DATA.integers(-128, 128, (M,))
WIQ = DATA.integers(-127, 128, (G, N, M))
WOQ = DATA.integers(-127, 128, (G, M, M))
BQ = DATA.integers(-3000, 3000, (G, M))


def _tensors(p, per_axis):
    """Fresh tensors of the LSTM call with parameters p (never passed to a kernel)."""
    x = v.Tensor.sa(XQ, *p["x"])
    h = v.Tensor.sa(HQ, *p["h"])
    c = v.Tensor.sa(CQ, *p["c"])
    sc, fb = _bias_format(p)
    if per_axis:
        wi = v.Tensor.sa(WIQ, [0] * G, p["sw"], p["fw"], dim=0)
        wo = v.Tensor.sa(WOQ, [0] * G, p["sw"], p["fw"], dim=0)
        b = v.Tensor.sa(BQ, [0] * G, sc, fb, dim=0, el_type="sa32")
    else:
        wi = v.Tensor.sa(WIQ, 0, p["sw"][0], p["fw"][0])
        wo = v.Tensor.sa(WOQ, 0, p["sw"][0], p["fw"][0])
        b = v.Tensor.sa(BQ, 0, sc[0], fb[0], el_type="sa32")
    out = v.Tensor.zeros((T, M), "sa8")
    out.set_sa(*p["o"])
    return {"x": x, "h": h, "wi": wi, "wo": wo, "b": b, "c": c, "o": out}


def _run(ts, cell_init=CQ, out_data=None):
    """One lstm_cell_sa8_sa8_sa32 call over ts (cell and out reset first):
    (out's integers, cell's integers, out's parameters)."""
    ts["c"].buffer[:] = np.asarray(cell_init, np.int8).reshape(-1)
    ts["o"].buffer[:] = 0 if out_data is None else out_data
    cfg = v.RnnCellCfg(0, v.RNN_OUT_ALL, v.RNN_ACT_TANH)
    v.lstm_cell_sa8_sa8_sa32(ts["x"], ts["h"], ts["wi"], ts["wo"], ts["b"], None, None, cfg, ts["c"], ts["o"])
    o = ts["o"]
    return (o.numpy().tolist(), ts["c"].numpy().tolist(),
            (int(o.zero_point[0]), int(o.scale[0]), int(o.scale_frac_bits[0]), o.sa_dim))


def _set_in_place(ts, p, per_axis):
    for k, name in (("x", "x"), ("h", "h"), ("c", "c"), ("o", "o")):
        t = ts[name]
        t.zero_point[0], t.scale[0], t.scale_frac_bits[0] = p[k]
    sc, fb = _bias_format(p)
    for name in ("wi", "wo"):
        ts[name].scale[:] = p["sw"]
        ts[name].scale_frac_bits[:] = p["fw"]
    ts["b"].scale[:] = sc
    ts["b"].scale_frac_bits[:] = fb


def _set_by_assignment(ts, p, per_axis):
    for k in ("x", "h", "c", "o"):
        t = ts[k]
        t.zero_point = np.array([p[k][0]], np.int16)
        t.scale = np.array([p[k][1]], np.int16)
        t.scale_frac_bits = np.array([p[k][2]], np.int8)
    sc, fb = _bias_format(p)
    for name in ("wi", "wo"):
        ts[name].scale = np.array(p["sw"], np.int16)
        ts[name].scale_frac_bits = np.array(p["fw"], np.int8)
    ts["b"].scale = np.array(sc, np.int16)
    ts["b"].scale_frac_bits = np.array(fb, np.int8)


def _set_with_set_sa(ts, p, per_axis):
    for k in ("x", "h", "c", "o"):
        ts[k].set_sa(*p[k])
    sc, fb = _bias_format(p)
    dim = 0 if per_axis else -1
    zeros = [0] * len(p["sw"])
    for name in ("wi", "wo"):
        ts[name].set_sa(zeros, p["sw"], p["fw"], dim)
    ts["b"].set_sa(zeros, sc, fb, dim)


@pytest.mark.parametrize("per_axis", [False, True])
@pytest.mark.parametrize("how", [_set_in_place, _set_by_assignment, _set_with_set_sa])
def test_changed_parameters_are_read_afresh(how, per_axis):
    p1, p2 = _params(1, per_axis), _params(2, per_axis)
    ts = _tensors(p1, per_axis)
    first = _run(ts)
    assert _run(ts) == first                       # (a second call through the cache)
    for k in ("x", "wi", "b", "o"):
        assert isinstance(ts[k].__dict__.get("_sa_cache"), mli.v2._core2._SaCache), k
    how(ts, p2, per_axis)
    got = _run(ts)
    want = _run(_tensors(p2, per_axis))
    assert got == want
    assert got[0] != first[0]                      # the change mattered
    assert _run(ts) == want                        # and stays


def test_each_parameter_alone_is_followed():
    """scale, zero point and frac bits of x changed one at a time, in place."""
    p = _params(3, False)
    ts = _tensors(p, False)
    _run(ts)
    for i in range(3):
        q = dict(p)
        vals = list(q["x"])
        vals[i] += 1 if i != 2 else -1
        q["x"] = tuple(vals)
        if i:  # the bias scale follows x's scale and frac bits
            sc, fb = _bias_format(q)
            ts["b"].scale[0], ts["b"].scale_frac_bits[0] = sc[0], fb[0]
        ts["x"].zero_point[0], ts["x"].scale[0], ts["x"].scale_frac_bits[0] = vals
        assert _run(ts) == _run(_tensors(q, False)), i
        p = q


def test_caches_never_leak_between_tensors():
    pa, pb = _params(4, True), _params(5, True)
    ta, tb = _tensors(pa, True), _tensors(pb, True)
    ra, rb = _run(_tensors(pa, True)), _run(_tensors(pb, True))
    assert ra != rb
    for _ in range(3):
        assert _run(ta) == ra
        assert _run(tb) == rb
    # mixed: a's x (and bias, whose scale follows x) with b's other tensors
    mixed = dict(tb, x=ta["x"], b=ta["b"], wi=ta["wi"], wo=ta["wo"])
    fresh_mixed = dict(_tensors(pb, True), x=_tensors(pa, True)["x"], b=_tensors(pa, True)["b"],
                       wi=_tensors(pa, True)["wi"], wo=_tensors(pa, True)["wo"])
    assert _run(mixed) == _run(fresh_mixed)
    assert _run(ta) == ra and _run(tb) == rb


@pytest.mark.parametrize("make", [copy.copy, copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t))])
def test_copies_do_not_share_what_the_bridge_keeps(make):
    p1, p2 = _params(6, False), _params(7, False)
    ts = _tensors(p1, False)
    r1 = _run(ts)
    cp = {k: make(t) for k, t in ts.items()}
    assert "_sa_cache" not in cp["x"].__dict__
    assert _run(cp) == r1
    _set_by_assignment(cp, p2, False)
    assert _run(cp) == _run(_tensors(p2, False))
    assert _run(ts) == r1                          # the originals are as they were


def test_out_keeps_its_arrays_only_when_the_kernel_leaves_them():
    ts = _tensors(_params(8, False), False)
    _run(ts)
    arrays = (ts["o"].zero_point, ts["o"].scale, ts["o"].scale_frac_bits)
    _run(ts)
    assert (ts["o"].zero_point, ts["o"].scale, ts["o"].scale_frac_bits) == arrays   # (identity: same objects)
    # tanh_sa8 sets out's format (zp 0, scale 1, frac 7): new arrays, the old ones unchanged
    x = v.Tensor.sa(np.arange(-8, 8), 3, 20000, 18)
    out = v.Tensor.zeros((16,), "sa8")
    out.set_sa(5, 123, 9)
    old = out.zero_point
    v.tanh_sa8(x, None, out)
    assert (int(out.zero_point[0]), int(out.scale[0]), int(out.scale_frac_bits[0]), out.sa_dim) == (0, 1, 7, -1)
    assert out.zero_point is not old and int(old[0]) == 5
    first = out.numpy().tolist()
    v.tanh_sa8(x, None, out)                       # now unchanged: kept
    assert out.numpy().tolist() == first and int(out.scale_frac_bits[0]) == 7
    # out's parameters changed in place by the caller are rewritten by the kernel
    out.scale_frac_bits[0] = 3
    v.tanh_sa8(x, None, out)
    assert int(out.scale_frac_bits[0]) == 7


def test_inputs_unchanged_by_cached_calls():
    ts = _tensors(_params(9, True), True)
    before = {k: (t.buffer.tobytes(), t.zero_point.tobytes(), t.scale.tobytes(), t.scale_frac_bits.tobytes(),
                  t.sa_dim, t.shape, t.mem_stride, t.rank, t.capacity)
              for k, t in ts.items() if k in ("x", "h", "wi", "wo", "b")}
    for _ in range(3):
        _run(ts)
    after = {k: (t.buffer.tobytes(), t.zero_point.tobytes(), t.scale.tobytes(), t.scale_frac_bits.tobytes(),
                 t.sa_dim, t.shape, t.mem_stride, t.rank, t.capacity)
             for k, t in ts.items() if k in ("x", "h", "wi", "wo", "b")}
    assert before == after


def _error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the type and text are compared)
        return type(e), str(e)
    return None


@pytest.mark.parametrize("change", [
    lambda ts: setattr(ts["wi"], "scale_capacity", 1000),          # beyond its buffer: BridgeError
    lambda ts: setattr(ts["x"], "sa_dim", 5),                      # MLI's check
    lambda ts: setattr(ts["x"], "sa_dim", "0"),                    # not an int
    lambda ts: setattr(ts["b"], "scale", np.zeros((2, 2), np.int16)[:, 0]),   # not contiguous
    lambda ts: setattr(ts["x"], "zero_point_capacity", -1),        # outside uint32
    lambda ts: setattr(ts["x"], "scale", np.array([], np.int16)),  # no element
])
def test_bad_parameters_after_cached_calls_fail_as_on_fresh_tensors(change):
    p = _params(10, True)
    ts = _tensors(p, True)
    _run(ts)
    _run(ts)
    change(ts)
    fresh = _tensors(p, True)
    change(fresh)
    err = _error_of(lambda: _run(ts))
    assert err is not None
    assert err == _error_of(lambda: _run(fresh))


@pytest.mark.parametrize("per_axis", [False, True])
def test_four_threads_at_once_give_one_threads_integers(per_axis):
    p = _params(11, per_axis)
    want = _run(_tensors(p, per_axis))
    shared = _tensors(p, per_axis)     # inputs shared by all threads, caches made concurrently
    errors, results = [], []
    start = threading.Barrier(4)

    def work(k):
        try:
            mine = dict(shared, c=v.Tensor.sa(CQ, *p["c"]), o=v.Tensor.zeros((T, M), "sa8"))
            mine["o"].set_sa(*p["o"])
            start.wait()
            for i in range(60):
                if i % 10 == k:   # now and then new input objects (caches made again) ...
                    mine.update({n: copy.copy(t) for n, t in shared.items() if n in ("x", "wi", "b")})
                results.append(_run(mine))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(results) == 240
    assert all(r == want for r in results)
