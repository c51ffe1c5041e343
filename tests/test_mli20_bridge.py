"""What the mli.v2 bridge accepts as buffers (issue 20, N23 and N24).

* Read-only inputs -- in, prev_out, weights_in, weights_out, bias, weights,
  the rnn_dense inputs, per-axis SA parameter arrays, LUT objects -- give
  exactly what writable ones give (MLI's API takes them as const); a
  read-only buffer the call writes (out, an LSTM's cell, the scratch, a LUT
  being created) is refused before C with ``ValueError`` naming it, and
  nothing is written.
* ``Tensor(buffer, el_type, ...)`` refuses a buffer its kernels would misread:
  a dtype other than el_type's container (a uint8 array of raw bytes aside)
  or a foreign byte order (``TypeError`` naming the buffer).
"""
from __future__ import annotations

import numpy as np
import pytest

import mli
import mli.v2 as v2


def _ro(t):
    """A copy of tensor t whose data (and per-axis parameter arrays) are read-only."""
    c = v2.Tensor(t.buffer.copy(), t.el_type, t.shape[:t.rank], t.mem_stride[:t.rank], t.rank, t.capacity,
                  t.frac_bits)
    if t.is_sa:
        c.set_sa(t.zero_point, t.scale, t.scale_frac_bits, t.sa_dim)
        for a in (c.zero_point, c.scale, c.scale_frac_bits):
            a.flags.writeable = False
    c.buffer.flags.writeable = False
    return c


def _out_like(t):
    o = v2.Tensor(np.zeros_like(t.buffer), t.el_type, t.shape[:t.rank], frac_bits=t.frac_bits)
    if t.is_sa:
        o.set_sa(t.zero_point[:1], t.scale[:1], t.scale_frac_bits[:1])
    return o


rng = np.random.default_rng(20)


def _cell_args(cell_kind, kind, per_axis=False):
    T, N, M, G = 4, 3, 5, (4 if cell_kind == "lstm" else 3)
    if kind == "sa8_sa8_sa32":
        x = v2.Tensor.from_float(rng.uniform(-1, 1, (T, N)), "sa8")
        h = v2.Tensor.from_float(rng.uniform(-1, 1, (M,)), "sa8")
        dim = 0 if per_axis else -1
        wi = v2.Tensor.from_float(rng.uniform(-1, 1, (G, N, M)), "sa8", dim=dim, symmetric=True)
        wo = v2.Tensor.from_float(rng.uniform(-1, 1, (G, M, M)), "sa8", dim=dim, symmetric=True)
        # the bias scale: in.scale * weights.scale
        sc = (int(x.scale[0]) * wi.scale.astype(np.int64)) >> 15
        fb = int(x.scale_frac_bits[0]) + wi.scale_frac_bits.astype(np.int64) - 15
        b = v2.Tensor.sa(rng.integers(-3000, 3000, (G, M)), [0] * len(sc), sc, fb, dim, "sa32")
        cell = v2.Tensor.from_float(rng.uniform(-1, 1, (M,)), "sa8")
        out = v2.Tensor.zeros((T, M), "sa8")
        out.set_sa(-3, 16384, 21)
    else:
        wel = "fx16" if kind == "fx16" else "fx8"
        x = v2.Tensor.fx(rng.integers(-6000, 6000, (T, N)), 12)
        h = v2.Tensor.fx(rng.integers(-6000, 6000, (M,)), 15)
        lim = 6000 if wel == "fx16" else 100
        wi = v2.Tensor.fx(rng.integers(-lim, lim, (G, N, M)), 14 if wel == "fx16" else 7, wel)
        wo = v2.Tensor.fx(rng.integers(-lim, lim, (G, M, M)), 14 if wel == "fx16" else 7, wel)
        b = v2.Tensor.fx(rng.integers(-lim, lim, (G, M)), 12, wel)
        cell = v2.Tensor.fx(rng.integers(-6000, 6000, (M,)), 12)
        out = v2.Tensor.zeros((T, M), "fx16", 15)
    return x, h, wi, wo, b, cell, out


KINDS = ["fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"]


# ---------------------------------------------------------------------------- N23: read-only inputs

