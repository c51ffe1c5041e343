#!/usr/bin/env python
"""The callers of the batched-rows kernels against the per-row computation
they replaced, at HAR size (N = M = 32, T = 128) with 64 rows, one core:
a TensorIterator stepping a KernelBody, KernelBody.run_sequence, the HAR
example's network over a batch (``mli har --accuracy``), and GRU steps
(fixed-point GRU models).  The "per row" column is the loop the callers ran
before (one MLI call per row, or a whole run_har per vector); both give the
same integers (checked before timing).

    PYTHONPATH=. python benchmarks/bench_rows_callers.py [--quick] [--json out.json]

Nothing here asserts on speed.
"""
import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import json  # noqa: E402
import sys  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
try:
    import mli  # noqa: F401
except ImportError:  # a checkout without PYTHONPATH=.
    sys.path.insert(1, os.path.dirname(_HERE))

import numpy as np  # noqa: E402

import mli  # noqa: E402,F811
from mli.graph import (BackEdge, ConcatOutput, KernelBody, LastIterationOutput, MergedInput,  # noqa: E402
                       SlicedInput, TensorIterator)

import _harness as H  # noqa: E402

N = M = 32
T = 128
ROWS = 64


def _body(cell, kind, rng):
    in_frac = 5 if kind == "fx8" else 12
    if cell == "lstm":
        return KernelBody.from_float("lstm", rng.normal(0, .3, (4, M, N + M)), rng.normal(0, .1, (4, M)),
                                     kind=kind, in_frac=in_frac, cell_frac=in_frac, fuse=False)
    return KernelBody.from_float("rnn", rng.normal(0, .3, (M, N + M)), rng.normal(0, .1, M), kind=kind,
                                 in_frac=in_frac, fuse=False)


def _per_row(body, x, h, c, mode):
    """One MLI call per row, as KernelBody ran before (x [B, N] or [B, T, N])."""
    fn = getattr(mli, body._fname)
    cfg = mli.RnnCellConfig(mode=mode, act=body.act)
    ys, cs = [], []
    for r in range(len(h)):
        xt, ht = mli.Tensor(np.ascontiguousarray(x[r]), body.in_frac), mli.Tensor(h[r], body.state_frac)
        if c is None:
            ys.append(fn(xt, ht, body.weights, body.bias, cfg).numpy())
        else:
            y, cr = fn(xt, ht, body.weights, body.bias, cfg, mli.Tensor(c[r], body.cell_frac))
            ys.append(y.numpy())
            cs.append(cr.numpy())
    return np.stack(ys), (np.stack(cs) if cs else None)


def _kernel_body_pairs(cell, kind, rows):
    rng = np.random.default_rng(0)
    body = _body(cell, kind, rng)
    lstm = cell == "lstm"
    x = body.quantize(rng.uniform(-1, 1, (rows, T, N)), "x")
    h = body.quantize(rng.uniform(-.5, .5, (rows, M)), "h")
    c = body.quantize(rng.uniform(-1, 1, (rows, M)), "c") if lstm else None
    st = [h] + ([c] if lstm else [])
    ins = [SlicedInput(0, 0, 1), MergedInput(1, 1)] + ([MergedInput(2, 2)] if lstm else [])
    ti = TensorIterator(body, ins, [ConcatOutput(0, 0, 1), LastIterationOutput(1, 1)],
                        [BackEdge(1, 1)] + ([BackEdge(2, 2)] if lstm else []))

    def ti_rows():
        return ti(x, *st)[0]

    def ti_per_row():
        hh, cc, ys = h, c, []
        for t in range(T):
            y, cc = _per_row(body, x[:, t], hh, cc, mli.RNN_ONE_TO_ONE)
            hh = y
            ys.append(y)
        return np.stack(ys, 1)

    xs = np.ascontiguousarray(x.transpose(1, 0, 2))

    def seq_rows():
        return body.run_sequence(xs, *st)[0]

    def seq_per_row():
        return _per_row(body, x, h, c, mli.RNN_BATCH_TO_BATCH)[0].transpose(1, 0, 2)

    return [(f"TI stepped, {cell} {kind}", ti_per_row, ti_rows),
            (f"run_sequence, {cell} {kind}", seq_per_row, seq_rows)]


def _har_pairs(rows):
    from mli.io import read_idx
    from mli.tools import har
    try:
        d = har.default_data_dir()
        tests = read_idx(os.path.join(d, "small_test_base", "tests.idx"))
    except (OSError, ValueError):
        return []
    xs = np.concatenate([tests] * (-(-rows // len(tests))))[:rows]
    out = []
    for layer3 in ("custom", "library"):
        m = har.load_har(d, 16)
        xq = har.quantize_input(xs, 16)

        def per_vector(m=m, layer3=layer3, xq=xq):
            return np.stack([har.run_har(mli.Tensor(v, xq.frac_bits), 16, layer3, model=m)["out"].numpy()
                             for v in xq.numpy()])

        def batched(m=m, layer3=layer3, xq=xq):
            return har.run_har_rows(xq, 16, layer3, model=m)["out"].numpy()
        out.append((f"HAR network, layer 3 {layer3}", per_vector, batched))
    return out


def _gru_pairs(rows, steps=20):
    from mli.fixed_point.gru import GruCell
    out = []
    for lbr in (False, True):
        rng = np.random.default_rng(1)
        cell = GruCell(rng.normal(0, .3, (3 * M, N)), rng.normal(0, .3, (3 * M, M)),
                       rng.normal(0, .1, ((4 if lbr else 3) * M,)), linear_before_reset=lbr, kind="fx16", in_frac=12)
        x = cell.quantize(rng.uniform(-1, 1, (rows, steps, N)), "x")
        h = cell.quantize(rng.uniform(-.5, .5, (rows, M)), "h")

        def per_row(cell=cell, x=x, h=h):
            return np.stack([cell.run_sequence(x[b], h[b])[0] for b in range(len(h))])

        def batched(cell=cell, x=x, h=h):
            return cell.run_rows(x, h)[0]
        out.append((f"GRU T={steps}, linear_before_reset={lbr}", per_row, batched))
    return out


def run(log, budget=None, rows=ROWS):
    budget = budget or H.Budget(total_ns=300_000_000, rounds=3)
    log(f"callers of the batched rows: {rows} rows, N = M = {N}, T = {T} (HAR), one core, ISA path {mli.isa()}")
    pairs = []
    for cell in ("lstm", "rnn"):
        pairs += _kernel_body_pairs(cell, "fx16", rows)
    pairs += _har_pairs(rows) + _gru_pairs(rows)
    R, table = {}, []
    for name, before, after in pairs:
        if not np.array_equal(before(), after()):
            raise SystemExit(f"bench_rows_callers: {name}: the rows path differs from the per-row loop")
        tm = H.measure_many({"per row": (before, None), "rows": (after, None)}, budget, rounds=budget.rounds)
        a, b = tm["per row"].us, tm["rows"].us
        R[name] = {"per_row_us": a, "rows_us": b, "speedup": a / b, "rows": rows}
        table.append([name, H.fmt_us(a), H.fmt_us(b), H.fmt_x(a / b)])
    log(H.table(["caller", "per row (before), us", "rows, us", "speedup"], table))
    return R


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short measurements (a smoke run)")
    p.add_argument("--json", help="write the figures to this file")
    a = p.parse_args(argv)
    budget = H.Budget(total_ns=40_000_000, rounds=2, min_repeats=2) if a.quick else None
    R = run(lambda s="": print(s, flush=True), budget)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)


if __name__ == "__main__":
    main()
