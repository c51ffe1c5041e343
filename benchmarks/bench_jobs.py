"""``--jobs N`` of the data-set commands (issue 13, requirement 5): the same
data set with 1 thread and with N threads, wall time, in-process.

    PYTHONPATH=. python benchmarks/bench_jobs.py [--quick] [--jobs N]

Rows: ``mli vectors`` over ``shared/vectors/mli11`` (``mli.tools.vectors.run_dir``)
and ``mli har --accuracy`` (``mli.tools.har.accuracy``), each checked to give
the same results with N threads as with one.  Goal: >= 1.8x with 2 jobs.  The
runs alternate (1, N, 1, N, ...) and the best of each is kept.  The speed-up
can only show with N free cores: the load note of bench.py says how busy the
machine was.  ``run(log) -> dict``; nothing here asserts on a time.
"""
import os
import sys
import time
from pathlib import Path

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))

import _harness as H  # noqa: E402
from mli.tools import har, vectors  # noqa: E402

GOAL_X = 1.8
SHARED = _HERE.parent.parent / "shared"


def _best_wall(fn, reps):
    best, result = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def _pair(one, many, reps):
    """Alternate the two runs `reps` times; (best 1-job s, best N-job s, same results)."""
    b1 = bn = float("inf")
    r1 = rn = None
    for _ in range(reps):
        t, r1 = _best_wall(one, 1)
        b1 = min(b1, t)
        t, rn = _best_wall(many, 1)
        bn = min(bn, t)
    return b1, bn, r1 == rn


def run(log=print, quick=False, jobs=2, shared=None) -> dict:
    shared = Path(shared) if shared else Path(os.environ.get("MLI_SHARED", SHARED))
    reps = 1 if quick else 3
    res = {"jobs": jobs, "cpus": os.cpu_count(), "rows": {}, "goals": []}
    table = []
    mli11 = shared / "vectors" / "mli11"
    if mli11.is_dir():
        pats = ["*lstm*"] if quick else None

        def vec(j):
            return lambda: [(r.name, r.passed, r.message) for r in vectors.run_dir(str(mli11), pats, jobs=j)]

        b1, bn, same = _pair(vec(1), vec(jobs), reps)
        res["rows"]["vectors_mli11"] = {"jobs1_s": b1, "jobsN_s": bn, "speedup": b1 / bn, "same": same}
        table.append([f"mli vectors {mli11.name}" + (" (*lstm*)" if quick else ""), f"{b1:.2f} s",
                      f"{bn:.2f} s", H.fmt_x(b1 / bn), "yes" if same else "NO"])
    har_dir = shared / "data" / "har"
    if har_dir.is_dir():
        model = har.load_har(str(har_dir), 16)

        def acc(j):
            return lambda: (lambda a: (a[0], a[1], a[2].tolist()))(har.accuracy(model, "custom", str(har_dir), j))

        b1, bn, same = _pair(acc(1), acc(jobs), reps + 2)
        res["rows"]["har_accuracy"] = {"jobs1_s": b1, "jobsN_s": bn, "speedup": b1 / bn, "same": same}
        table.append(["mli har --accuracy (fx16)", f"{b1 * 1e3:.1f} ms", f"{bn * 1e3:.1f} ms", H.fmt_x(b1 / bn),
                      "yes" if same else "NO"])
    if not table:
        log(f"{shared}: no vectors/mli11 or data/har; --jobs rows skipped")
        return res
    log(f"--jobs 1 vs --jobs {jobs} ({os.cpu_count()} CPUs), best of {reps} alternating runs, wall time")
    log(H.table(["data set", "--jobs 1", f"--jobs {jobs}", "speed-up", "same results"], table))
    for name, r in res["rows"].items():
        res["goals"].append({"goal": f"--jobs {jobs} >= {GOAL_X}x, {name}", "met": r["speedup"] >= GOAL_X and r["same"],
                             "figures": f"{r['jobs1_s'] * 1e3:.1f} ms -> {r['jobsN_s'] * 1e3:.1f} ms = "
                                        f"{r['speedup']:.2f}x; same results: {r['same']}"})
    return res


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    r = run(lambda s="": print(s, flush=True), a.quick, a.jobs)
    for g in r["goals"]:
        print(f"- [{'met' if g['met'] else 'MISSED'}] {g['goal']}: {g['figures']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
