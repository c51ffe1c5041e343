#!/usr/bin/env python
"""Speed of mli-py's recurrent kernels, single thread, side by side with
float baselines (numpy, PyTorch) and the package's slow numpy reference.

Run from the project root::

    PYTHONPATH=. python benchmarks/bench.py            # full run (~75 s)
    PYTHONPATH=. python benchmarks/bench.py --quick    # smoke run (< 20 s)
    PYTHONPATH=. python benchmarks/bench.py --json results.json --shapes 32x32x128,64x64x50

Sections printed (see benchmarks/README.md):
  1. environment      code path (mli.isa()), CPU, versions, thread settings
  2. kernels          every kernel x type at every shape: us/sequence, us/step, GMAC/s
  3. isa              the fx16 LSTM on every ISA path the CPU supports
  4. one-to-one       call overhead at HAR size: wrapper call vs mli.prepare
  5. tensoriterator   TensorIterator over a KernelBody: stepped vs fused
  6. baselines        numpy float32 LSTM, PyTorch nn.LSTM, the slow reference
  7. comparison       the fx16 LSTM against bounds, PyTorch and the reference
  8. where users wait per-call overhead, TensorIterator, IR models (OpenVINO optional),
                      batched rows, --jobs (bench_overhead/_ir/_rows/_jobs.py)
  9. MLI 2.0.2        mli.v2 LSTM/GRU per kind vs the 1.1 LSTM and PyTorch (bench_mli2.py)
 10. goals            each goal "met" or "MISSED" with its figures
 11. issue 26         the rows of the speed issue's table with their goals (MLIPY_ISA=avx2 on an
                      AVX-512 machine also holds numpy, OpenBLAS and PyTorch to AVX2)

PyTorch is optional (skipped when not importable); it is never a dependency
of mli-py.  Times are best-of-many-short-repeats means (time.perf_counter_ns); nothing
here asserts on speed.
"""
import os

# single thread for every library, before numpy (or torch) is imported
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"


def _cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512f" in line for line in f)
    except OSError:
        return False


# MLIPY_ISA=avx2 on an AVX-512 machine stands in for an AVX2 machine: the float
# baselines are held to AVX2 as well (before numpy and torch load), unless
# MLIPY_BASELINES_UNCAPPED=1.  OpenVINO has no such switch: its rows keep AVX-512.
BASELINE_CAPS = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
                 "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"}
BASELINES_CAPPED = (os.environ.get("MLIPY_ISA", "").strip().lower() == "avx2" and _cpu_has_avx512()
                    and os.environ.get("MLIPY_BASELINES_UNCAPPED") != "1")
if BASELINES_CAPPED:
    for _k, _v in BASELINE_CAPS.items():
        os.environ.setdefault(_k, _v)

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
try:
    import mli  # noqa: F401
except ImportError:  # running from a checkout without PYTHONPATH=.
    sys.path.insert(1, os.path.dirname(_HERE))

import numpy as np  # noqa: E402

import mli  # noqa: E402,F811
import mli.reference  # noqa: E402
from mli.graph import (BackEdge, ConcatOutput, KernelBody, LastIterationOutput,  # noqa: E402
                       MergedInput, SlicedInput, TensorIterator)

import _harness as H  # noqa: E402

HAR = (32, 32, 128)
GOAL_US = {(32, 32, 128): (30.0, "<= 30 us on HAR"),
           (64, 64, 50): (2.5 * 31.0, "within 2.5x of 31 us (<= 77.5 us)"),
           (128, 128, 100): (490.0, "within 2x of 243 us (<= 490 us; 2 x 243 = 486)"),
           (512, 256, 25): (900.0, "within 2x of 449 us (<= 900 us; 2 x 449 = 898)")}
TORCH_FACTOR = 1.5
REF_FACTOR = 100.0
PREPARED_US = 0.4
SECTIONS = ("kernels", "waits", "mli2")   # 2-7, 8, 9
SAME_SPEED_SLACK = 1.02   # "at least as fast": fx8 / fx8w16d time <= fx16 time + 2 % (noise)


def log(msg=""):
    print(msg, flush=True)


def section(title):
    log()
    log(f"## {title}")
    log()


def key(*parts):
    return "/".join(str(p) for p in parts)


def sk(shape):
    return "x".join(map(str, shape))


