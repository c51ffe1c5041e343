"""Per-call overhead of the Python API at HAR size (issue 13, requirements 1 and 2).

The one-to-one call of ``mli.lstm_cell_fx16`` (outputs given, outputs
allocated), the prepared call, and a fused TensorIterator over an LSTM
``KernelBody`` minus the direct batch-to-batch call, each next to what bounds
it: an empty Python call, a trivial call into the bridge, and the C compute of
one step inside a batch-to-batch call.  Every function is timed in rounds,
interleaved with the others (the machine is shared); per function the report
gives the median of the rounds and the best round, in wall time and in CPU
time of the process (which leaves out the time other processes of a loaded
machine take), and the load average before and after.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_overhead.py [--rounds R]

``run(log)`` returns the figures as a dict (for bench.py's JSON); nothing here
asserts on a time.
"""
from __future__ import annotations

import itertools
import os
import statistics
import sys
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
import mli  # noqa: E402
from mli import _core  # noqa: E402
from mli.graph import (BackEdge, ConcatOutput, KernelBody, LastIterationOutput, MergedInput,  # noqa: E402
                       SlicedInput, TensorIterator)

HAR = (32, 32, 128)
GOALS_US = {"given": 1.5, "alloc": 3.0, "prepared": 0.4, "ti_minus_direct": 5.0}


def _rounds(fns, rounds, target_s=0.02):
    """({name: [us per call of each round]}, the same in CPU time): the functions
    interleaved round by round."""
    inner = {}
    for name, fn in fns.items():          # calls per round: about target_s of work
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < target_s / 4:
            fn()
            n += 1
        inner[name] = max(1, 4 * n)
    out = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            k = inner[name]
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(k):
                fn()
            out[name].append((time.perf_counter() - t0) / k * 1e6)
            cpu[name].append((time.process_time() - c0) / k * 1e6)
    return out, cpu


def _ti(case):
    body = KernelBody("lstm", case.w, case.b, in_frac=case.x.frac_bits, cell_frac=case.c.frac_bits,
                      kind=case.kind)
    return TensorIterator(body, inputs=[SlicedInput(0, 0, 0), MergedInput(1, 1), MergedInput(2, 2)],
                          outputs=[ConcatOutput(0, 0, 0), LastIterationOutput(2, 1)],
                          back_edges=[BackEdge(1, 1), BackEdge(2, 2)])