@pytest.mark.parametrize("fn", ["tanh", "sigm"])
@pytest.mark.parametrize("kind", ["fx8", "fx16", "sa8"])
def test_transfer_reads_a_read_only_input(fn, kind):
    x = (v2.Tensor.fx(rng.integers(-8000, 8000, (3, 7)), 10) if kind == "fx16" else
         v2.Tensor.fx(rng.integers(-120, 120, (3, 7)), 5, "fx8") if kind == "fx8" else
         v2.Tensor.sa(rng.integers(-120, 120, (3, 7)), 4, 20000, 22))
    f = getattr(v2, f"{fn}_{kind}")
    want = f(x).numpy()
    ro = _ro(x)
    before = ro.buffer.copy()
    got = f(ro)
    assert got.numpy().tolist() == want.tolist()
    assert np.array_equal(ro.buffer, before)
    # the shared LUT objects are read-only themselves; a caller's read-only LUT works too
    assert not getattr(v2, f"{fn}_lut")().buffer.flags.writeable
    lut = v2.Lut(getattr(v2, f"{fn}_get_lut_size")())
    getattr(v2, f"{fn}_create_lut")(lut)
    lut.buffer.flags.writeable = False
    assert f(ro, lut).numpy().tolist() == want.tolist()


def test_the_audit_example_read_only_tanh():
    x = v2.Tensor.fx(np.arange(4) * 500, 10)
    want = v2.tanh_fx16(x).numpy().tolist()
    x.buffer.flags.writeable = False
    assert v2.tanh_fx16(x).numpy().tolist() == want == [0, 14837, 24626, 29445]


@pytest.mark.parametrize("kind", ["fx16", "fx16_fx8_fx8", "fx8", "sa8_sa8_sa32", "sa8_sa8_sa32_ext_bias"])
def test_fully_connected_reads_read_only_inputs(kind):
    N, M = 9, 6
    if kind.startswith("sa8"):
        x = v2.Tensor.from_float(rng.uniform(-1, 1, N), "sa8")
        w = v2.Tensor.from_float(rng.uniform(-1, 1, (N, M)), "sa8", dim=1, symmetric=True)
        sc = (int(x.scale[0]) * w.scale.astype(np.int64)) >> 15
        fb = int(x.scale_frac_bits[0]) + w.scale_frac_bits.astype(np.int64) - 15
        b = v2.Tensor.sa(rng.integers(-3000, 3000, M), [0] * M, sc, fb, 0, "sa32")
        out = v2.Tensor.zeros((M,), "sa8")
        out.set_sa(2, 16384, 19)
    else:
        d = "fx8" if kind == "fx8" else "fx16"
        wel = "fx16" if kind == "fx16" else "fx8"
        x = v2.Tensor.fx(rng.integers(-100, 100, N), 6, d)
        w = v2.Tensor.fx(rng.integers(-100, 100, (N, M)), 6, wel)
        b = v2.Tensor.fx(rng.integers(-100, 100, M), 4, wel)
        out = v2.Tensor.zeros((M,), d, 5)
    f = getattr(v2, f"fully_connected_{kind}")
    want = f(x, w, b, v2.FullyConnectedCfg(0), out).numpy().tolist()
    o2 = _out_like(out)
    assert f(_ro(x), _ro(w), _ro(b), v2.FullyConnectedCfg(0), o2).numpy().tolist() == want