# ----------------------------------------------------------------------------- sections
def bench_kernels(shapes, budget, R):
    """Every kernel x type at every shape (default ISA path)."""
    section(f"2. kernels: batch-to-batch, whole sequence in one call (ISA path {mli.isa()})")
    log("LSTM / basic RNN: one batch-to-batch call per sequence, out=, cell_out= and cfg.ir\n"
        "preallocated.  FC: one call = the dense of one LSTM step (in N+M -> out 4M); its 'us/seq'\n"
        f"is T x the per-call time (FC has no sequence mode).  Main figures ('fresh'): each call takes\n"
        f"the next of {H.N_INPUTS} distinct input sequences.  'same input': one input repeated, which lets the\n"
        "branch predictor learn the call (optimistic).  'vs fx16': fresh time / fresh time of fx16.")
    log()
    rows = []
    for shape in shapes:
        n, m, t = shape
        for cell in ("lstm", "rnn", "fc"):
            cases = {kind: H.make_case(cell, kind, shape) for kind in H.KINDS}
            fns = {}
            for kind, case in cases.items():
                fns[(kind, True)] = (case.caller(fresh=True), None)
                fns[(kind, False)] = (case.caller(fresh=False), None)
            times = H.measure_many(fns, budget, rounds=budget.rounds)   # interleaved
            base = None
            for kind, case in cases.items():
                tm, same = times[(kind, True)], times[(kind, False)]
                scale = t if cell == "fc" else 1
                seq_us, same_us = tm.us * scale, same.us * scale
                step_us = seq_us / t
                gmacs = case.macs / tm.best_ns
                R["kernels"][key(cell, kind, sk(shape))] = {
                    **tm.as_dict(), "us_per_seq": seq_us, "us_per_step": step_us, "gmac_s": gmacs,
                    "same_input": {**same.as_dict(), "us_per_seq": same_us},
                    "macs": case.macs, "w_frac": case.w.frac_bits, "b_frac": case.b.frac_bits,
                    "in_frac": case.x.frac_bits}
                base = seq_us if kind == "fx16" else base
                rows.append([H.shape_name(shape), f"{cell} {kind}", H.fmt_us(seq_us), H.fmt_us(step_us),
                             f"{gmacs:.2f}", H.fmt_us(tm.median_ns / 1e3 * scale), H.fmt_us(same_us),
                             H.fmt_x(seq_us / same_us), H.fmt_x(seq_us / base)])
    log(H.table(["shape NxMxT", "kernel", "us/seq", "us/step", "GMAC/s", "median us/seq",
                 "same-input us/seq", "fresh/same", "vs fx16"], rows))


def bench_isa(shapes, budget, R):
    section("3. isa: fx16 LSTM on every ISA path the CPU supports")
    isas = mli.supported_isas()
    log(f"supported: {isas}; default: {mli.isa()}.  Fresh inputs (as section 2); outputs are checked\n"
        "identical to the default path's.")
    log()
    rows = []
    for shape in shapes:
        case = H.make_case("lstm", "fx16", shape)
        case.call()
        want_y, want_c = case.out.numpy().copy(), case.cell_out.numpy().copy()
        row = [H.shape_name(shape)]
        times, same = {}, {}
        default = mli.isa()
        try:
            for name in isas:
                mli.set_isa(name)
                case.out.numpy()[...] = 0
                case.call()
                same[name] = (np.array_equal(case.out.numpy(), want_y)
                              and np.array_equal(case.cell_out.numpy(), want_c))
            fn = case.caller(fresh=True)
            res = H.measure_many({name: (fn, lambda n=name: mli.set_isa(n)) for name in isas}, budget,
                                 rounds=budget.rounds)       # interleaved
        finally:
            mli.set_isa(default)
        for name in isas:
            tm = res[name]
            times[name] = tm.us
            R["isa"][key(name, sk(shape))] = {**tm.as_dict(), "gmac_s": case.macs / tm.best_ns,
                                              "same_output": bool(same[name])}
            row.append(f"{H.fmt_us(tm.us)} ({case.macs / tm.best_ns:.1f})" + ("" if same[name] else " DIFFERS"))
        slow = times[isas[0]]
        row.append(" / ".join(H.fmt_x(slow / times[name]) for name in isas[1:]) or "-")
        rows.append(row)
    log(H.table(["shape"] + [f"{i} us/seq (GMAC/s)" for i in isas]
                + [f"speed-up vs {isas[0]}: " + " / ".join(isas[1:])], rows))


