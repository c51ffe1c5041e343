"""mli.v2 LSTM / GRU cells: every ISA path of this CPU gives the scalar
path's integers (out, and the LSTM's cell) on random calls of every kind,
both roundings, both directions and result modes, every output activation,
M with and without a tail of 8 / 16 / 32 (the AVX-512 sa8 steps' blocks),
sequences beyond one block of hoisted input sums and rows of several 8-bit
chunks, data and weights drawn with their
integer extremes mixed in (saturation corners of every read-out and step),
and sa8 calls with small shifts and int32 biases (read-out parts beyond int32)
or with scales that make the read-outs' roundings meet ties."""
import zlib

import numpy as np
import pytest

import mli
import mli.v2 as v
from mli20_ctypes import AVAILABLE, SKIP_REASON, Oracle

needs_oracle = pytest.mark.skipif(not AVAILABLE, reason=SKIP_REASON)

KINDS = ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32")
ISAS = [i for i in mli.supported_isas() if i != "scalar"]


def _ints(rng, shape, lo, hi, p_ext):
    """Uniform integers in [lo, hi] with a share p_ext of them at lo or hi."""
    a = rng.integers(lo, hi + 1, shape)
    ext = rng.random(shape) < p_ext
    a[ext] = np.where(rng.random(int(ext.sum())) < 0.5, lo, hi)
    return a


def _case(rng, cell, kind, shape=None):
    """A random call; shape = (T, N, M) fixes the sizes."""
    g = 4 if cell == "lstm" else 3
    T, N, M = int(rng.integers(1, 6)), int(rng.integers(1, 40)), int(rng.choice([1, 5, 8, 13, 16, 24, 31, 33, 40, 64, 71]))
    if rng.random() < 0.1:  # blocks of steps beyond one hoist, rows of several 8-bit chunks
        T, N = int(rng.integers(30, 70)), int(rng.integers(500, 1100))
    if shape is not None:
        T, N, M = shape
    p_ext = float(rng.choice([0.0, 0.05, 0.5, 1.0]))
    cfg = v.RnnCellCfg(int(rng.integers(0, 2)), int(rng.integers(0, 2)),
                       int(rng.integers(0, 3)) if cell == "lstm" else v.RNN_ACT_TANH)
    if kind == "sa8_sa8_sa32":
        zx, zh, zc = (int(rng.integers(-128, 128)) for _ in range(3))
        # small shifts and int32 biases: read-out parts beyond int32 (their SAT_32 acts);
        # data scales of 21 * 2^10 (the gates' scale is 21) and weight scales of 2^14:
        # read-out multipliers that are powers of two, so that their roundings meet ties
        wide = rng.random() < 0.2
        pow2 = not wide and rng.random() < 0.2

        def scale(weights=False):
            if pow2:
                return 1 << 14 if weights else 21 << 10
            return int(rng.integers(1 << 14, 1 << 15))
        sx, fx = scale(), int(rng.integers(14, 24))
        if wide:
            fx = int(rng.integers(0, 12))
        x = v.Tensor.sa(_ints(rng, (T, N), -128, 127, p_ext), zx, sx, fx)
        h0 = v.Tensor.sa(_ints(rng, (M,), -128, 127, p_ext), zh, scale(), int(rng.integers(14, 24)))
        per_axis = bool(rng.integers(0, 2))
        if per_axis:
            sw = [scale(True) for _ in range(g)]
            fw = [int(rng.integers(18, 24)) for _ in range(g)]
            wi = v.Tensor.sa(_ints(rng, (g, N, M), -127, 127, p_ext), [0] * g, sw, fw, dim=0)
            wo = v.Tensor.sa(_ints(rng, (g, M, M), -127, 127, p_ext), [0] * g, sw, fw, dim=0)
        else:
            sw, fw = [scale(True)], [int(rng.integers(0, 14) if wide else rng.integers(18, 24))]
            wi = v.Tensor.sa(_ints(rng, (g, N, M), -127, 127, p_ext), 0, sw[0], fw[0])
            wo = v.Tensor.sa(_ints(rng, (g, M, M), -127, 127, p_ext), 0, sw[0], fw[0])
        scales = [(sx * s) >> 15 for s in sw]
        fbs = [fx + f - 15 for f in fw]
        bq = (_ints(rng, (g, M), -(1 << 31), (1 << 31) - 1, 0.3) if wide else
              _ints(rng, (g, M), -(1 << 20), 1 << 20, p_ext / 4))
        b = (v.Tensor.sa(bq, [0] * g, scales, fbs, dim=0, el_type="sa32") if per_axis else
             v.Tensor.sa(bq, 0, scales[0], fbs[0], el_type="sa32"))
        c = v.Tensor.sa(_ints(rng, (M,), -128, 127, p_ext), zc, scale(), int(rng.integers(14, 24)))
        out = v.Tensor.sa(np.zeros((T, M)), int(rng.integers(-128, 128)), scale(), int(rng.integers(14, 24)))
    else:
        w8 = kind != "fx16"
        wel, wlo, whi = ("fx8", -128, 127) if w8 else ("fx16", -32768, 32767)
        fx, fw = int(rng.integers(6, 16)), int(rng.integers(4, 8) if w8 else rng.integers(8, 16))
        x = v.Tensor.fx(_ints(rng, (T, N), -32768, 32767, p_ext), fx)
        h0 = v.Tensor.fx(_ints(rng, (M,), -32768, 32767, p_ext), int(rng.integers(8, 16)))
        wi = v.Tensor.fx(_ints(rng, (g, N, M), wlo, whi, p_ext), fw, wel)
        wo = v.Tensor.fx(_ints(rng, (g, M, M), wlo, whi, p_ext), fw, wel)
        b = v.Tensor.fx(_ints(rng, (g, M), wlo, whi, p_ext), int(rng.integers(0, fx + fw + 1)) if not w8
                        else int(rng.integers(0, 8)), wel)
        c = v.Tensor.fx(_ints(rng, (M,), -32768, 32767, p_ext), int(rng.integers(6, 15)))
        out = v.Tensor.zeros((T, M), "fx16", int(rng.integers(8, 16)))
    return x, h0, wi, wo, b, cfg, c, out


