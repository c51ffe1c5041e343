"""Every instruction-set path gives the same integers: the reference cases
on each path the CPU supports, and the paths against each other on
adversarial data (full-scale weights and inputs, long rows that cross the
int32 chunk boundaries of the SIMD dot products, odd sizes)."""
import numpy as np
import pytest

import mli
from conftest import MLI11, NEEDS_SHARED, mli11_cases
from mli.tools.vectors import run_case

PATHS = mli.supported_isas()


@NEEDS_SHARED
@pytest.mark.parametrize("isa", PATHS)
def test_reference_cases_on_every_path(isa):
    failed = []
    with mli.use_isa(isa):
        for rounding in ("convergent", "up"):
            for case in mli11_cases():
                r = run_case(str(MLI11 / f"{case}.npz"), rounding=rounding)
                if not r.passed:
                    failed.append(f"{case} [{rounding}]: {r.message}")
    assert not failed, "\n".join(failed[:20])


def extreme(rng, shape, dt, mode):
    info = np.iinfo(dt)
    if mode in ("trained", "spike_in", "spike_st"):
        # heavy-tailed small values, as trained weights are: long int32 chunks
        # in the direct int16 form; a spike (a -32768 pair on one row) forces
        # the split form on the input or the state part of the weights
        v = np.clip(rng.laplace(0, info.max / 40, shape), info.min, info.max).astype(dt)
        if mode != "trained" and np.ndim(np.empty(shape, np.int8)) == 3 and shape[-1] >= 4:
            col = 0 if mode == "spike_in" else shape[-1] - 2
            v[shape[0] - 1, shape[1] // 2, col:col + 2] = info.min
        return v
    if mode == "min":
        return np.full(shape, info.min, dt)
    if mode == "max":
        return np.full(shape, info.max, dt)
    if mode == "edges":
        return rng.choice(np.array([info.min, info.max, info.min + 1, -1, 0], dt), size=shape)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("kind", ["fx8", "fx16", "fx8w16d"])
@pytest.mark.parametrize("mode", ["min", "max", "edges", "random", "trained", "spike_in", "spike_st"])
@pytest.mark.parametrize("shape", [(1, 1, 3), (33, 17, 5), (300, 100, 3), (9, 257, 2), (37, 45, 1), (5, 30, 1),
                                   (40, 24, 75), (20, 32, 40), (3, 48, 2)])  # M % 16 == 0: the fused LSTM step
@pytest.mark.parametrize("rounding", ["convergent", "up"])
def test_paths_agree(kind, mode, shape, rounding):
    N, M, T = shape
    rng = np.random.default_rng(hash((kind, mode, shape)) % 2**32)
    dt = np.int8 if kind == "fx8" else np.int16
    wt = np.int16 if kind == "fx16" else np.int8
    q = 7 if kind == "fx8" else 15
    x, h0, c0 = extreme(rng, (T, N), dt, mode), extreme(rng, M, dt, mode), extreme(rng, M, dt, "random")
    w4, b4 = extreme(rng, (4, M, N + M), wt, mode), extreme(rng, (4, M), wt, mode)
    results = {}
    for isa in PATHS:
        with mli.use_isa(isa), mli.rounding(rounding):
            outs = []
            for fi, fh, fw in ((q - 3, q, q), (q, q - 2, q - 1), (2, q, 3)):  # in_to_state < 0, > 0, < 0
                args = (mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w4, fw), mli.Tensor(b4, fw))
                for act in (0, 1, 2):
                    y, c = mli.lstm_cell(*args, mli.RnnCellConfig(mode=1, act=act), mli.Tensor(c0, q - 4))
                    outs += [y.numpy().copy(), c.numpy().copy()]
                    r = mli.basic_rnn_cell(args[0], args[1], mli.Tensor(w4[0], fw), mli.Tensor(b4[0], fw),
                                           mli.RnnCellConfig(mode=1, act=act), out_frac_bits=q - 5)
                    outs.append(r.numpy().copy())
            v = np.arange(-2 ** (8 * dt().itemsize - 1), 2 ** (8 * dt().itemsize - 1), 7).astype(dt)
            for f in (0, 3, 9, 15, 20):
                outs += [mli.tanh(mli.Tensor(v, f)).numpy().copy(), mli.sigm(mli.Tensor(v, f)).numpy().copy()]
            results[isa] = outs
    for isa in PATHS[1:]:
        for i, (a, b) in enumerate(zip(results["scalar"], results[isa])):
            np.testing.assert_array_equal(a, b, err_msg=f"{isa} differs from scalar in output {i}")


