#!/usr/bin/env python
"""Batched rows at HAR size: 64 independent sequences (N = M = 32, T = 128,
batch-to-batch, tanh output) through the LSTM and the basic RNN, one
``mli.lstm_cell_rows_*`` / ``mli.basic_rnn_cell_rows_*`` call against 64
separate whole-sequence kernel calls, one core.  The issue's goal: at least
3x the per-row throughput (fx16 LSTM); fx8 and fx8w16d are reported too.

    PYTHONPATH=. python benchmarks/bench_rows.py [--quick] [--json out.json]

``run(log)`` returns the figures as a dict (for benchmarks/bench.py).
Nothing here asserts on speed; the results are checked equal before timing.
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

import _harness as H  # noqa: E402

HAR = (32, 32, 128)
ROWS = 64
GOAL_X = 3.0


def _stack(tensors):
    return mli.Tensor(np.stack([t.numpy() for t in tensors]), tensors[0].frac_bits)


def _pair(cell, kind, rows=ROWS, shape=HAR):
    """(separate calls, rows call, check): 64 distinct input sequences."""
    case = H.make_case(cell, kind, shape, n_inputs=rows)
    xs, h, w, b, cfg, c = case.xs, case.h, case.w, case.b, case.cfg, case.c
    X = _stack(xs)
    fn = case.fn
    outs = [mli.Tensor(np.zeros_like(case.out.numpy()), 0) for _ in range(rows)]
    OUT = mli.Tensor(np.zeros((rows,) + case.out.shape, case.out.dtype), 0)
    if cell == "lstm":
        cos = [mli.Tensor(np.zeros_like(c.numpy()), 0) for _ in range(rows)]
        CO = mli.Tensor(np.zeros((rows,) + c.shape, c.dtype), 0)
        rfn = getattr(mli, f"lstm_cell_rows_{kind}")

        def separate():
            for x, o, co in zip(xs, outs, cos):
                fn(x, h, w, b, cfg, c, out=o, cell_out=co)

        def batched():
            rfn(X, h, w, b, cfg, c, out=OUT, cell_out=CO)

        def same():
            return all(np.array_equal(o.numpy(), OUT.numpy()[r]) and np.array_equal(co.numpy(), CO.numpy()[r])
                       for r, (o, co) in enumerate(zip(outs, cos)))
    else:
        rfn = getattr(mli, f"basic_rnn_cell_rows_{kind}")

        def separate():
            for x, o in zip(xs, outs):
                fn(x, h, w, b, cfg, out=o)

        def batched():
            rfn(X, h, w, b, cfg, out=OUT)

        def same():
            return all(np.array_equal(o.numpy(), OUT.numpy()[r]) for r, o in enumerate(outs))
    return separate, batched, same


def run(log, budget=None, rows=ROWS):
    """Per-row time of 64 separate calls vs one rows call, every kind, LSTM
    and basic RNN, on the default ISA path.  Returns {"lstm/fx16": {...}, ...,
    "goal": {...}}."""
    budget = budget or H.Budget(total_ns=400_000_000)
    n, m, t = HAR
    log(f"batched rows: {rows} sequences of N={n}, M={m}, T={t} (HAR), batch-to-batch, one core, "
        f"ISA path {mli.isa()}")
    R, table = {}, []
    for cell in ("lstm", "rnn"):
        for kind in H.KINDS:
            separate, batched, same = _pair(cell, kind, rows)
            separate()
            batched()
            if not same():
                raise SystemExit(f"bench_rows: {cell} {kind}: the rows call differs from the separate calls")
            tm = H.measure_many({"separate": (separate, None), "rows": (batched, None)}, budget,
                                rounds=budget.rounds)
            sep_us, rows_us = tm["separate"].us / rows, tm["rows"].us / rows
            R[f"{cell}/{kind}"] = {"separate_us_per_row": sep_us, "rows_us_per_row": rows_us,
                                   "speedup": sep_us / rows_us, "rows": rows, "shape": list(HAR)}
            table.append([f"{cell} {kind}", H.fmt_us(sep_us), H.fmt_us(rows_us), H.fmt_x(sep_us / rows_us)])
    log(H.table(["kernel", f"separate calls, us/row", f"one rows call, us/row", "speedup"], table))
    x = R["lstm/fx16"]["speedup"]
    R["goal"] = {"name": f">= {GOAL_X:g}x per-row throughput, {rows} rows at HAR size (fx16 LSTM)",
                 "met": x >= GOAL_X, "speedup": x}
    log(f"goal {R['goal']['name']}: {'met' if x >= GOAL_X else 'MISSED'} ({x:.2f}x)")
    return R


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short measurements (a smoke run)")
    p.add_argument("--json", help="write the figures to this file")
    a = p.parse_args(argv)
    budget = H.Budget(total_ns=60_000_000, rounds=2) if a.quick else None
    R = run(lambda s="": print(s, flush=True), budget)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)


if __name__ == "__main__":
    main()