def _run(cell, kind, case, isa, mode):
    x, h0, wi, wo, b, cfg, c, out = case
    cb, ob = c.buffer.copy(), out.buffer.copy()
    fn = getattr(v, f"{cell}_cell_{kind}")
    try:
        with mli.use_isa(isa), mli.rounding(mode):
            if cell == "lstm":
                fn(x, h0, wi, wo, b, None, None, cfg, c, out)
            else:
                fn(x, h0, wi, wo, b, None, None, cfg, out)
        res = ("ok", out.buffer.copy(), c.buffer.copy())
    except mli.MliError as e:
        res = ("err", type(e).__name__)
    c.buffer[:] = cb
    out.buffer[:] = ob
    return res


@pytest.mark.skipif(not ISAS, reason="no SIMD path on this CPU")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", ("lstm", "gru"))
def test_every_path_gives_the_scalar_integers(cell, kind):
    rng = np.random.default_rng(zlib.crc32(f"{cell} {kind}".encode()))
    ok = 0
    for _ in range(150):
        case = _case(rng, cell, kind)
        for mode in ("convergent", "up"):
            want = _run(cell, kind, case, "scalar", mode)
            ok += want[0] == "ok"
            for isa in ISAS:
                got = _run(cell, kind, case, isa, mode)
                assert got[0] == want[0]
                if want[0] == "ok":
                    assert np.array_equal(got[1], want[1]), (isa, mode)
                    assert np.array_equal(got[2], want[2]), (isa, mode)
                else:
                    assert got[1] == want[1]
    assert ok >= 150  # most calls run (the rest are refusals of the drawn formats)


def _fresh_run(cell, kind, case):
    return _run(cell, kind, case, mli.supported_isas()[-1], "convergent")


def _oracle_scratch(cfg, gates, h0, x):
    """A cfg with a scratch buffer for the oracle's call whose address range
    does not meet x's in the low 32 bits: MLI's x86 build compares only those
    (SPEC_MLI2 OVERLAP, [x86]) and refuses buffers that are far apart when
    they alias there, as a sanitizer's allocator makes likely.  The package
    compares whole addresses, as the firmware's 32-bit ones are."""
    held = []
    xa, xn = x.buffer.__array_interface__["data"][0] % 2 ** 32, int(x.capacity)
    for _ in range(64):
        s = v._scratch_cfg(cfg, gates, h0, x)
        if s is cfg:  # the case's own scratch: nothing to choose
            return s
        sa, sn = s.scratch_buffer.__array_interface__["data"][0] % 2 ** 32, int(s.scratch_capacity)
        if (sa - xa) % 2 ** 32 >= xn and (xa - sa) % 2 ** 32 >= sn:
            return s
        held.append(s)  # kept alive so the next one lands elsewhere
    raise AssertionError("no scratch buffer clear of x in the low 32 bits after 64 tries")


@pytest.mark.skipif("avx2" not in ISAS, reason="no AVX2 path on this CPU")
@pytest.mark.parametrize("kind", ("fx16_fx8_fx8", "sa8_sa8_sa32"))
@pytest.mark.parametrize("cell", ("lstm", "gru"))
def test_8bit_weights_past_the_int16_copy(cell, kind):
    """The AVX2 path reads 8-bit packings through an int16 copy up to 2^22
    packed entries (mli2_pw_widen) and the 8-bit loops past it (a packing
    holds 32 entries per 16 outputs and pair of inputs): N = M = 1040 puts
    the LSTM's input and state packings past the limit, N = M = 1200 the GRU's
    input packing."""
    rng = np.random.default_rng(zlib.crc32(f"wide {cell} {kind}".encode()))
    n = 1040 if cell == "lstm" else 1200
    ran = 0
    for _ in range(10):
        case = _case(rng, cell, kind, shape=(2, n, n))
        want = _run(cell, kind, case, "scalar", "convergent")
        got = _run(cell, kind, case, "avx2", "convergent")
        assert got[0] == want[0]
        if want[0] != "ok":
            assert got[1] == want[1]
            continue
        assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])
        ran += 1
        if ran == 2:
            break
    assert ran == 2  # (the rest: refusals of the drawn formats)