def bench_one_to_one(budget, R):
    section("4. one-to-one call overhead at HAR size (fx16 LSTM, N=M=32, one step per call)")
    n, m, t = HAR
    O = R["one_to_one"]
    case = H.make_case("lstm", "fx16", HAR, mode=mli.RNN_ONE_TO_ONE, ir=False)
    case_ir = H.make_case("lstm", "fx16", HAR, mode=mli.RNN_ONE_TO_ONE, ir=True)
    seq = H.make_case("lstm", "fx16", HAR)           # same seed: same weights, x sequences, h0, c0
    k = R["kernels"].get(key("lstm", "fx16", sk(HAR)))
    if k is None:
        k = {"us_per_step": H.measure(seq.caller(True), budget).us / t,
             "same_input": {"us_per_seq": H.measure(seq.caller(False), budget).us}}
    step_fresh, step_same = k["us_per_step"], k["same_input"]["us_per_seq"] / t
    rows = []

    def row(label, tm, data, compute, per=1):
        us, med = tm.us / per, tm.median_ns / 1e3 / per
        O[f"{label.strip()} [{data}]"] = {**tm.as_dict(), "us_per_call": us, "data": data,
                    "minus_compute_us": None if compute is None else us - compute}
        rows.append([label, data, H.fmt_us(us), H.fmt_us(med),
                     "-" if compute is None else H.fmt_us(us - compute)])

    def noop():
        pass

    # prepared: binds x, h, w, b, cell, out; updates the cell in place, writes out
    cell = mli.Tensor(case.c.numpy().copy(), case.c.frac_bits)
    prepared = mli.prepare(mli.lstm_cell_fx16, case.x, case.h, case.w, case.b, case.cfg, cell,
                           out=case.out)
    prepared()
    res = H.measure_many({"noop": (noop, None), "fresh": (case.caller(True), None),
                          "fresh_ir": (case_ir.caller(True), None), "same": (case.caller(False), None),
                          "prepared": (prepared, None)}, budget, rounds=budget.rounds)   # interleaved
    row("empty Python call (timing-loop baseline)", res["noop"], "-", None)
    row("wrapper, out= and cell_out= given (cfg.ir=None)", res["fresh"], "fresh", step_fresh)
    row("wrapper, out=, cell_out= and cfg.ir given", res["fresh_ir"], "fresh", step_fresh)
    row("wrapper, out= and cell_out= given (cfg.ir=None)", res["same"], "same", step_same)
    row("prepared call (mli.prepare), same x and h", res["prepared"], "same", step_same)
    O["prepared_same_us"] = res["prepared"].us
    # whole HAR sequences stepped from Python through the prepared call, cycling through
    # the distinct sequences: x_t copied in, the call, h <- out
    xs = [x.numpy() for x in seq.xs]
    xv, hv, ov, cv = case.x.numpy(), case.h.numpy(), case.out.numpy(), cell.numpy()
    h0, c0 = seq.h.numpy().copy(), seq.c.numpy().copy()
    nxt = itertools.cycle(xs).__next__

    def stepped_sequence(call=prepared):
        xq = nxt()
        hv[...] = h0
        cv[...] = c0
        for j in range(t):
            xv[...] = xq[j]
            call()
            hv[...] = ov

    def noop_call():
        pass

    stepped_sequence()  # check against one batch-to-batch call on the same sequence
    ok = np.array_equal(ov, _last_out(seq, xs[0])) and np.array_equal(cv, seq.cell_out.numpy())
    res = H.measure_many({"call": (stepped_sequence, None),
                          "copies": (lambda: stepped_sequence(noop_call), None)}, budget, rounds=budget.rounds)
    ts, tc = res["call"], res["copies"]
    row(f"HAR sequence stepped via the prepared call (per step; {t} steps)", ts, "fresh", step_fresh, t)
    row("  the same loop with the call replaced by an empty function", tc, "-", None, t)
    fresh_est = (ts.us - tc.us) / t
    O["prepared_fresh_estimate_us"] = fresh_est
    rows.append(["prepared call with fresh data (difference of the two rows above)", "fresh",
                 H.fmt_us(fresh_est), "-", H.fmt_us(fresh_est - step_fresh)])
    rows.append([f"compute of one step inside a batch call (HAR us/seq / {t})", "fresh",
                 H.fmt_us(step_fresh), "-", "-"])
    rows.append([f"compute of one step inside a batch call (HAR us/seq / {t})", "same",
                 H.fmt_us(step_same), "-", "-"])
    O["compute_per_step_us"] = step_fresh
    O["compute_per_step_same_input_us"] = step_same
    O["prepared_stepping_equals_batch"] = bool(ok)
    log("'fresh': each call takes the next of the distinct inputs; 'same': the same input every call.\n"
        "'- compute' subtracts the per-step time of a batch-to-batch call on the same kind of data.")
    log()
    log(H.table(["call", "data", "us/call", "median", "- compute us"], rows, ["<", "<", ">", ">", ">"]))
    log()
    log(f"prepared stepping gives the batch-to-batch result: {'yes' if ok else 'NO'}; a whole HAR "
        f"sequence costs {H.fmt_t(ts.us)} stepped from Python vs {H.fmt_t(step_fresh * t)} in one call.")


def _last_out(seq, x):
    """Run `seq`'s batch-to-batch call on input array `x`; return the last output step."""
    seq.fn(mli.Tensor(x, seq.x.frac_bits), seq.h, seq.w, seq.b, seq.cfg, seq.c, out=seq.out,
           cell_out=seq.cell_out)
    return seq.out.numpy()[-1]


def make_ti(case, fuse):
    body = KernelBody("lstm", case.w, case.b, in_frac=case.x.frac_bits, cell_frac=case.c.frac_bits,
                      kind=case.kind, fuse=fuse)
    ti = TensorIterator(body, inputs=[SlicedInput(0, 0, 0), MergedInput(1, 1), MergedInput(2, 2)],
                        outputs=[ConcatOutput(0, 0, 0), LastIterationOutput(2, 1)],
                        back_edges=[BackEdge(1, 1), BackEdge(2, 2)])
    return ti