def run(log=print, rounds=31) -> dict:
    n, m, t = HAR
    one = H.make_case("lstm", "fx16", HAR, mode=mli.RNN_ONE_TO_ONE, ir=False)
    one_ir = H.make_case("lstm", "fx16", HAR, mode=mli.RNN_ONE_TO_ONE, ir=True)
    fn = mli.lstm_cell_fx16
    x, h, w, b, cfg, c, out, co = one.x, one.h, one.w, one.b, one.cfg, one.c, one.out, one.cell_out
    cfg_ir = one_ir.cfg
    nxt = itertools.cycle(one.xs).__next__
    cell = mli.Tensor(c.numpy().copy(), c.frac_bits)
    prepared = mli.prepare(fn, x, h, w, b, cfg, cell, out=out)

    seq = H.make_case("lstm", "fx16", HAR)                       # batch-to-batch, cfg.ir given
    nd = itertools.cycle(seq.xs).__next__
    ti = _ti(seq)
    na = itertools.cycle([xk.numpy() for xk in seq.xs]).__next__
    hs, cs = seq.h.numpy(), seq.c.numpy()
    short = H.make_case("lstm", "fx16", (n, m, 4))               # T = 4: the overhead stands out
    ti4 = _ti(short)
    nd4 = itertools.cycle(short.xs).__next__
    na4 = itertools.cycle([xk.numpy() for xk in short.xs]).__next__
    hs4, cs4 = short.h.numpy(), short.c.numpy()
    y_direct, c_direct = seq.fn(seq.xs[0], seq.h, seq.w, seq.b, seq.cfg, seq.c)
    y_ti, c_ti = ti(seq.xs[0].numpy(), hs, cs)
    ok = np.array_equal(y_ti, y_direct.numpy()) and np.array_equal(c_ti, c_direct.numpy())

    fns = {
        "empty Python call": lambda: None,
        "trivial bridge call (_core.get_isa)": _core.get_isa,
        "one step, out=/cell_out= given": lambda: fn(nxt(), h, w, b, cfg, c, out=out, cell_out=co),
        "one step, out=/cell_out=/cfg.ir given": lambda: fn(nxt(), h, w, b, cfg_ir, c, out=out, cell_out=co),
        "one step, outputs allocated": lambda: fn(nxt(), h, w, b, cfg, c),
        "prepared call (same x)": prepared,
        "direct batch-to-batch, T=128": lambda: seq.fn(nd(), seq.h, seq.w, seq.b, seq.cfg, seq.c, out=seq.out,
                                                        cell_out=seq.cell_out),
        "TensorIterator fused, T=128": lambda: ti(na(), hs, cs),
        "direct batch-to-batch, T=4": lambda: short.fn(nd4(), short.h, short.w, short.b, short.cfg, short.c,
                                                        out=short.out, cell_out=short.cell_out),
        "TensorIterator fused, T=4": lambda: ti4(na4(), hs4, cs4),
    }
    load0 = os.getloadavg() if hasattr(os, "getloadavg") else None
    res, res_cpu = _rounds(fns, rounds)
    load1 = os.getloadavg() if hasattr(os, "getloadavg") else None
    med = {k: statistics.median(v) for k, v in res.items()}
    best = {k: min(v) for k, v in res.items()}
    cmed = {k: statistics.median(v) for k, v in res_cpu.items()}
    cbest = {k: min(v) for k, v in res_cpu.items()}
    step = med["direct batch-to-batch, T=128"] / t

    def diff(d, a, b):
        return d[a] - d[b]

    rows = [[k, H.fmt_us(med[k]), H.fmt_us(best[k]), H.fmt_us(cmed[k]), H.fmt_us(cbest[k])] for k in fns]
    rows.append([f"C compute of one step (direct T=128 / {t})"] + [
        H.fmt_us(d["direct batch-to-batch, T=128"] / t) for d in (med, best, cmed, cbest)])
    for T in (128, 4):
        rows.append([f"TensorIterator fused minus direct, T={T}"] + [
            H.fmt_us(diff(d, f"TensorIterator fused, T={T}", f"direct batch-to-batch, T={T}"))
            for d in (med, best, cmed, cbest)])
    ti128 = diff(med, "TensorIterator fused, T=128", "direct batch-to-batch, T=128")
    ti4d = (diff(med, "TensorIterator fused, T=4", "direct batch-to-batch, T=4"),
            diff(cmed, "TensorIterator fused, T=4", "direct batch-to-batch, T=4"))
    log(f"fx16 LSTM, N=M={n}; {rounds} interleaved rounds; us per call"
        + (f"; load average {load0[0]:.2f} before, {load1[0]:.2f} after" if load0 else ""))
    log(H.table(["call", "median", "best round", "CPU median", "CPU best"], rows, ["<", ">", ">", ">", ">"]))
    figures = {
        "given": med["one step, out=/cell_out= given"],
        "alloc": med["one step, outputs allocated"],
        "prepared": med["prepared call (same x)"],
        "ti_minus_direct": ti4d[0],
    }
    cpu_figures = {
        "given": cmed["one step, out=/cell_out= given"],
        "alloc": cmed["one step, outputs allocated"],
        "prepared": cmed["prepared call (same x)"],
        "ti_minus_direct": ti4d[1],
    }
    log()
    for k, goal in GOALS_US.items():
        log(f"{k:16s} {H.fmt_us(figures[k]):>10s}  goal <= {goal} us: {'met' if figures[k] <= goal else 'missed'}"
            f"   (CPU median {H.fmt_us(cpu_figures[k])}: {'met' if cpu_figures[k] <= goal else 'missed'})")
    log(f"fused TensorIterator gives the direct call's y and cell: {'yes' if ok else 'NO'}")
    return {"median_us": med, "best_us": best, "cpu_median_us": cmed, "cpu_best_us": cbest, "step_compute_us": step,
            "ti_minus_direct_us": {"T128": ti128, "T4": ti4d[0]}, "goals_us": GOALS_US, "figures_us": figures,
            "cpu_figures_us": cpu_figures, "load_average": [load0, load1], "ti_same_output": bool(ok)}


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=31)
    run(print, ap.parse_args().rounds)