@pytest.mark.parametrize("kind", KINDS)
def test_rnn_dense_reads_read_only_inputs(kind):
    N, M = 4, 5
    sa = kind.startswith("sa8")
    if sa:
        xs = [v2.Tensor.sa(rng.integers(-100, 100, N), 3, 16384, 21) for _ in range(2)]
        ws = [v2.Tensor.sa(rng.integers(-100, 100, (N, M)), 0, 16384, 21, -1) for _ in range(2)]
        b = v2.Tensor.sa(rng.integers(-3000, 3000, M), 0, 16384, 28, -1, "sa32")
        out = v2.Tensor.zeros((M,), "sa8")
        out.set_sa(-1, 16384, 20)
    else:
        wel = "fx16" if kind == "fx16" else "fx8"
        xs = [v2.Tensor.fx(rng.integers(-6000, 6000, N), 12) for _ in range(2)]
        ws = [v2.Tensor.fx(rng.integers(-100, 100, (N, M)), 7, wel) for _ in range(2)]
        b = v2.Tensor.fx(rng.integers(-100, 100, M), 9, wel)
        out = v2.Tensor.zeros((M,), "fx16", 11)
    f = getattr(v2, f"rnn_dense_{kind}")
    want = f(xs, ws, b, v2.RnnDenseCfg(2), out).numpy().tolist()
    got = f([_ro(t) for t in xs], [_ro(t) for t in ws], _ro(b), v2.RnnDenseCfg(2), _out_like(out))
    assert got.numpy().tolist() == want


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell_kind", ["lstm", "gru"])
@pytest.mark.parametrize("per_axis", [False, True])
def test_cells_read_read_only_inputs(cell_kind, kind, per_axis):
    if per_axis and kind != "sa8_sa8_sa32":
        pytest.skip("per-axis parameters are sa8's")
    x, h, wi, wo, b, cell, out = _cell_args(cell_kind, kind, per_axis)
    f = getattr(v2, f"{cell_kind}_cell_{kind}")
    cfg = v2.RnnCellCfg(0, 1, 1)
    c1 = v2.Tensor(cell.buffer.copy(), cell.el_type, (cell.shape[0],), frac_bits=cell.frac_bits)
    if cell.is_sa:
        c1.set_sa(cell.zero_point, cell.scale, cell.scale_frac_bits)
    args = (x, h, wi, wo, b, None, None, cfg) + ((c1,) if cell_kind == "lstm" else ())
    want = f(*args, out).numpy().tolist()
    c2 = v2.Tensor(cell.buffer.copy(), cell.el_type, (cell.shape[0],), frac_bits=cell.frac_bits)
    if cell.is_sa:
        c2.set_sa(cell.zero_point, cell.scale, cell.scale_frac_bits)
    ro = [_ro(t) for t in (x, h, wi, wo, b)]
    luts = [v2.Lut(v2.tanh_get_lut_size()), v2.Lut(v2.sigm_get_lut_size())]
    v2.tanh_create_lut(luts[0])
    v2.sigm_create_lut(luts[1])
    for lut in luts:
        lut.buffer.flags.writeable = False
    out2 = _out_like(out)
    got = f(*ro, *luts, cfg, *((c2,) if cell_kind == "lstm" else ()), out2).numpy().tolist()
    assert got == want
    if cell_kind == "lstm":
        assert c2.numpy().tolist() == c1.numpy().tolist()


# ---------------------------------------------------------------------------- N23: read-only outputs

def _read_only_array(shape, dtype):
    a = np.zeros(shape, dtype)
    a.flags.writeable = False
    return a


def test_transfer_refuses_a_read_only_out():
    x = v2.Tensor.fx([100, 200, 300], 10)
    out = v2.Tensor(_read_only_array(3, np.int16), v2.FX_16, (3,))
    with pytest.raises(ValueError, match="^out: the output buffer is read-only$") as e:
        v2.tanh_fx16(x, None, out)
    assert e.value.argument == "out" and isinstance(e.value, v2.BridgeError)
    assert out.frac_bits == 0 and not out.buffer.any()


def test_fully_connected_and_dense_refuse_a_read_only_out():
    x = v2.Tensor.fx([100, 200, 300], 10)
    w = v2.Tensor.fx(np.ones((3, 2)), 10)
    b = v2.Tensor.fx([1, 2], 10)
    out = v2.Tensor(_read_only_array(2, np.int16), v2.FX_16, (2,), frac_bits=3)
    with pytest.raises(ValueError, match="^out: the output buffer is read-only$"):
        v2.fully_connected_fx16(x, w, b, v2.FullyConnectedCfg(0), out)
    with pytest.raises(ValueError, match="^out: the output buffer is read-only$"):
        v2.rnn_dense_fx16([x], [w], b, v2.RnnDenseCfg(1), out)


@pytest.mark.parametrize("cell_kind", ["lstm", "gru"])
@pytest.mark.parametrize("which", ["out", "cell", "cfg.scratch_data"])
def test_cells_refuse_a_read_only_output(cell_kind, which):
    if which == "cell" and cell_kind == "gru":
        pytest.skip("the GRU has no cell")
    x, h, wi, wo, b, cell, out = _cell_args(cell_kind, "fx16")
    scratch = np.zeros(64, np.uint8)
    target = {"out": out.buffer, "cell": cell.buffer, "cfg.scratch_data": scratch}[which]
    target.flags.writeable = False
    before = [t.buffer.copy() for t in (cell, out)]
    f = getattr(v2, f"{cell_kind}_cell_fx16")
    with pytest.raises(ValueError, match=f"^{which}: the output buffer is read-only$"):
        f(x, h, wi, wo, b, None, None, v2.RnnCellCfg(0, 1, 1, scratch), *((cell,) if cell_kind == "lstm" else ()),
          out)
    assert all(np.array_equal(t.buffer, bb) for t, bb in zip((cell, out), before))
    assert out.rank == 2 and out.shape[:2] == [4, 5]