def bench_ti(shapes, budget, R):
    section("5. tensoriterator: TensorIterator over a KernelBody (fx16 LSTM, one sequence [T, N])")
    log("stepped = fuse=False (T one-to-one MLI calls through the driver); fused = default (one\n"
        "batch-to-batch call).  'direct' is the plain batch-to-batch call of section 2.  Fresh inputs.")
    log()
    rows = []
    for shape in shapes:
        n, m, t = shape
        case = H.make_case("lstm", "fx16", shape)
        x, h, c = case.x.numpy(), case.h.numpy(), case.c.numpy()
        fused, stepped = make_ti(case, True), make_ti(case, False)
        yf, cf = fused(x, h, c)
        ys, cs = stepped(x, h, c)
        same = np.array_equal(yf, ys) and np.array_equal(cf, cs)
        nf = itertools.cycle([xk.numpy() for xk in case.xs]).__next__
        ns = itertools.cycle([xk.numpy() for xk in case.xs]).__next__
        res = H.measure_many({"fused": (lambda: fused(nf(), h, c), None),
                              "stepped": (lambda: stepped(ns(), h, c), None)}, budget, rounds=budget.rounds)
        tf, ts = res["fused"], res["stepped"]
        direct = R["kernels"].get(key("lstm", "fx16", sk(shape)), {}).get("us_per_seq")
        R["tensoriterator"][sk(shape)] = {"fused": tf.as_dict(), "stepped": ts.as_dict(),
                                          "same_output": bool(same), "direct_us": direct}
        rows.append([H.shape_name(shape), H.fmt_us(ts.us), H.fmt_us(ts.us / t), H.fmt_us(tf.us),
                     H.fmt_us(direct), H.fmt_x(ts.us / tf.us),
                     H.fmt_us(tf.us - direct) if direct else "-", "yes" if same else "NO"])
    log(H.table(["shape", "stepped us/seq", "stepped us/step", "fused us/seq", "direct us/seq",
                 "stepped/fused", "fused - direct us", "same output"], rows))


def bench_baselines(shapes, budget, R, quick, use_torch):
    section("6. baselines: numpy float32 LSTM, PyTorch float32 nn.LSTM, slow numpy reference")
    torch_ver = None
    if use_torch:
        try:
            import torch
            torch.set_num_threads(1)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:
                pass
            torch_ver = f"{torch.__version__} (threads {torch.get_num_threads()})"
        except Exception as exc:  # noqa: BLE001 - optional comparison
            log(f"PyTorch not importable ({type(exc).__name__}: {exc}); skipped.")
    R["env"]["torch"] = torch_ver or ("not importable" if use_torch else "skipped (--no-torch)")
    ref_steps, ref_reps = (1, 1) if quick else (3, 3)
    log(f"numpy: per step W[4M,N+M] @ concat(x_t, h) + b, sigmoid/tanh, float32, whole sequence.\n"
        f"torch: nn.LSTM(N, M) on [T, 1, N], inference_mode, 1 thread.  Both cycle through {H.N_INPUTS} inputs.\n"
        f"mli fx16 LSTM (fresh inputs) is timed again here, interleaved with numpy and torch, for the ratios.\n"
        f"reference: mli.reference.lstm_cell('fx16', ...) on the first {ref_steps} step(s), best of "
        f"{ref_reps}, scaled to T steps\n(its output on those steps is checked equal to the C kernel's).")
    log()
    rows = []
    for shape in shapes:
        n, m, t = shape
        entry = {}
        case = H.make_case("lstm", "fx16", shape)
        fns = {"mli": (case.caller(fresh=True), None), "numpy": (H.numpy_lstm_fn(shape), None)}
        if torch_ver:
            fns["torch"] = (H.torch_lstm_fn(shape), None)
        res = H.measure_many(fns, budget, rounds=budget.rounds)   # interleaved with mli fx16
        tm, tn, tt = res["mli"], res["numpy"], res.get("torch")
        entry["mli_fx16_alongside"] = tm.as_dict()
        entry["numpy_f32"] = tn.as_dict()
        if tt:
            entry["torch_f32"] = tt.as_dict()
        case.call()
        args = (case.h.numpy(), case.h.frac_bits, case.w.numpy(), case.w.frac_bits, case.b.numpy(),
                case.b.frac_bits, case.c.numpy(), case.c.frac_bits, mli.RNN_BATCH_TO_BATCH, mli.RNN_ACT_TANH)
        xs = case.x.numpy()[:ref_steps]
        best = None
        for _ in range(ref_reps):
            t0 = time.perf_counter_ns()
            y, *_ = mli.reference.lstm_cell("fx16", xs, case.x.frac_bits, *args)
            dt = time.perf_counter_ns() - t0
            best = dt if best is None else min(best, dt)
        ref_step_us = best / 1e3 / ref_steps
        exact = bool(np.array_equal(np.asarray(y), case.out.numpy()[:ref_steps]))
        entry["reference"] = {"us_per_step": ref_step_us, "us_per_seq_scaled": ref_step_us * t,
                              "steps_timed": ref_steps, "bit_exact_vs_c": exact}
        R["baselines"][sk(shape)] = entry
        macs = 4 * m * (n + m) * t
        rows.append([H.shape_name(shape), H.fmt_us(tm.us), H.fmt_us(tn.us), f"{macs / tn.best_ns:.2f}",
                     H.fmt_us(tt.us) if tt else "-", f"{macs / tt.best_ns:.2f}" if tt else "-",
                     H.fmt_us(ref_step_us), H.fmt_us(ref_step_us * t), "yes" if exact else "NO"])
    log(H.table(["shape", "mli fx16 us/seq (alongside)", "numpy f32 us/seq", "GMAC/s", "torch f32 us/seq",
                 "GMAC/s",
                 "reference us/step", "reference us/seq (scaled)", "ref == C"], rows))
    return torch_ver


