"""A long fuzz campaign: run_fuzz.py in chunks until each target has run
--examples examples, restarting with the next seed after a crash, and merge
what the chunks found.

    python tests/fuzz/campaign.py --examples 5000 --chunk 1000 --out /tmp/campaign
    python tests/fuzz/campaign.py --targets kernels bridge --examples 20000

Prints per target: examples run, clean errors, timeouts, distinct findings
and crashes (with the spec that was running), and writes summary.json.
Under AddressSanitizer set LD_PRELOAD / ASAN_OPTIONS and MLI_FUZZ_GUARD=0
in the environment; they are passed on.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from common import read_last_spec  # noqa: E402

TARGETS = ("kernels", "bridge", "ir", "io", "cli")


def campaign(target, total, chunk, seed0, out):
    done, seed = 0, seed0
    res = {"target": target, "examples": 0, "ok": 0, "errors": 0, "timeouts": 0, "findings": {}, "crashes": [],
           "seconds": 0.0, "runs": 0}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    while done < total:
        n = min(chunk, total - done)
        last = os.path.join(out, f"last_{target}_{seed}.txt")
        js = os.path.join(out, f"{target}_{seed}.json")
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, os.path.join(HERE, "run_fuzz.py"), "--target", target, "--examples",
                            str(n), "--seed", str(seed), "--keep-going", "--last-spec", last, "--json", js],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        res["seconds"] += time.perf_counter() - t0
        res["runs"] += 1
        with open(os.path.join(out, f"{target}_{seed}.err"), "w") as f:
            f.write(p.stderr)
        if p.returncode in (0, 1) and os.path.exists(js):
            with open(js) as f:
                s = json.load(f)
            ran = s["examples"]
            for k in ("ok", "errors", "timeouts"):
                res[k] += s[k]
            for fd in s["findings"]:
                key = fd["reason"].split(" at ")[-1] if " at " in fd["reason"] else fd["reason"][:120]
                res["findings"].setdefault(key, fd)
        else:
            ran, spec = read_last_spec(last) if os.path.exists(last) else (0, "?")
            sig = -p.returncode if p.returncode < 0 else None
            res["crashes"].append({"seed": seed, "example": ran, "how": (signal.Signals(sig).name if sig
                                                                         else f"exit {p.returncode}"),
                                   "spec": spec, "stderr": p.stderr[-1500:]})
        res["examples"] += ran
        done += max(ran, 1)
        seed += 1
    res["findings"] = list(res["findings"].values())
    res["seconds"] = round(res["seconds"], 1)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS)
    ap.add_argument("--examples", type=int, default=5000, help="examples per target")
    ap.add_argument("--chunk", type=int, default=1000, help="examples per subprocess")
    ap.add_argument("--seed", type=int, default=1000, help="seed of the first chunk")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="fuzz-campaign")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda t: campaign(t, args.examples, args.chunk, args.seed, args.out), args.targets))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(results, f, indent=1)
    bad = 0
    for r in results:
        print(f"{r['target']}: {r['examples']} examples in {r['runs']} run(s), {r['ok']} ok, {r['errors']} clean "
              f"errors, {r['timeouts']} timeouts, {len(r['findings'])} distinct findings, "
              f"{len(r['crashes'])} crash(es), {r['seconds']} s")
        for fd in r["findings"]:
            print(f"  finding: {fd['reason'][:200]}\n    spec: {fd['spec'][:600]}")
        for c in r["crashes"]:
            print(f"  CRASH ({c['how']}) at example {c['example']} of seed {c['seed']}:\n    spec: {c['spec'][:600]}")
        bad += len(r["findings"]) + len(r["crashes"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
