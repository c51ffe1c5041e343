"""``--jobs N`` of the data-set commands (issue 26, requirement 3): the same
data set with one job and with N worker processes, wall time, in-process.

    PYTHONPATH=. python benchmarks/bench_jobs.py [--quick] [--jobs N]

Rows: ``mli vectors`` over ``shared/vectors/mli11`` and ``mli20``
(``mli.tools.vectors.run_dir``), ``mli har --accuracy``
(``mli.tools.har.accuracy``) and a synthetic ``mli crosscheck --vectors`` data
set (LSTM fx16 32x32, 16 steps, 4,096 vectors, the firmware one LSB off in
every 16th vector: the CLI's lines captured),
each checked to give the same results with N jobs as with one.  The default
rule decides whether the N-job run starts workers (``pool``: yes / no,
:func:`mli.tools.jobs.use_processes`); the ``forced`` rows start them
whatever the size (``MLI_JOBS_PROCESSES=1``), which shows what the
fall-back saves.  Goal: >= 1.7x with 2 jobs for data sets of >= 1 s of
one-core work, never slower than one job.  The runs alternate (1, N, 1, N,
...) and the best of each is kept.  The speed-up can only show with N free
cores: the ``others`` column says how many CPUs other processes kept busy
while a row ran (/proc/stat's busy time less this process's and its
workers'), on average.
``run(log) -> dict``; nothing here asserts on a time.
"""
import os
import pickle
import sys
import time
from pathlib import Path

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))

import _harness as H  # noqa: E402
from mli.tools import har, jobs, vectors  # noqa: E402

GOAL_X = 1.7
SHARED = _HERE.parent.parent / "shared"


def _cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# ---- each chunk's CPU time in its worker (forked workers; the results are unchanged)
_TAG = "bench_jobs chunk CPU"
_CHUNKS: list = []          # (worker pid, CPU s of the chunk, its pickling included)
_ORIG = {}


def _timed_call(fn, mode, chunk):
    c0 = time.process_time()
    # a spawned worker (the caller ran threads: bench.py with torch loaded) imported
    # this module afresh: its jobs._worker_call is the package's own
    data = _ORIG.get("call", jobs._worker_call)(fn, mode, chunk)
    return pickle.dumps((_TAG, os.getpid(), time.process_time() - c0, data), pickle.HIGHEST_PROTOCOL)


def _timed_loads(data):
    t = _ORIG["loads"](data)
    if isinstance(t, tuple) and len(t) == 4 and t[0] == _TAG:
        _CHUNKS.append((t[1], t[2]))
        return _ORIG["loads"](t[3])
    return t


def _time_chunks():
    """Record each worker chunk's CPU time in :data:`_CHUNKS` from now on."""
    if not _ORIG and hasattr(jobs, "_loads"):
        _ORIG.update(call=jobs._worker_call, loads=jobs._loads)
        jobs._worker_call, jobs._loads = _timed_call, _timed_loads


def _busiest_worker():
    """CPU s of the busiest worker of the chunks recorded since the last call (None: no workers)."""
    per: dict = {}
    for pid, c in _CHUNKS:
        per[pid] = per.get(pid, 0.0) + c
    _CHUNKS.clear()
    return max(per.values()) if per else None


def _busy():
    """All CPUs' busy seconds so far (/proc/stat), or None."""
    st = H._proc_stat()
    return None if st is None else st[0] / os.sysconf("SC_CLK_TCK")


def _pair(one, many, reps):
    """Alternate the two runs `reps` times; (best 1-job s, best N-job s, same
    results, CPU s of the best 1-job run, CPU s of the best N-job run: this
    process and its finished workers, other work's load: the CPUs kept busy
    by other processes while the pair ran, on average, or None)."""
    b1 = bn = c1 = cn = float("inf")
    wn = None
    r1 = rn = None
    busy0, own0, w0 = _busy(), _cpu(), time.perf_counter()
    for _ in range(reps):
        for which in (1, 2):
            _busiest_worker()
            c0, t0 = _cpu(), time.perf_counter()
            r = (one if which == 1 else many)()
            t, c = time.perf_counter() - t0, _cpu() - c0
            w = _busiest_worker()
            if which == 1:
                r1 = r
                if t < b1:
                    b1, c1 = t, c
            else:
                rn = r
                if t < bn:
                    bn, cn, wn = t, c, w
    busy1 = _busy()
    others = None if busy0 is None or busy1 is None else \
        max(0.0, (busy1 - busy0) - (_cpu() - own0)) / (time.perf_counter() - w0)
    return b1, bn, r1 == rn, c1, cn, others, wn