def test_set_isa_rejects_unknown():
    with pytest.raises(ValueError, match="expected one of"):
        mli.set_isa("sse9")
    assert mli.isa() in PATHS


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("kind", ["fx16", "fx8w16d", "fx8"])
@pytest.mark.parametrize("mode", ["trained", "spike_in", "spike_st", "edges"])
def test_prepared_reuse_agrees(kind, mode):
    # a prepared call keeps its packed weights and chunk tables across calls
    N, M, T = 21, 19, 40
    rng = np.random.default_rng(7)
    dt = np.int8 if kind == "fx8" else np.int16
    wt = np.int16 if kind == "fx16" else np.int8
    q = 7 if kind == "fx8" else 15
    w4, b4 = extreme(rng, (4, M, N + M), wt, mode), extreme(rng, (4, M), wt, "trained")
    W, B = mli.Tensor(w4, q), mli.Tensor(b4, q)
    xs = [extreme(rng, (T, N), dt, "random") for _ in range(3)]
    h0, c0 = extreme(rng, M, dt, "random"), extreme(rng, M, dt, "random")
    want = []
    with mli.use_isa("scalar"):
        for x in xs:
            y, c = mli.lstm_cell(mli.Tensor(x, q - 3), mli.Tensor(h0, q), W, B,
                                 mli.RnnCellConfig(mode=1, act=1), mli.Tensor(c0, q - 4))
            want.append((y.numpy().copy(), c.numpy().copy()))
    for isa in PATHS[1:]:
        with mli.use_isa(isa):
            xt = mli.Tensor(np.zeros((T, N), dt), q - 3)
            y = mli.Tensor(np.zeros((T, M), dt), 0)
            c = mli.Tensor(np.zeros(M, dt), q - 4)
            ir = mli.Tensor(np.zeros((4, M), dt), 0)
            call = mli.prepare(getattr(mli, f"lstm_cell_{kind}"), xt, mli.Tensor(h0, q), W, B,
                               mli.RnnCellConfig(mode=1, act=1, ir=ir), c, out=y)
            for x, (wy, wc) in zip(xs, want):
                xt.numpy()[...] = x
                c.numpy()[...] = c0
                call()
                np.testing.assert_array_equal(y.numpy(), wy, err_msg=isa)
                np.testing.assert_array_equal(c.numpy(), wc, err_msg=isa)


def _calls_agree_with_scalar(run):
    # run(isa) -> a list of calls' outputs (tuples of arrays), compared call
    # by call with the scalar path's
    want = run("scalar")
    for isa in PATHS[1:]:
        for i, (g, w) in enumerate(zip(run(isa), want)):
            for a, e in zip(g, w):
                np.testing.assert_array_equal(a, e, err_msg=f"call {i}: {isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("kind", ["fx16", "fx8w16d", "fx8"])
@pytest.mark.parametrize("cell", ["lstm", "rnn"])
def test_one_step_calls_follow_weights_and_bias_changed_in_place(kind, cell):
    # one-step calls with out= given keep the packed weights, and what is
    # derived from them and the bias (largest row sums of |w|, bias terms,
    # bounds), while the caller's weights stay byte for byte the same; the
    # caller then rewrites its weights and bias in place between calls: small
    # ones, full-scale ones (other bounds, other chunking), the bias alone.
    # Every call must give the scalar path's integers.
    N, M = 9, 32  # M % 16 == 0: the fused step
    rng = np.random.default_rng(11)
    dt = np.int8 if kind == "fx8" else np.int16
    wt = np.int16 if kind == "fx16" else np.int8
    q = 7 if kind == "fx8" else 15
    G = 4 if cell == "lstm" else 1
    w_np = extreme(rng, (G, M, N + M) if G > 1 else (M, N + M), wt, "trained")
    b_np = extreme(rng, (G, M) if G > 1 else (M,), wt, "trained")
    fn = getattr(mli, f"{'lstm_cell' if cell == 'lstm' else 'basic_rnn_cell'}_{kind}")
    W, B = mli.Tensor(w_np, q), mli.Tensor(b_np, q - 2)
    h = mli.Tensor(extreme(rng, M, dt, "random"), q)
    c0 = extreme(rng, M, dt, "random")
    sets = []
    for wm, bm in (("trained", "trained"), ("edges", "trained"), ("max", "max"), ("keep", "min"), ("keep", "edges"),
                   ("trained", "trained"), ("keep", "max"), ("random", "random"), ("keep", "trained")):
        w_new = sets[-1][0] if wm == "keep" else extreme(rng, w_np.shape, wt, wm)
        sets.append((w_new, extreme(rng, b_np.shape, wt, bm)))
    xs = [mli.Tensor(extreme(rng, N, dt, "random"), q - 3) for _ in sets]

    def run(isa):
        got = []
        with mli.use_isa(isa):
            out = mli.Tensor(np.zeros(M, dt), 0)
            c_out = mli.Tensor(np.zeros(M, dt), q - 4)
            for (w_new, b_new), x in zip(sets, xs):
                w_np[...] = w_new  # the caller's arrays, under their mli.Tensor
                b_np[...] = b_new
                for _ in range(2):  # the second call reuses what the first packed
                    cfg = mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE, act=1)
                    if cell == "lstm":
                        fn(x, h, W, B, cfg, mli.Tensor(c0, q - 4), out=out, cell_out=c_out)
                        got.append((out.numpy().copy(), c_out.numpy().copy()))
                    else:
                        fn(x, h, W, B, cfg, out=out)
                        got.append((out.numpy().copy(),))
        return got

    _calls_agree_with_scalar(run)


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("kind", ["fx8", "fx16", "fx8w16d"])
def test_fused_lstm_step_agrees(kind):
    # trained-like weights, biases and formats with M % 16 == 0, where the fused
    # AVX-512 LSTM step's preconditions hold (no partial sum near the 40-bit
    # limit; 8-bit weights: often the int32 read-out), across hoisting blocks;
    # M past 64 for the per-group state sums (one chunk, eight accumulators or
    # the chunk table, as the weights' scale and the state allow)
    dt = np.int8 if kind == "fx8" else np.int16
    wt = np.int16 if kind == "fx16" else np.int8
    q = 7 if kind == "fx8" else 15
    wi, di = np.iinfo(wt), np.iinfo(dt)
    for i in range(40):
        rng = np.random.default_rng([17, i, q, wi.bits])
        N, M, T = int(rng.choice([1, 3, 16, 31, 64])), int(rng.choice([16, 32, 48, 64, 80, 128])), int(rng.choice([1, 5, 33, 40]))
        sc = float(rng.choice([0.05, 0.15, 0.5, 1.0]))
        w = np.clip(rng.normal(0, sc * wi.max / np.sqrt(N + M), (4, M, N + M)), wi.min, wi.max).astype(wt)
        b = np.clip(rng.normal(0, wi.max / 8, (4, M)), wi.min, wi.max).astype(wt)
        x = rng.integers(di.min, di.max, (T, N), endpoint=True).astype(dt)
        h0, c0 = rng.integers(di.min, di.max, M, endpoint=True).astype(dt), rng.integers(di.min, di.max, M).astype(dt)
        fi, fh, fw = int(rng.integers(q - 7, q + 1)), int(rng.integers(q - 5, q + 1)), int(rng.integers(q - 5, q + 1))
        fb, fc = max(0, fw - int(rng.integers(0, 3))), int(rng.integers(q - 6, q + 1))
        act, mode = int(rng.integers(0, 3)), int(rng.choice([1, 2]))
        rounding = str(rng.choice(["convergent", "up"]))
        got = {}
        for isa in PATHS:
            with mli.use_isa(isa), mli.rounding(rounding):
                y, c = mli.lstm_cell(mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w, fw), mli.Tensor(b, fb),
                                     mli.RnnCellConfig(mode=mode, act=act), mli.Tensor(c0, fc))
                got[isa] = (y.numpy().copy(), c.numpy().copy())
        for isa in PATHS[1:]:
            for a, bb in zip(got["scalar"], got[isa]):
                np.testing.assert_array_equal(a, bb, err_msg=f"case {i}: {isa} differs from scalar")


