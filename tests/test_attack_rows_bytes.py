"""Batched rows past one MLI tensor: a rows call hands all its rows to C as one
tensor, whose capacity is a uint32, so rows whose data pass 2**32 - 1 bytes
(a long sequence over many rows, which one call per row ran) must go in
several rows calls, each within the limit, with the per-row results.

The limit is lowered here (the real one needs inputs of 4 GiB): what is
checked is that no rows call is handed more than it, and the values."""
import numpy as np
import pytest

from mli import rows
from mli.fixed_point import gru
from mli.graph import kernel_body

from test_rows_callers import gru_per_row_step, make_body, make_gru, old_run, old_run_sequence, same

N, M = 5, 4


@pytest.fixture
def biggest(monkeypatch):
    """Records the largest in / out of every rows call (bytes)."""
    seen = []
    for name in rows.__all__:
        if "_rows_" not in name:
            continue
        fn = getattr(rows, name)

        def spy(*a, _fn=fn, **kw):
            res = _fn(*a, **kw)
            out = res[0] if isinstance(res, tuple) else res
            seen.append(max(a[0].numpy().nbytes, out.numpy().nbytes))
            return res
        monkeypatch.setattr(rows, name, spy)
    return seen


@pytest.mark.parametrize("cell", ["lstm", "rnn"])
@pytest.mark.parametrize("B", [2, 7, 9])
def test_kernel_body_rows_stay_within_one_tensor(cell, B, biggest, monkeypatch):
    body = make_body(cell, "fx16")
    rng = np.random.default_rng(3)
    T = 6
    x = body.quantize(rng.uniform(-2, 2, (T, B, N)), "x")
    h = body.quantize(rng.uniform(-.9, .9, (B, M)), "h")
    c = body.quantize(rng.uniform(-1.5, 1.5, (B, M)), "c") if cell == "lstm" else None
    limit = 3 * T * N * 2            # three rows of a sequence (N > M)
    monkeypatch.setattr(kernel_body, "_TENSOR_BYTES", limit, raising=False)
    same(body.run_sequence(x, h, c), old_run_sequence(body, x, h, c))
    assert biggest and max(biggest) <= limit
    biggest.clear()
    monkeypatch.setattr(kernel_body, "_TENSOR_BYTES", 2 * N * 2, raising=False)    # two rows of a step
    same(body.run([x[0], h] + ([c] if c is not None else [])), old_run(body, x[0], h, c))
    assert biggest and max(biggest) <= 2 * N * 2


@pytest.mark.parametrize("lbr", [False, True])
def test_gru_rows_stay_within_one_tensor(lbr, biggest, monkeypatch):
    cell = make_gru("fx16", lbr, 0.0)
    rng = np.random.default_rng(4)
    B, T = 7, 3
    x = cell.quantize(rng.uniform(-2, 2, (B, T, N)), "x")
    h = cell.quantize(rng.uniform(-.9, .9, (B, M)), "h")
    limit = 3 * 2 * M * 2            # three rows of the stacked z, r gates [B, 2M]
    monkeypatch.setattr(gru, "_TENSOR_BYTES", limit, raising=False)
    want = gru_per_row_step(cell, x[:, 0], h)
    np.testing.assert_array_equal(cell.step(x[:, 0], h), want)
    assert biggest and max(biggest) <= limit
    y, h_last = cell.run_rows(x, h)
    hh = h
    for t in range(T):
        hh = gru_per_row_step(cell, x[:, t], hh)
        np.testing.assert_array_equal(y[:, t], hh)
    np.testing.assert_array_equal(h_last, hh)