def comparison(shapes, R):
    section(f"7. comparison: mli fx16 LSTM (ISA path {mli.isa()}) vs bounds, PyTorch, numpy, reference")
    log("bound = the issue's lower bound per sequence; 'x bound' = mli / bound; 'torch/mli' etc. are\n"
        "how many times faster mli is (> 1 = mli faster).  'mli us/seq' is section 2's figure; 'mli alongside'\n"
        "is mli timed interleaved with numpy and torch (section 6), which the torch and numpy ratios use.")
    log()
    rows = []
    for shape in shapes:
        n, m, t = shape
        k = R["kernels"][key("lstm", "fx16", sk(shape))]
        b = R["baselines"].get(sk(shape), {})
        mu = k["us_per_seq"]
        bound = H.BOUND_US.get(shape)
        goal = GOAL_US.get(shape)
        torch_us = b.get("torch_f32", {}).get("best_ns")
        torch_us = torch_us / 1e3 if torch_us else None
        np_us = b["numpy_f32"]["best_ns"] / 1e3 if "numpy_f32" in b else None
        ref_us = b.get("reference", {}).get("us_per_seq_scaled")
        al = b["mli_fx16_alongside"]["best_ns"] / 1e3 if "mli_fx16_alongside" in b else mu
        rows.append([H.shape_name(shape), H.fmt_us(mu), H.fmt_us(mu / t), f"{k['gmac_s']:.2f}",
                     H.fmt_us(bound) if bound else "-", H.fmt_x(mu / bound) if bound else "-",
                     f"<= {H.fmt_us(goal[0])}" if goal else "-", H.fmt_us(al),
                     H.fmt_us(torch_us), H.fmt_x(torch_us / al) if torch_us else "-",
                     H.fmt_us(np_us), H.fmt_x(np_us / al) if np_us else "-",
                     H.fmt_us(ref_us), H.fmt_x(ref_us / mu) if ref_us else "-"])
    log(H.table(["shape", "mli us/seq", "us/step", "GMAC/s", "bound us", "x bound", "goal us", "mli alongside",
                 "torch us", "torch/mli", "numpy us", "numpy/mli", "ref us", "ref/mli"], rows))


def bench_waits(args, budget, R):
    """Issue 13's rows beyond the kernels, each from its own script's run()."""
    import bench_ir
    import bench_overhead
    import bench_rows
    section("8. where users wait: per-call overhead, TensorIterator, IR models, batched rows, --jobs")
    sub = H.Budget(total_ns=budget.total_ns // 2, rounds=max(2, budget.rounds // 2))
    log("### per-call overhead at HAR size (bench_overhead.py)\n")
    R["overhead"] = bench_overhead.run(log, rounds=5 if args.quick else 31)
    log("\n### IR models (bench_ir.py)\n")
    R["ir"] = bench_ir.run(log, quick=args.quick)
    log("\n### batched rows (bench_rows.py)\n")
    R["rows"] = bench_rows.run(log, sub)
    log("\n### --jobs (bench_jobs.py, in a process of its own)\n")
    R["jobs"] = _jobs_in_own_process(args.quick)


def _jobs_in_own_process(quick):
    """bench_jobs.py run as a command: a user's `mli ... --jobs` starts from one thread
    and forks its workers, where this process may hold threads by now (OpenVINO's),
    which make the pool start them through a fork server instead."""
    import subprocess
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "jobs.json")
        cmd = [sys.executable, os.path.join(here, "bench_jobs.py"), "--json", out] + (["--quick"] if quick else [])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.dirname(here), os.environ.get("PYTHONPATH")) if p))
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in p.stdout.splitlines():
            if not line.startswith("- ["):   # (the goals are printed with bench.py's own)
                log(line)
        if p.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(f"bench_jobs.py failed (exit {p.returncode})")
        with open(out) as f:
            return json.load(f)