@needs_oracle
@pytest.mark.parametrize("kind", KINDS)
def test_weights_changed_in_place_are_packed_again(kind):
    """The packings kept across calls (mli2_pw_acquire) serve only weights of
    the very same values: after a change in place between calls, every path
    still gives MLI 2.0.2's own integers (its x86 build, no packing)."""
    orc = Oracle("conv")
    rng = np.random.default_rng(11)
    checked = 0
    for cell in ("lstm", "gru"):
        for _ in range(15):
            case = _case(rng, cell, kind)
            if _fresh_run(cell, kind, case)[0] != "ok":
                continue
            x, h0, wi, wo, b, cfg, c, out = case
            for w in (wi, wo):
                k = int(rng.integers(0, w.buffer.size))
                w.buffer[k] = -w.buffer[k] if w.buffer[k] not in (0, -128, -32768) else 1
                for isa in mli.supported_isas():
                    got = _run(cell, kind, case, isa, "convergent")
                    cb, ob = c.buffer.copy(), out.buffer.copy()
                    args = (x, h0, wi, wo, b, None, None, _oracle_scratch(cfg, 4 if cell == "lstm" else 3, h0, x))
                    st = orc.call(f"{cell}_cell_{kind}", *(args + ((c, out) if cell == "lstm" else (out,))))
                    want_out, want_c = out.buffer.copy(), c.buffer.copy()
                    c.buffer[:] = cb
                    out.buffer[:] = ob
                    assert st == 0 and got[0] == "ok"
                    assert np.array_equal(got[1], want_out) and np.array_equal(got[2], want_c), isa
                    checked += 1
    assert checked >= 20


def test_cells_on_threads_give_the_single_thread_integers():
    """Calls on several threads at once (the GIL released; the kept packings
    taken by one call at a time) give what each gives alone."""
    import threading

    rng = np.random.default_rng(12)
    cases = []
    while len(cases) < 12:
        cell, kind = ("lstm", "gru")[len(cases) % 2], KINDS[len(cases) % 3]
        case = _case(rng, cell, kind)
        want = _fresh_run(cell, kind, case)
        if want[0] == "ok":
            cases.append((cell, kind, case, want))
    bad = []

    def work(i):
        for r in range(30):
            cell, kind, case, want = cases[(i + r) % len(cases)]
            # each thread its own outputs (the inputs are shared, read only)
            x, h0, wi, wo, b, cfg, c, out = case
            c2 = v.Tensor.fx(c.numpy(), c.frac_bits) if not c.is_sa else \
                v.Tensor.sa(c.numpy(), int(c.zero_point[0]), int(c.scale[0]), int(c.scale_frac_bits[0]))
            tm = (x.shape[0], h0.shape[0])  # (out's shape is rewritten by a call)
            out2 = v.Tensor.zeros(tm, "fx16", out.frac_bits) if not out.is_sa else \
                v.Tensor.sa(np.zeros(tm), int(out.zero_point[0]), int(out.scale[0]), int(out.scale_frac_bits[0]))
            got = _fresh_run(cell, kind, (x, h0, wi, wo, b, cfg, c2, out2))
            if not (got[0] == "ok" and np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])):
                bad.append((i, r))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad


def test_lut_changed_in_place_is_seen():
    """The sa8 activation tables kept across calls (mli2_act_sa8_table_kept)
    serve only LUTs of the very same values: after a change of a LUT in place,
    a call gives what it gives once every kept table is gone."""
    rng = np.random.default_rng(13)
    for cell in ("lstm", "gru"):
        while True:
            case = _case(rng, cell, "sa8_sa8_sa32")
            if _fresh_run(cell, "sa8_sa8_sa32", case)[0] == "ok":
                break
        x, h0, wi, wo, b, cfg, c, out = case
        fn = getattr(v, f"{cell}_cell_sa8_sa8_sa32")

        def run(sl):
            cb, ob = c.buffer.copy(), out.buffer.copy()
            if cell == "lstm":
                fn(x, h0, wi, wo, b, v.tanh_lut(), sl, cfg, c, out)
            else:
                fn(x, h0, wi, wo, b, v.tanh_lut(), sl, cfg, out)
            r = (out.buffer.copy(), c.buffer.copy())
            c.buffer[:] = cb
            out.buffer[:] = ob
            return r

        def sigm_copy():
            lut = v.Lut(v.sigm_get_lut_size())
            v.sigm_create_lut(lut)
            return lut

        sl = sigm_copy()
        before = run(sl)
        sl.buffer[:sl.length] = np.clip(sl.buffer[:sl.length].astype(np.int32) // 2 + 9000, -32768, 32767)
        changed = run(sl)
        for j in range(24):  # other tables until every kept one is gone
            other = sigm_copy()
            other.buffer[j] += 1
            run(other)
        assert all(np.array_equal(a, b) for a, b in zip(changed, run(sl)))
        assert not all(np.array_equal(a, b) for a, b in zip(changed, before))