def _crosscheck_argv(folder, V=2048, T=16, N=32, M=32):
    import numpy as np

    rng = np.random.default_rng(0)
    folder = Path(folder)
    np.save(folder / "x.npy", rng.integers(-3000, 3000, (V, T, N)).astype(np.int16))
    np.save(folder / "w.npy", rng.integers(-300, 300, (4, M, N + M)).astype(np.int16))
    np.save(folder / "b.npy", rng.integers(-300, 300, (4, M)).astype(np.int16))
    np.save(folder / "fw.npy", np.zeros((V, T, M), np.int16))
    argv = ["--kernel", "lstm_cell_fx16", "--in", str(folder / "x.npy"), "--in-frac", "12", "--weights",
            str(folder / "w.npy"), "--weights-frac", "12", "--bias", str(folder / "b.npy"), "--bias-frac", "11",
            "--prev-out-frac", "15", "--cell-frac", "12", "--firmware", str(folder / "fw.npy"), "--vectors"]
    # firmware as a real data set has it: the package's outputs, one element off in every 16th vector
    from mli.tools.crosscheck import run as cc_run

    got = {}
    compare = cc_run._compare_vector

    def keep(prep, data, outs, *rest):
        got[int(rest[-1])] = next(iter(outs.values()))[0].numpy().reshape(T, M)
        return compare(prep, data, outs, *rest)
    cc_run._compare_vector = keep
    try:
        _cli_lines(argv + ["--no-alt-rounding"])
    finally:
        cc_run._compare_vector = compare
    fw = np.stack([got[v] for v in range(V)]).astype(np.int16)
    fw[::16, T // 2, 0] += 1
    np.save(folder / "fw.npy", fw)
    return argv


def _cli_lines(argv):
    import contextlib
    import io

    from mli.tools.crosscheck import cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(argv)
    return code, buf.getvalue()


def run(log=print, quick=False, jobs=2, shared=None) -> dict:
    import tempfile

    shared = Path(shared) if shared else Path(os.environ.get("MLI_SHARED", SHARED))
    reps = 1 if quick else 3
    res = {"jobs": jobs, "cpus": os.cpu_count(), "rows": {}, "goals": []}
    _time_chunks()
    table = []

    def row(key, label, one, many, forced=False, n_reps=reps):
        saved = os.environ.pop("MLI_JOBS_PROCESSES", None)
        if forced:
            os.environ["MLI_JOBS_PROCESSES"] = "1"
        try:
            b1, bn, same, c1, cn, others, wn = _pair(one, many, n_reps)
        finally:
            os.environ.pop("MLI_JOBS_PROCESSES", None)
            if saved is not None:
                os.environ["MLI_JOBS_PROCESSES"] = saved
        # what N free CPUs would allow if only CPU time bounded the run: the busiest
        # worker, or all the N-job run's CPU (workers and this process) shared by N
        bound = None if wn is None else c1 / max(wn, cn / jobs)
        res["rows"][key] = {"jobs1_s": b1, "jobsN_s": bn, "speedup": b1 / bn, "same": same, "forced": forced,
                            "jobs1_cpu_s": c1, "jobsN_cpu_s": cn, "other_cpus_busy": others,
                            "busiest_worker_cpu_s": wn, "cpu_bound_speedup": bound}
        table.append([label + (" (forced)" if forced else ""), f"{b1:.3f} s", f"{bn:.3f} s", H.fmt_x(b1 / bn),
                      f"{c1:.2f} / {cn:.2f} s", "-" if wn is None else f"{wn:.2f} s",
                      "-" if bound is None else H.fmt_x(bound), "?" if others is None else f"{others:.2f}",
                      "yes" if same else "NO"])

    for name in ("mli11", "mli20", "ov_real"):
        folder = shared / "vectors" / name
        if not folder.is_dir():
            continue
        pats = ["*lstm*"] if quick and name != "ov_real" else None

        def vec(j, folder=folder, pats=pats):
            return lambda: [(r.name, r.passed, r.message) for r in vectors.run_dir(str(folder), pats, jobs=j)]

        # mli11 (one process with N jobs: the same code in both columns) gets more runs,
        # so that the noise of this machine does not pass for a cost
        more = 2 if name == "mli11" else 0
        row(f"vectors_{name}", f"mli vectors {name}" + (" (*lstm*)" if quick and name != "ov_real" else ""),
            vec(1), vec(jobs), n_reps=reps + more)
        if name == "mli11":
            row(f"vectors_{name}_forced", f"mli vectors {name}", vec(1), vec(jobs), forced=True)
    har_dir = shared / "data" / "har"
    if har_dir.is_dir():
        model = har.load_har(str(har_dir), 16)

        def acc(j):
            return lambda: (lambda a: (a[0], a[1], a[2].tolist()))(har.accuracy(model, "custom", str(har_dir), j))

        row("har_accuracy", "mli har --accuracy (fx16)", acc(1), acc(jobs), n_reps=reps + 2)
        row("har_accuracy_forced", "mli har --accuracy (fx16)", acc(1), acc(jobs), forced=True, n_reps=reps + 2)
    with tempfile.TemporaryDirectory() as tmp:   # (the data set's making is not timed)
        argv = _crosscheck_argv(tmp, V=512 if quick else 4096)

        def cc(j):
            return lambda: _cli_lines(argv + ["--jobs", str(j)])

        row("crosscheck_lstm", "mli crosscheck --vectors (LSTM fx16)", cc(1), cc(jobs))
    log(f"--jobs 1 vs --jobs {jobs} ({os.cpu_count()} CPUs), best of {reps} alternating runs ({reps + 2} for mli11 "
        "and HAR), wall time; CPU: this process and its workers, of the best runs; others: CPUs kept busy by "
        "other processes during the row, on average; busiest worker: its chunks' CPU time in the best N-job run; "
        "CPU bound: 1-job CPU / max(busiest worker, N-job CPU / N), the speed-up N free CPUs would give if "
        "only CPU time bounded the run; (forced): worker processes whatever the size")
    log(H.table(["data set", "--jobs 1", f"--jobs {jobs}", "speed-up", "CPU 1 / N", "busiest worker",
                 "CPU bound", "others", "same results"], table))
    for name, r in res["rows"].items():
        # ">= 1 s of single-core work": the 1-job run's CPU time, which other work on
        # the machine does not stretch as it does the wall time
        big = r["jobs1_cpu_s"] >= 1.0 and not r["forced"]
        goal = (f"--jobs {jobs} >= {GOAL_X}x (>= 1 s of one-core CPU), {name}" if big else
                f"--jobs {jobs} no slower than --jobs 1, {name}")
        met = (r["speedup"] >= GOAL_X if big else r["speedup"] >= 0.95) and r["same"]
        if r["forced"]:
            continue
        res["goals"].append({"goal": goal, "met": met,
                             "figures": f"{r['jobs1_s'] * 1e3:.1f} ms -> {r['jobsN_s'] * 1e3:.1f} ms = "
                                        f"{r['speedup']:.2f}x; same results: {r['same']}" +
                                        ("" if r["other_cpus_busy"] is None else
                                         f"; other work kept {r['other_cpus_busy']:.2f} CPUs busy")})
    return res


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON (bench.py reads it)")
    a = ap.parse_args(argv)
    r = run(lambda s="": print(s, flush=True), a.quick, a.jobs)
    for g in r["goals"]:
        print(f"- [{'met' if g['met'] else 'MISSED'}] {g['goal']}: {g['figures']}")
    if a.json:
        import json
        with open(a.json, "w") as f:
            json.dump(r, f, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