def test_create_lut_refuses_read_only_storage():
    lut = v2.Lut(v2.tanh_get_lut_size())
    lut.buffer.flags.writeable = False
    with pytest.raises(ValueError, match="^lut: the output buffer is read-only$"):
        v2.tanh_create_lut(lut)
    assert lut.length == 0 and not lut.buffer.any()


def test_non_contiguous_and_non_buffers_still_raise():
    x = v2.Tensor.fx([[1, 2], [3, 4]], 10)
    x.buffer = np.zeros((4, 2), np.int16)[:, 0]          # a strided view: no contiguous buffer
    with pytest.raises((TypeError, ValueError)):
        v2.tanh_fx16(x, None, v2.Tensor.zeros((2, 2)))
    x.buffer = [1, 2, 3, 4]
    with pytest.raises(TypeError):
        v2.tanh_fx16(x, None, v2.Tensor.zeros((2, 2)))


# ---------------------------------------------------------------------------- N24: dtypes, byte order

def test_big_endian_data_is_refused_the_audit_example():
    a = np.array([-4096, 256, 4096], ">i2")
    with pytest.raises(TypeError, match="^buffer: byte order of >i2 is not native"):
        v2.Tensor(a, "fx16", (3,), frac_bits=10)
    # the same values in native order give MLI's answer
    native = v2.Tensor(a.astype("=i2"), "fx16", (3,), frac_bits=10)
    assert v2.tanh_fx16(native).numpy().tolist() == [-32746, 8025, 32746]


@pytest.mark.parametrize("el, dtype", [("fx16", np.float64), ("fx16", np.int32), ("fx16", np.int8),
                                       ("fx16", np.uint16), ("fx8", np.int16), ("sa8", np.float32),
                                       ("sa32", np.int16), ("sa32", np.int64), ("fx16", np.bool_)])
def test_foreign_dtype_is_refused(el, dtype):
    with pytest.raises(TypeError, match=f"^buffer: dtype {np.dtype(dtype)} is not the container of MLI_EL_"):
        v2.Tensor(np.zeros(4, dtype), el, (4,))


@pytest.mark.parametrize("el, dtype", [("fx16", ">i2"), ("sa32", ">i4"), ("fx16", "<f8")])
def test_foreign_byte_order_is_refused_whatever_the_dtype(el, dtype):
    a = np.zeros(4, np.dtype(dtype).newbyteorder(">" if np.little_endian else "<"))
    with pytest.raises(TypeError, match="is not native"):
        v2.Tensor(a, el, (4,))


def test_the_container_dtype_and_raw_bytes_are_accepted():
    vals = np.array([-4096, 256, 4096], np.int16)
    want = v2.tanh_fx16(v2.Tensor(vals.copy(), "fx16", (3,), frac_bits=10)).numpy().tolist()
    raw = vals.view(np.uint8).copy()                     # the case files' raw containers
    t = v2.Tensor(raw, v2.FX_16, (3,), frac_bits=10)
    assert t.numpy().tolist() == vals.tolist()
    assert v2.tanh_fx16(t).numpy().tolist() == want
    for el, dt in (("fx8", np.int8), ("sa8", np.int8), ("sa32", np.int32)):
        assert v2.Tensor(np.zeros(4, dt), el, (4,)).buffer.dtype == dt
    # an el_type without a container (a bad-argument call) takes any native array; C decides
    odd = v2.Tensor(np.zeros(4, np.float32), 0x220, (4,))
    with pytest.raises(mli.MliTypeMismatchError):
        v2.tanh_fx16(odd, None, v2.Tensor.zeros((4,), "fx16"))
    # a buffer that is not an array, or a tensor without data
    assert v2.Tensor(bytearray(8), v2.FX_16, (4,), capacity=8).capacity == 8
    assert v2.Tensor(None, v2.FX_16, (4,)).capacity == 0


def test_other_objects_are_refused():
    with pytest.raises(TypeError, match="^buffer: a list is not a buffer"):
        v2.Tensor([1, 2, 3], v2.FX_16, (3,))