def bench_v2(args, budget, R, shapes):
    import bench_mli2
    section("9. MLI 2.0.2: mli.v2 LSTM/GRU per kind vs the 1.1 fx16 LSTM and PyTorch (bench_mli2.py)")
    sub = H.Budget(total_ns=budget.total_ns // 2, rounds=max(2, budget.rounds // 2))
    R["mli2"] = bench_mli2.run(log, sub, not args.no_torch, shapes)


def goals(shapes, R, torch_ver):
    section("10. goals")
    lines = []

    def add(name, ok, figures):
        status = "not measured" if ok is None else ("met" if ok else "MISSED")
        lines.append({"goal": name, "status": status, "figures": figures})
        log(f"- [{status}] {name}: {figures}")

    if R["kernels"]:
        for shape, (limit, text) in GOAL_US.items():
            k = R["kernels"].get(key("lstm", "fx16", sk(shape)))
            if k is None:
                add(f"fx16 LSTM {H.shape_name(shape)} {text}", None, "shape not run")
                continue
            su = k["same_input"]["us_per_seq"]
            add(f"fx16 LSTM {H.shape_name(shape)} {text}", k["us_per_seq"] <= limit,
                f"{H.fmt_t(k['us_per_seq'])}/seq with fresh inputs (bound {H.fmt_t(H.BOUND_US[shape])}, "
                f"{k['us_per_seq'] / H.BOUND_US[shape]:.2f}x bound); same input repeated: {H.fmt_t(su)} "
                f"({'would meet' if su <= limit else 'would miss too'})")
        for shape in shapes:
            mu = R["kernels"][key("lstm", "fx16", sk(shape))]["us_per_seq"]
            b = R["baselines"].get(sk(shape), {})
            if "torch_f32" in b:
                tu = b["torch_f32"]["best_ns"] / 1e3
                al = b["mli_fx16_alongside"]["best_ns"] / 1e3
                add(f">= {TORCH_FACTOR}x faster than PyTorch, {H.shape_name(shape)}", tu / al >= TORCH_FACTOR,
                    f"mli {H.fmt_t(al)} vs torch {H.fmt_t(tu)}, timed interleaved = {tu / al:.2f}x "
                    f"(with section 2's mli {H.fmt_t(mu)}: {tu / mu:.2f}x)")
            else:
                add(f">= {TORCH_FACTOR}x faster than PyTorch, {H.shape_name(shape)}", None,
                    f"PyTorch {R['env'].get('torch', 'not run')}")
        for shape in shapes:
            mu = R["kernels"][key("lstm", "fx16", sk(shape))]["us_per_seq"]
            b = R["baselines"].get(sk(shape), {})
            if "reference" in b:
                ru = b["reference"]["us_per_seq_scaled"]
                add(f">= {REF_FACTOR:.0f}x faster than the slow reference, {H.shape_name(shape)}",
                    ru / mu >= REF_FACTOR, f"mli {H.fmt_t(mu)} vs reference ~{H.fmt_t(ru)} "
                    f"(scaled from {b['reference']['steps_timed']} step(s)) = {ru / mu:,.0f}x")
        for kind in ("fx8", "fx8w16d"):
            for shape in shapes:
                f16 = R["kernels"][key("lstm", "fx16", sk(shape))]["us_per_seq"]
                ku = R["kernels"][key("lstm", kind, sk(shape))]["us_per_seq"]
                add(f"LSTM {kind} at least as fast as fx16, {H.shape_name(shape)}",
                    ku <= f16 * SAME_SPEED_SLACK,
                    f"{kind} {H.fmt_t(ku)} vs fx16 {H.fmt_t(f16)} = {ku / f16:.2f}x the fx16 time "
                    f"(2 % noise allowance)")
        o = R["one_to_one"]
        if "prepared_same_us" in o:
            same, fresh = o["prepared_same_us"], o["prepared_fresh_estimate_us"]
            add(f"prepared one-to-one call <= {PREPARED_US:g} us (HAR)", same <= PREPARED_US,
                f"{same:.3f} us per call timed alone (same x and h; the step's own compute is "
                f"~{o['compute_per_step_same_input_us']:.3f} us); with fresh data each step ~{fresh:.3f} us "
                f"(compute ~{o['compute_per_step_us']:.3f} us)")
        else:
            add(f"prepared one-to-one call <= {PREPARED_US:g} us (HAR)", None, "not run")
    o = R.get("overhead")
    if o:
        f, best = o["figures_us"], o["best_us"]
        names = {"given": "one step, out=/cell_out= given", "alloc": "one step, outputs allocated",
                 "prepared": "prepared call (same x)"}
        for k, label in (("given", "LSTM fx16 one step, out=/cell_out= given"),
                         ("alloc", "LSTM fx16 one step, outputs allocated"),
                         ("prepared", "mli.prepare(...)() call")):
            g = o["goals_us"][k]
            add(f"{label} <= {g:g} us (HAR)", f[k] <= g,
                f"median {f[k]:.2f} us, best round {best[names[k]]:.2f} us; C compute of one step "
                f"{o['step_compute_us']:.2f} us, empty Python call {o['median_us']['empty Python call']:.3f} us")
        g = o["goals_us"]["ti_minus_direct"]
        add(f"TensorIterator fused minus direct call <= {g:g} us (T=4)", f["ti_minus_direct"] <= g,
            f"T=4: {o['ti_minus_direct_us']['T4']:.1f} us, T=128: {o['ti_minus_direct_us']['T128']:.1f} us; "
            f"same output as the direct call: {o['ti_same_output']}")
    ir = R.get("ir")
    if ir:
        for part, label in (("float", "float IR model vs OpenVINO CPU f32"),
                            ("fixed_point", "to_fixed_point model vs its MLI kernel calls")):
            for name, r in ir.get(part, {}).items():
                if "met" in r:
                    mine = r["mli_us"] if part == "float" else r["model_us"]
                    other = r["openvino_us"] if part == "float" else r["kernels_us"]
                    add(f"{label}, {r['what']} {r['goal']}", r["met"],
                        f"{H.fmt_t(mine)} vs {H.fmt_t(other)} = {r['ratio']:.2f}x (CPU time {r['cpu_ratio']:.2f}x)")
                elif part == "float" and "note" in r and "pt_har_lstm__torch_fp16" == name:
                    add(f"{label}, {r['what']}", None, r["note"])
        med = ir.get("float_median")
        if med:
            ratios = ", ".join(f"{k} {r['ratio']:.2f}x"
                               for k, r in ir["float"].items() if "ratio" in r)
            add(f"float IR models vs OpenVINO CPU f32, median of {med['cases']} "
                f"real-converter IRs {med['goal']}", med["met"], f"{med['ratio']:.2f}x ({ratios})")
    rw = R.get("rows")
    if rw and "goal" in rw:
        others = ", ".join(f"{k} {v['speedup']:.2f}x" for k, v in rw.items() if k != "goal")
        add(rw["goal"]["name"], rw["goal"]["met"], f"{rw['goal']['speedup']:.2f}x ({others})")
    for g in (R.get("jobs") or {}).get("goals", []):
        add(g["goal"], g["met"], g["figures"])
    for g in (R.get("mli2") or {}).get("goals", []):
        add(g["goal"], g["met"], g["figures"])
    for cell in ("rnn", "fc"):
        for kind in ("fx8", "fx8w16d"):
            ratios = []
            for shape in shapes if R["kernels"] else ():
                f16 = R["kernels"][key(cell, "fx16", sk(shape))]["us_per_seq"]
                ratios.append(f"{R['kernels'][key(cell, kind, sk(shape))]['us_per_seq'] / f16:.2f}x")
            if ratios:
                log(f"- [info, not a goal] {cell.upper()} {kind} time / fx16 time, per shape: {' / '.join(ratios)}")
    R["goals"] = lines


def issue26_table(shapes, R):
    """The rows of issue 26's table ("where users wait") side by side with their
    goals, from the figures of the sections that ran."""
    section(f"11. issue 26: where users wait (ISA path {mli.isa()}, CPU SIMD {R['env'].get('cpu_simd_flags', '?')})")
    if R.get("quick"):
        log("--quick: short repeats and one run per --jobs row; read the verdicts of a full run.")
        log()
    if BASELINES_CAPPED:
        log("MLIPY_ISA=avx2 on an AVX-512 machine, a stand-in for an AVX2 machine: numpy, OpenBLAS and PyTorch "
            "held to AVX2 too (" + ", ".join(f"{k}={os.environ.get(k)}" for k in BASELINE_CAPS) + "); "
            "OpenVINO keeps its AVX-512 code.")
        log()
    rows = []

    def row(what, measured, goal, met):
        rows.append([what, measured, goal, "-" if met is None else ("met" if met else "MISSED")])

    def ratios(shape):
        b = R["baselines"].get(sk(shape), {})
        al = b.get("mli_fx16_alongside", {}).get("best_ns")
        t = b.get("torch_f32", {}).get("best_ns")
        n = b.get("numpy_f32", {}).get("best_ns")
        return al, (t / al if t and al else None), (n / al if n and al else None)

    k = R["kernels"]
    if k.get(key("lstm", "fx16", sk(HAR))):
        al, tr, nr = ratios(HAR)
        kk = k[key("lstm", "fx16", sk(HAR))]
        row("fx16 LSTM 32x32x128 (HAR), one sequence",
            f"{H.fmt_t(kk['us_per_seq'])}; {kk['gmac_s']:.1f} GMAC/s; "
            f"torch {'-' if tr is None else f'{tr:.2f}x'}, numpy {'-' if nr is None else f'{nr:.1f}x'} slower",
            ">= 5x torch, >= 40x numpy", None if tr is None or nr is None else (tr >= 5 and nr >= 40))
    for shape in shapes:
        if shape == HAR or not k.get(key("lstm", "fx16", sk(shape))):
            continue
        al, tr, _ = ratios(shape)
        row(f"fx16 LSTM {H.shape_name(shape)}",
            f"{H.fmt_t(k[key('lstm', 'fx16', sk(shape))]['us_per_seq'])}; torch "
            f"{'-' if tr is None else f'{tr:.2f}x'} slower", ">= 3x torch", None if tr is None else tr >= 3)
    rw = R.get("rows")
    if rw and "goal" in rw:
        sp = {kk: v["speedup"] for kk, v in rw.items() if kk != "goal"}
        row("64 rows sharing weights (rows call vs 64 calls, per row, HAR)",
            ", ".join(f"{kk} {v:.2f}x" for kk, v in sp.items()), ">= 3x, every kind", min(sp.values()) >= 3)
    jb = R.get("jobs")
    if jb:
        for name, r in jb["rows"].items():
            if r.get("forced"):
                continue
            big = r["jobs1_cpu_s"] >= 1.0
            row(f"--jobs {jb['jobs']} vs --jobs 1: {name}",
                f"{r['jobs1_s']:.3f} -> {r['jobsN_s']:.3f} s = {r['speedup']:.2f}x "
                f"({r['jobs1_cpu_s']:.2f} s of one-job CPU)",
                ">= 1.7x (>= 1 s of work); never slower" if big else "never slower (< 1 s of work)",
                (r["speedup"] >= 1.7 if big else True) and r["speedup"] >= 1 / 1.05 and r["same"])
    ir = R.get("ir")
    if ir and ir.get("float_median"):
        med = ir["float_median"]
        row(f"float IR models vs OpenVINO CPU f32 (median of {med['cases']})", f"{med['ratio']:.2f}x",
            "<= 1.5x", med["ratio"] <= 1.5)
    o = R.get("overhead")
    if o:
        best, comp = o["best_us"], o["step_compute_us"]
        g, pr = best["one step, out=/cell_out= given"], best["prepared call (same x)"]
        row("one-step lstm_cell_fx16, out=/cell_out= given (HAR)", f"{g:.2f} us best round", "<= 1.5 us", g <= 1.5)
        row("mli.prepare(...)() (HAR)", f"{pr:.2f} us best round (the step's compute {comp:.2f} us)",
            f"<= 0.4 us + compute = {0.4 + comp:.2f} us", pr <= 0.4 + comp)
    m2 = R.get("mli2")
    if m2:
        worst = []
        for r in m2["rows"]:
            for cell in ("lstm", "gru"):
                f16, s8 = r.get(f"{cell}_fx16"), r.get(f"{cell}_sa8_sa8_sa32")
                if f16 and s8:
                    worst.append((s8 / f16, f"{cell} {r['shape']}"))
        if worst:
            w = max(worst)
            row("MLI 2.0.2 sa8 LSTM/GRU vs fx16", f"at most {w[0]:.2f}x the fx16 time ({w[1]})",
                "no slower (2 % allowance)", w[0] <= SAME_SPEED_SLACK)
    log(H.table(["where users wait", "measured", "goal", "verdict"], rows))
    R["issue26"] = [dict(zip(("what", "measured", "goal", "verdict"), r)) for r in rows]


def print_env(env):
    for k in ("mli_isa", "mli_supported_isas", "MLIPY_ISA", "mli_version", "mli_core", "mli_rounding",
              "cpu", "cpu_simd_flags", "logical_cpus", "loadavg_start", "loadavg_end", "python", "numpy",
              "torch", "baseline_caps", "threads", "platform", "command", "elapsed_s", "load_note"):
        if k in env:
            log(f"- {k}: {env[k]}")


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short repeats, 1 reference step (< 20 s)")
    ap.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    ap.add_argument("--shapes", metavar="NxMxT,...",
                    help="shapes to run (default: 32x32x128,64x64x50,128x128x100,512x256x25)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    ap.add_argument("--sections", metavar="LIST", default=",".join(SECTIONS),
                    help=f"sections to run, of {','.join(SECTIONS)} (default: all)")
    args = ap.parse_args(argv)
    run_sec = set(filter(None, args.sections.split(",")))
    if run_sec - set(SECTIONS):
        ap.error(f"--sections: unknown {sorted(run_sec - set(SECTIONS))}; known: {','.join(SECTIONS)}")
    shapes = H.parse_shapes(args.shapes) if args.shapes else list(H.SHAPES)
    budget = (H.Budget(target_ns=1_000_000, total_ns=25_000_000, min_repeats=3, warmup=1, rounds=2)
              if args.quick else
              H.Budget(target_ns=1_000_000, total_ns=600_000_000, min_repeats=10, warmup=2, rounds=10))
    monitor = H.LoadMonitor()
    R = {"kernels": {}, "isa": {}, "one_to_one": {}, "tensoriterator": {}, "baselines": {},
         "budget": vars(budget), "shapes": [list(s) for s in shapes], "quick": args.quick}
    R["env"] = H.environment(None)
    R["env"]["command"] = "PYTHONPATH=. python " + " ".join(["benchmarks/bench.py"] + sys.argv[1:])
    R["env"]["baseline_caps"] = (", ".join(f"{k}={os.environ.get(k)}" for k in BASELINE_CAPS) if BASELINES_CAPPED
                                 else "none (numpy, OpenBLAS and PyTorch take their best code for this CPU)")

    log("# mli-py benchmark" + (" (--quick)" if args.quick else ""))
    section("1. environment (code path)")
    print_env({k: v for k, v in R["env"].items() if k != "torch"})
    log(f"- timing: per measurement, {budget.warmup} warm-up call(s), then repeats of ~{budget.target_ns / 1e6:g} ms "
        f"(>= 1 call) for ~{budget.total_ns / 1e6:g} ms in all (>= {budget.min_repeats} repeats), compared "
        f"variants interleaved in {budget.rounds} rounds; reported: the best repeat's mean per call (and the "
        f"median repeat); time.perf_counter_ns, GC off")

    torch_ver = None
    if "kernels" in run_sec:
        bench_kernels(shapes, budget, R)
        bench_isa(shapes, budget, R)
        bench_one_to_one(budget, R)
        bench_ti(shapes, budget, R)
        torch_ver = bench_baselines(shapes, budget, R, args.quick, not args.no_torch)
        comparison(shapes, R)
    if "waits" in run_sec:
        bench_waits(args, budget, R)
    if "mli2" in run_sec:
        bench_v2(args, budget, R, shapes)
    goals(shapes, R, torch_ver)
    issue26_table(shapes, R)

    R["env"]["loadavg_end"] = os.getloadavg()
    load = monitor.result()
    R["env"]["elapsed_s"] = load["wall_s"]
    R["env"]["machine_load"] = load
    R["env"]["load_note"] = (
        f"this process got {load['own_cpu_share']:.2f} of a CPU; other work kept "
        f"{load.get('other_cpus_busy', '?')} CPUs busy on average (0 = quiet machine; figures are less "
        f"reliable when it is near or above 1 of {os.cpu_count()} CPUs), steal {load.get('steal_cpus', '?')}")
    section("summary: code path and machine")
    print_env(R["env"])
    met = sum(g["status"] == "met" for g in R["goals"])
    missed = [g["goal"] for g in R["goals"] if g["status"] == "MISSED"]
    log(f"- goals: {met} met, {len(missed)} MISSED" + (": " + "; ".join(missed) if missed else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(R, f, indent=1, default=str)
        log(f"- JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
