"""Every instruction-set path gives the same integers: the reference cases
on each path the CPU supports, and the paths against each other on
adversarial data (full-scale weights and inputs, long rows that cross the
int32 chunk boundaries of the SIMD dot products, odd sizes)."""
import numpy as np
import pytest

import mli
from conftest import MLI11, NEEDS_SHARED, mli11_cases
from mli.vectors import run_case

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
    if mode == "min":
        return np.full(shape, info.min, dt)
    if mode == "max":
        return np.full(shape, info.max, dt)
    if mode == "edges":
        return rng.choice(np.array([info.min, info.max, info.min + 1, -1, 0], dt), size=shape)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)


@pytest.mark.skipif(len(PATHS) < 2, reason="this CPU has only the scalar path")
@pytest.mark.parametrize("kind", ["fx8", "fx16", "fx8w16d"])
@pytest.mark.parametrize("mode", ["min", "max", "edges", "random"])
@pytest.mark.parametrize("shape", [(1, 1, 3), (33, 17, 5), (300, 100, 3), (9, 257, 2), (37, 45, 1), (5, 30, 1)])
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