# formats (f_in, f_h, f_w, f_b) of the AVX2 fused steps' int32 read-out: for
# fx16 the read-out shift os = f_h + f_w - 12 and D = its + os, from os = 1
# (a tie every few values) to 28 (few chunks fit below 2^31), its < 0, = 0
# and > 0, D at its lower limit 9, and bias terms up to 2^36 (the high part
# clamped, the result saturated); for 8-bit weights the 32-bit register's
# bounds from both sides
AVX2_FORMATS = {
    "fx16": [(15, 15, 15, 15), (12, 15, 15, 15), (15, 6, 8, 8), (15, 3, 10, 10), (14, 15, 15, 8), (6, 15, 15, 15),
             (15, 20, 20, 20), (13, 13, 14, 0), (15, 15, 15, 6)],
    "fx8w16d": [(12, 15, 7, 7), (15, 15, 7, 7), (15, 8, 7, 2), (9, 15, 7, 7), (15, 12, 6, 0), (15, 15, 4, 7)],
    "fx8": [(4, 7, 7, 7), (7, 7, 7, 7), (7, 3, 4, 1), (2, 7, 7, 7), (7, 6, 3, 0), (7, 7, 2, 7)],
}


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("kind", ["fx16", "fx8w16d", "fx8"])
@pytest.mark.parametrize("wmode", ["full", "edges", "pairs", "trained", "small"])
def test_fused_readout_limits_agree(kind, wmode):
    # weights and data at full scale (rows whose int32 chunks end near 2^31,
    # -32768 * -32768 products), biases up to the largest bias terms the
    # fused steps take, ties of the rounding, every activation and both
    # rounding modes, M % 16 == 0: the fused LSTM steps and the RNN next to
    # the stepped scalar path, the LSTM's gates (cfg.ir) included
    dt = np.int8 if kind == "fx8" else np.int16
    wt = np.int16 if kind == "fx16" else np.int8
    wi, di = np.iinfo(wt), np.iinfo(dt)
    for i, (fi, fh, fw, fb) in enumerate(AVX2_FORMATS[kind]):
        rng = np.random.default_rng([23, i, wi.bits, di.bits, len(wmode)])
        # N x M beyond 4096 / 4M: the input part of blocks of 32 steps ahead, 4 steps per weight load
        N, M, T = int(rng.choice([1, 2, 17, 32, 80])), int(rng.choice([16, 32, 64])), int(rng.choice([2, 5, 38]))
        shape = (4, M, N + M)
        if wmode == "full":
            w = rng.integers(wi.min, wi.max, shape, endpoint=True).astype(wt)
        elif wmode == "edges":
            w = rng.choice(np.array([wi.min, wi.max, wi.min + 1, -1, 0, 1], wt), size=shape)
        elif wmode == "pairs":  # |w0| + |w1| = 65535 (16-bit): every pair fills a chunk
            w = np.tile(np.array([wi.max, wi.min], wt), (4, M, (N + M + 1) // 2))[..., :N + M]
            w = w * rng.choice(np.array([1, -1], wt), size=(4, M, 1)).astype(wt)
        elif wmode == "small":  # small sums: the fused steps take even the smallest shifts
            w = rng.integers(-(wi.max // 500) - 1, wi.max // 500 + 1, shape, endpoint=True).astype(wt)
        else:
            w = np.clip(rng.laplace(0, wi.max / 30, shape), wi.min, wi.max).astype(wt)
        b = rng.choice(np.array([wi.min, wi.max, 0, wi.max // 3], wt), size=(4, M))
        x = rng.choice(np.array([di.min, di.max, di.min + 1, 0], dt), size=(T, N))
        h0 = rng.choice(np.array([di.min, di.max], dt), size=M)
        c0 = rng.integers(di.min, di.max, M, endpoint=True).astype(dt)
        got = {}
        for isa in PATHS:
            outs = []
            for rounding in ("convergent", "up"):
                for act in (0, 1, 2):
                    with mli.use_isa(isa), mli.rounding(rounding):
                        ir = mli.Tensor(np.zeros(4 * M, dt), 0)
                        y, c = mli.lstm_cell(mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w, fw),
                                             mli.Tensor(b, fb), mli.RnnCellConfig(mode=1, act=act, ir=ir),
                                             mli.Tensor(c0, min(max(0, fh - 3), di.bits - 2)))
                        outs += [y.numpy().copy(), c.numpy().copy(), ir.numpy().copy()]
                        for mode in (1, 2):  # batch-to-batch, batch-to-last (the dense results in cfg.ir)
                            rir = mli.Tensor(np.zeros(M, dt), 0)
                            r = mli.basic_rnn_cell(mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w[0], fw),
                                                   mli.Tensor(b[0], fb), mli.RnnCellConfig(mode=mode, act=act, ir=rir),
                                                   out_frac_bits=fh)
                            outs += [r.numpy().copy(), rir.numpy().copy()]
            got[isa] = outs
        for isa in PATHS[1:]:
            for j, (a, bb) in enumerate(zip(got["scalar"], got[isa])):
                np.testing.assert_array_equal(a, bb, err_msg=f"format {i} output {j}: {isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("M", [16, 32, 64, 80, 128])  # the AVX-512 step sums four groups at once up to 64
@pytest.mark.parametrize("below", [0, 1])
@pytest.mark.parametrize("rounding", ["convergent", "up"])
def test_fused_one_chunk_boundary_agrees(M, below, rounding):
    # the fused steps sum a row of the state part in one int32 chunk where
    # max|h| times the row's sum of |w| is below 2^31: state weights all
    # -16384 and h0 all -2^31 / (16384 M) put every row's sum at exactly 2^31
    # (one chunk would wrap), and one less at 2^31 - 16384 M (one chunk is
    # exact); the later steps' h are what the cell makes of it
    N, T = 16, 40
    w = np.zeros((4, M, N + M), np.int16)
    w[:, :, N:] = -16384
    w[:, :, :N] = np.arange(4 * M * N).reshape(4, M, N) % 7 - 3
    h0 = np.full(M, -(2 ** 31 // (16384 * M)) + below, np.int16)
    x = (np.arange(T * N).reshape(T, N) % 11 - 5).astype(np.int16)
    b, c0 = np.zeros((4, M), np.int16), np.zeros(M, np.int16)
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa), mli.rounding(rounding):
            outs = []
            for fh, fw in ((15, 15), (12, 15), (15, 10)):
                ir = mli.Tensor(np.zeros(4 * M, np.int16), 0)
                y, c = mli.lstm_cell(mli.Tensor(x, 15), mli.Tensor(h0, fh), mli.Tensor(w, fw), mli.Tensor(b, fw),
                                     mli.RnnCellConfig(mode=1, act=1, ir=ir), mli.Tensor(c0, 12))
                outs += [y.numpy().copy(), c.numpy().copy(), ir.numpy().copy()]
            got[isa] = outs
    for isa in PATHS[1:]:
        for j, (a, bb) in enumerate(zip(got["scalar"], got[isa])):
            np.testing.assert_array_equal(a, bb, err_msg=f"output {j}: {isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("M", [16, 20])
@pytest.mark.parametrize("xv,wv", [(-1024, -16384), (-1023, -16384), (-32768, -512), (-32767, -512)])
@pytest.mark.parametrize("cell", ["lstm", "rnn"])
def test_hoisted_one_chunk_boundary_agrees(M, xv, wv, cell):
    # the input sums of blocks of steps take whole rows as one int32 chunk
    # where max|x| over the block times the largest row sum of |w| is below
    # 2^31: N = 128 input weights all wv and x all xv put every row's input
    # sum at exactly 2^31 (-1024 * -16384 * 128; -32768 * -512 * 128, where
    # |x| is 32768) or at 2^31 less one |x|'s worth; T = 39 steps make blocks
    # of 32 and 7 (passes of 8, 4, 2 and 1 steps), M = 20 an odd group count
    N, T = 128, 39
    g = 4 if cell == "lstm" else 1
    w = np.zeros((g * M, N + M), np.int16)
    w[:, :N] = wv
    w[:, N:] = np.arange(g * M * M).reshape(g * M, M) % 5 - 2
    x = np.full((T, N), xv, np.int16)
    x[::3, ::5] = xv // 2  # not every step the same
    b, h0, c0 = np.zeros(g * M, np.int16), np.zeros(M, np.int16), np.zeros(M, np.int16)
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa):
            outs = []
            for fw in (15, 9):
                if cell == "lstm":
                    ir = mli.Tensor(np.zeros(4 * M, np.int16), 0)
                    y, c = mli.lstm_cell(mli.Tensor(x, 15), mli.Tensor(h0, 15), mli.Tensor(w.reshape(4, M, N + M), fw),
                                         mli.Tensor(b.reshape(4, M), fw), mli.RnnCellConfig(mode=1, act=1, ir=ir),
                                         mli.Tensor(c0, 12))
                    outs += [y.numpy().copy(), c.numpy().copy(), ir.numpy().copy()]
                else:
                    y = mli.basic_rnn_cell(mli.Tensor(x, 15), mli.Tensor(h0, 15), mli.Tensor(w, fw), mli.Tensor(b, fw),
                                           mli.RnnCellConfig(mode=1, act=1))
                    outs.append(y.numpy().copy())
            got[isa] = outs
    for isa in PATHS[1:]:
        for j, (a, bb) in enumerate(zip(got["scalar"], got[isa])):
            np.testing.assert_array_equal(a, bb, err_msg=f"output {j}: {isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("shape", [(67, 20, 2), (130, 16, 9), (99, 37, 33), (256, 48, 70), (65, 64, 41), (1025, 8, 3)])
def test_hoisted_whole_rows_agree(shape):
    # input sums hoisted for blocks of steps (4 M N > 4096, T > 1) with
    # |x| <= 2^10 and |w| <= 2^9, so every row is one chunk: odd N (a padded
    # last pair), M not a multiple of 16 (padded rows), odd group counts,
    # blocks of 32 steps and their tails of 8, 4, 2 and 1
    N, M, T = shape
    rng = np.random.default_rng(N * 1000 + M * 10 + T)
    x = rng.integers(-1024, 1025, (T, N)).astype(np.int16)
    w = rng.integers(-512, 513, (4, M, N + M)).astype(np.int16)
    b = rng.integers(-4000, 4001, (4, M)).astype(np.int16)
    h0, c0 = rng.integers(-9000, 9001, M).astype(np.int16), rng.integers(-4000, 4001, M).astype(np.int16)
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa):
            outs = []
            for fi, fh, fw in ((12, 15, 15), (15, 13, 11)):
                y, c = mli.lstm_cell(mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w, fw), mli.Tensor(b, fw),
                                     mli.RnnCellConfig(mode=1, act=1), mli.Tensor(c0, 12))
                r = mli.basic_rnn_cell(mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w[0], fw),
                                       mli.Tensor(b[0], fw), mli.RnnCellConfig(mode=1, act=1))
                outs += [y.numpy().copy(), c.numpy().copy(), r.numpy().copy()]
            got[isa] = outs
    for isa in PATHS[1:]:
        for j, (a, bb) in enumerate(zip(got["scalar"], got[isa])):
            np.testing.assert_array_equal(a, bb, err_msg=f"output {j}: {isa} differs from scalar")


def _staggered_chunks(rows, pairs, w0, w1):
    # pairs of weights (w0, w1) whose chunks (sum of |w| <= 65535 a row)
    # end at different pairs in each group of 16 rows: group j starts with
    # j light pairs (1, -2); every pair adds -|x| to the sum for x = 32767
    w = np.empty((rows, 2 * pairs), np.int16)
    for k in range(rows):
        light = (k // 16) % 4
        w[k, 0::2] = [1 if p < light else w0 for p in range(pairs)]
        w[k, 1::2] = [-2 if p < light else w1 for p in range(pairs)]
    return w


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("f_out", [2, 3, 4])
@pytest.mark.parametrize("part", ["input", "state"])
def test_avx2_block_pieces_agree(f_out, part):
    # the AVX2 step cuts a block of four groups' sums wherever a chunk of any
    # of them ends; with chunks ending at staggered pairs a row is in up to
    # four times as many pieces as it has chunks, each adding a low part of
    # nearly 2^D (the sums of the pieces just below zero): at D = 28 the low
    # parts once summed past 2^32 (f_out 2: -16 where MLI gives 0)
    N = M = 64
    w = np.zeros((M, N + M), np.int16)
    if part == "input":
        w[:, :N] = _staggered_chunks(M, N // 2, 5000, -5001)  # chunks of 6 pairs
    else:
        w[:, N:] = _staggered_chunks(M, M // 2, 4500, -4501)  # chunks of 7 pairs
    x = np.full((3, N), 32767, np.int16)
    h0 = np.full(M, 32767 if part == "state" else 0, np.int16)
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa):
            y = mli.basic_rnn_cell_fx16(mli.Tensor(x, 15), mli.Tensor(h0, 15), mli.Tensor(w, 15),
                                        mli.Tensor(np.zeros(M, np.int16), 15), mli.RnnCellConfig(mode=1, act=0),
                                        out_frac_bits=f_out)
            got[isa] = y.numpy().copy()
    for isa in PATHS[1:]:
        np.testing.assert_array_equal(got[isa], got["scalar"], err_msg=f"{isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("mh", [1024, 8191, 8192, 10923, 16383, 16384, 32767, 32768])
@pytest.mark.parametrize("part", ["input", "state", "hoisted"])
@pytest.mark.parametrize("cell", ["lstm", "rnn"])
def test_full_chunks_agree(mh, part, cell):
    # weight pairs (-32768, -32767) fill a chunk of the tables each (sum |w|
    # 65535 a row, the most a chunk holds) and v all -max|v| makes every
    # pair add 65535 max|v|, so any run of chunks summed as one int32 where
    # max|v| does not allow it would pass 2^31 (two pairs from max|v| 16384
    # on); staggered light pairs at the start of each group of 16 rows cut
    # the AVX2 blocks' pieces at different pairs.  The basic RNN's output
    # shift of 25 keeps the sums (up to 2^36) from saturating, so that an
    # error of 2^32 shows
    g = 4 if cell == "lstm" else 1
    M = 64
    N = 128 if part == "hoisted" else 64  # 4 M N > 4096: the input sums of blocks of steps
    T = 5
    w = np.zeros((g * M, N + M), np.int16)
    cols = slice(N, N + M) if part == "state" else slice(0, N)
    width = M if part == "state" else N
    w[:, cols] = _staggered_chunks(g * M, width // 2, -32768, -32767)
    w[:, N:] += (np.arange(g * M * M).reshape(g * M, M) % 3 - 1).astype(np.int16) * (part != "state")
    v = -mh if mh < 32768 else -32768
    x = np.full((T, N), v if part != "state" else 3, np.int16)
    x[1::2, ::3] = 5  # the later steps' inputs not all at the extreme
    h0 = np.full(M, v if part == "state" else 0, np.int16)
    b, c0 = np.zeros(g * M, np.int16), np.zeros(M, np.int16)
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa):
            if cell == "lstm":
                ir = mli.Tensor(np.zeros(4 * M, np.int16), 0)
                y, c = mli.lstm_cell(mli.Tensor(x, 15), mli.Tensor(h0, 15), mli.Tensor(w.reshape(4, M, N + M), 15),
                                     mli.Tensor(b.reshape(4, M), 15), mli.RnnCellConfig(mode=1, act=1, ir=ir),
                                     mli.Tensor(c0, 12))
                got[isa] = [y.numpy().copy(), c.numpy().copy(), ir.numpy().copy()]
            else:
                got[isa] = [mli.basic_rnn_cell_fx16(mli.Tensor(x, 15), mli.Tensor(h0, 15), mli.Tensor(w, 15),
                                                    mli.Tensor(b, 15), mli.RnnCellConfig(mode=1, act=0),
                                                    out_frac_bits=f_out).numpy().copy() for f_out in (15, 5)]
    for isa in PATHS[1:]:
        for j, (a, bb) in enumerate(zip(got["scalar"], got[isa])):
            np.testing.assert_array_equal(a, bb, err_msg=f"output {j}: {isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("m", [32767, 32768])
@pytest.mark.parametrize("cell", ["lstm", "rnn"])
def test_hoisted_8bit_weight_sums_at_the_int32_bound(m, cell):
    # fx8w16d with N = 512 and every input weight -128: a row's sum of |w|
    # is 65536, so inputs all -m sum to m * 2^16, one int32 for m = 32767
    # and 2^31 (wrapped: -2^31) for m = 32768.  The plans are too large for
    # the widened copy (4 groups times N + M > 2048 int16), so the input
    # sums of the hoisted blocks come from the 8-bit weights themselves: a
    # whole-row pass that skipped its bound would flip the sign there
    N, M, T = 512, 16 if cell == "lstm" else 64, 3
    g = 4 if cell == "lstm" else 1
    w = np.zeros((g * M, N + M), np.int8)
    w[:, :N] = -128
    w[:, N:] = (np.arange(g * M * M).reshape(g * M, M) % 5 - 2).astype(np.int8)
    x = np.full((T, N), -m, np.int64).clip(-32768, 32767).astype(np.int16)
    x[1, ::7] = 5  # one step not all at the extreme
    h0 = np.arange(M, dtype=np.int16) * 100
    b = np.zeros(g * M, np.int8)
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa):
            if cell == "lstm":
                y, c = mli.lstm_cell_fx8w16d(mli.Tensor(x, 0), mli.Tensor(h0, 15), mli.Tensor(w.reshape(4, M, N + M), 7),
                                             mli.Tensor(b.reshape(4, M), 7), mli.RnnCellConfig(mode=1, act=1),
                                             mli.Tensor(np.zeros(M, np.int16), 12))
                got[isa] = [y.numpy().copy(), c.numpy().copy()]
            else:
                got[isa] = [mli.basic_rnn_cell_fx8w16d(mli.Tensor(x, 0), mli.Tensor(h0, 15), mli.Tensor(w, 7),
                                                       mli.Tensor(b, 7), mli.RnnCellConfig(mode=1, act=0)).numpy().copy()]
    if cell == "rnn":  # the first step's sums are positive (a wrapped one would read negative)
        assert (got["scalar"][0][0] > 0).all()
    for isa in PATHS[1:]:
        for j, (a, bb) in enumerate(zip(got["scalar"], got[isa])):
            np.testing.assert_array_equal(a, bb, err_msg=f"output {j}: {isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("mh", [8191, 8192, 8193, 16384, 32768])
@pytest.mark.parametrize("pattern", ["every", "mod4", "residue3"])
def test_split8_state_sums_agree(mh, pattern):
    # The AVX-512 fx16 LSTM sums the state part with eight accumulators,
    # pair p into accumulator p mod 8, where max|h| times the largest sum of
    # |w| of a row over any one residue is below 2^31 (and one int32 per row
    # is not enough).  Heavy pairs (-32768, -32767) add 65535 max|h| each
    # for h all -max|h|: four in one accumulator pass 2^31 from max|h| 8193
    # on.  "every": every pair heavy (four per residue, the limit at 8192);
    # "mod4": pairs 0, 4, 8, ... (two residues hold them: a loop that merged
    # residues 0 and 4 would be 2^32 off at the limit); "residue3": pairs
    # 3, 11, 19, 27 and light pairs elsewhere (a bound over some residues
    # only would let the split run past 8192)
    M, N, T = 64, 16, 3
    pairs = np.arange(M // 2)
    heavy = {"every": np.ones(M // 2, bool), "mod4": pairs % 4 == 0, "residue3": pairs % 8 == 3}[pattern]
    ws = np.empty((4 * M, M), np.int16)
    ws[:, 0::2] = np.where(heavy, -32768, 1)
    ws[:, 1::2] = np.where(heavy, -32767, -2)
    w = np.concatenate([np.ones((4 * M, N), np.int16), ws], axis=1)
    x = np.full((T, N), 3, np.int16)
    h0 = np.full(M, -mh if mh < 32768 else -32768, np.int16)
    b, c0 = np.zeros(4 * M, np.int16), np.arange(M, dtype=np.int16) * 64
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa):
            ir = mli.Tensor(np.zeros(4 * M, np.int16), 0)
            y, c = mli.lstm_cell(mli.Tensor(x, 15), mli.Tensor(h0, 15), mli.Tensor(w.reshape(4, M, N + M), 15),
                                 mli.Tensor(b.reshape(4, M), 15), mli.RnnCellConfig(mode=1, act=1, ir=ir),
                                 mli.Tensor(c0, 12))
            got[isa] = [y.numpy().copy(), c.numpy().copy(), ir.numpy().copy()]
    for isa in PATHS[1:]:
        for j, (a, bb) in enumerate(zip(got["scalar"], got[isa])):
            np.testing.assert_array_equal(a, bb, err_msg=f"output {j}: {isa} differs from scalar")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
def test_split8_bound_follows_weights_changed_in_place():
    # The bound over every eighth pair is kept with the packing; one-step
    # calls with out= reuse the packing while the caller's weights stay the
    # same bytes.  Weights rewritten in place between calls must not keep
    # the old bound: first pairs of +-8000 (the split exact for any h), then
    # pairs of (-32768, -32767), where with h at -32768 the old bound would
    # take the split and each accumulator's sum would pass 2^31.
    M, N = 64, 16
    moderate = np.tile(np.array([8000, -8000], np.int16), (4 * M, M // 2))
    heavy = np.tile(np.array([-32768, -32767], np.int16), (4 * M, M // 2))
    w_np = np.ones((4, M, N + M), np.int16)
    b_np = np.zeros((4, M), np.int16)
    x = mli.Tensor(np.full(N, 3, np.int16), 15)
    h = mli.Tensor(np.full(M, -32768, np.int16), 15)
    c0 = np.arange(M, dtype=np.int16) * 64

    def run(isa):
        got = []
        with mli.use_isa(isa):
            W, B = mli.Tensor(w_np, 15), mli.Tensor(b_np, 15)
            out = mli.Tensor(np.zeros(M, np.int16), 0)
            c_out = mli.Tensor(np.zeros(M, np.int16), 12)
            for ws in (moderate, moderate, heavy, heavy, moderate):
                w_np[:, :, N:] = ws.reshape(4, M, M)
                mli.lstm_cell_fx16(x, h, W, B, mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE, act=1),
                                   mli.Tensor(c0, 12), out=out, cell_out=c_out)
                got.append((out.numpy().copy(), c_out.numpy().copy()))
        return got

    _calls_agree_with_scalar(run)


@pytest.mark.parametrize("op", ["avepool", "maxpool"])
@pytest.mark.parametrize("kind", ["fx8", "fx16"])
def test_pool_paths_agree(op, kind):
    """The chw pools' row blocks (built per ISA) give the scalar path's
    integers: random maps, kernels, strides and paddings, both roundings."""
    rng = np.random.default_rng(hash((op, kind)) % 2**32)
    dt = np.int8 if kind == "fx8" else np.int16
    info = np.iinfo(dt)
    f = getattr(mli, f"{op}_chw_{kind}")
    for _ in range(80):
        c, h, w = int(rng.integers(1, 5)), int(rng.integers(1, 16)), int(rng.integers(1, 140))
        kh, kw = int(rng.integers(1, min(h, 6) + 1)), int(rng.integers(1, min(w, 8) + 1))
        cfg = mli.PoolConfig(kernel_width=kw, kernel_height=kh, stride_width=int(rng.integers(1, 4)),
                             stride_height=int(rng.integers(1, 4)), padding_top=int(rng.integers(0, kh)),
                             padding_bottom=int(rng.integers(0, kh)), padding_left=int(rng.integers(0, kw)),
                             padding_right=int(rng.integers(0, kw)))
        x = mli.Tensor(rng.integers(info.min, info.max + 1, (c, h, w)).astype(dt), 3)
        for rounding in ("convergent", "up"):
            with mli.rounding(rounding):
                got = {}
                for isa in mli.supported_isas():
                    with mli.use_isa(isa):
                        got[isa] = f(x, cfg).numpy()
            for isa, v in got.items():
                np.testing.assert_array_equal(v, got["scalar"], err_msg=f"{isa} {cfg} {rounding}")


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("part", ["per_step", "hoisted"])
def test_int32_starts_at_their_bound(sign, part):
    # the AVX2 step sums a step's input part as one int32 (bias term +
    # 2^(D-1) + x . W_in) where max|x| <= (2^31 - 1 - top - 2^(D-1)) / l1i:
    # here 760 (bias term 2^29, D = 25, l1i = 64 * 32767); each step's input
    # is all one value from 700 to 820 with the bias's sign (each for 4
    # steps, the hoisted sums' groups of steps), so its sum is the bound
    # itself and one step past the limit would wrap by 2^32 (32 after the
    # output shift of 25, the outputs about 64)
    M, T = 64, 4 * 121
    N = 128 if part == "hoisted" else 64  # K N > 4096: the input sums of blocks of steps
    w = np.zeros((M, N + M), np.int16)
    w[:, :64] = 32767
    x = np.repeat((700 + np.arange(T, dtype=np.int16) // 4)[:, None], N, axis=1) * sign
    b = np.full(M, 16384 * sign, np.int16)
    got = {}
    for isa in PATHS:
        with mli.use_isa(isa):
            got[isa] = mli.basic_rnn_cell_fx16(mli.Tensor(x, 15), mli.Tensor(np.zeros(M, np.int16), 15),
                                               mli.Tensor(w, 15), mli.Tensor(b, 15),
                                               mli.RnnCellConfig(mode=1, act=0), out_frac_bits=5).numpy().copy()
    assert np.abs(got["scalar"]).max() > 60  # the sums reach about 2^31
    for isa in PATHS[1:]:
        np.testing.assert_array_equal(got[isa], got["scalar"], err_msg=f"{isa} differs from scalar")


# The AVX2 recurrent steps look their activations up in full 16-bit tables
# (mli_prv_lut16_full: every int16 input's result, built once per table,
# frac and rounding mode and kept for the process, at most 32 of them).  A
# basic RNN whose dense output is its input (identity weights, in_to_out
# shift 14) feeds every int16 value through the activation: 2,048 steps of
# 32.  The children start with no tables, so the first 32 keys are built
# (by several threads at once in the second) and the rest take the pair
# tables (a frac past 64 shares the table of 64); every result is the
# scalar path's.
_FULL_TABLES_CHILD = r"""
import sys, threading, numpy as np, mli
M = 32
x = np.arange(-32768, 32768, dtype=np.int16).reshape(-1, M)
w = np.zeros((M, 2 * M), np.int16)
w[:, :M] = np.eye(M, dtype=np.int16) * 16384
zero_h, zero_b = np.zeros(M, np.int16), np.zeros(M, np.int16)

def rnn(f, act, rounding, isa):
    with mli.use_isa(isa), mli.rounding(rounding):
        return mli.basic_rnn_cell_fx16(mli.Tensor(x, f), mli.Tensor(zero_h, 15), mli.Tensor(w, 14),
                                       mli.Tensor(zero_b, 14), mli.RnnCellConfig(mode=1, act=act),
                                       out_frac_bits=f).numpy().copy()

keys = [(f, act, r) for f in eval(sys.argv[1]) for act in (1, 2) for r in ("convergent", "up")]
want = {k: rnn(*k, "scalar") for k in keys}
got, bad = {}, []
def work(i):
    for k in keys[i % len(keys):] + keys[:i % len(keys)]:
        got[k, i] = rnn(*k, "avx2")
threads = [threading.Thread(target=work, args=(i,)) for i in range(int(sys.argv[2]))]
for t in threads: t.start()
for t in threads: t.join()
for (k, i), v in got.items():
    if not np.array_equal(v, want[k]):
        bad.append(f"{k} thread {i}: {int((v != want[k]).sum())} of {v.size} differ")
assert len(got) == len(keys) * len(threads)
print("\n".join(bad) or "ok")
"""


@pytest.mark.skipif("avx2" not in PATHS, reason="this CPU has no AVX2 path")
@pytest.mark.parametrize("fracs, threads", [("[0, 1, 4, 9, 12, 15, 20, 40, 70, 200]", 1),  # 36 tables: 4 past the cap
                                            ("[3, 13, 15, 18, 2, 7, 8, 11, 25, 30]", 3)])
def test_full_tables_every_input(fracs, threads):
    import subprocess
    import sys
    import tempfile

    from conftest import cap_child_memory, child_env
    env = child_env()
    env.pop("MLIPY_ISA", None)
    # (run outside the source tree: `python -c` puts the working folder first on the path)
    r = subprocess.run([sys.executable, "-c", _FULL_TABLES_CHILD, fracs, str(threads)], capture_output=True,
                       text=True, env=env, cwd=tempfile.gettempdir(), preexec_fn=cap_child_memory, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok", r.stdout[-3000:]


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("kind", ["fx8", "fx8w16d"])
# packed entries (both parts): LSTM 16 groups x (N/2 + 32) pairs x 32, RNN 4 groups x (N/2 + 32) x 32;
# 32,768 (the widened copy's limit), 33,280 / 32,896, 49,152 / 36,864
@pytest.mark.parametrize("cell, N", [("lstm", 64), ("lstm", 66), ("lstm", 128), ("rnn", 448), ("rnn", 450),
                                     ("rnn", 512)])
def test_widened_8bit_weights_at_their_limit(kind, N, cell):
    # the AVX2 steps run small plans' 8-bit weights from a widened int16 copy
    # (MLI_DENSE_WIDE_MAX packed entries, M = 64 here) and larger ones from
    # the 8-bit packing: both sides of the limit, full-scale and trained-like
    # weights, one-step calls that reuse the packing and a sequence
    M, T = 64, 6
    rng = np.random.default_rng([29, N, len(kind)])
    dt = np.int8 if kind == "fx8" else np.int16
    q = 7 if kind == "fx8" else 15
    G = 4 if cell == "lstm" else 1
    for wmode in ("random", "trained", "edges"):
        w = extreme(rng, (G, M, N + M) if G > 1 else (M, N + M), np.int8, wmode)
        b = extreme(rng, (G, M) if G > 1 else (M,), np.int8, "trained")
        x, h0, c0 = extreme(rng, (T, N), dt, "random"), extreme(rng, M, dt, "random"), extreme(rng, M, dt, "random")
        got = {}
        for isa in PATHS:
            with mli.use_isa(isa):
                W, B = mli.Tensor(w, 7), mli.Tensor(b, 5)
                outs = []
                for mode, xs in ((mli.RNN_BATCH_TO_BATCH, [x]), (mli.RNN_ONE_TO_ONE, list(x[:3]))):
                    # a sequence; one-step calls (the second and third reuse the packing)
                    h = mli.Tensor(h0, q)
                    for xt in xs:
                        cfg = mli.RnnCellConfig(mode=mode, act=1)
                        if cell == "lstm":
                            y, c = mli.lstm_cell(mli.Tensor(xt, q - 2), h, W, B, cfg, mli.Tensor(c0, q - 3))
                            outs += [y.numpy().copy(), c.numpy().copy()]
                        else:
                            y = mli.basic_rnn_cell(mli.Tensor(xt, q - 2), h, W, B, cfg, out_frac_bits=q - 1)
                            outs.append(y.numpy().copy())
                got[isa] = outs
        for isa in PATHS[1:]:
            for i, (a, e) in enumerate(zip(got[isa], got["scalar"])):
                np.testing.assert_array_equal(a, e, err_msg=f"{isa} {wmode} output {i}")
