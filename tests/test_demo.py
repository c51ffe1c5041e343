"""``mli demo`` as a user runs it (small sizes): the S/N figures are exact
(seeded data, bit-exact kernels), the times are printed in their column."""
import os
import re
import subprocess
import sys

import mli


def test_mli_demo_small(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__))))
    r = subprocess.run([sys.executable, "-m", "mli", "demo", "--inputs", "8", "--state", "4", "--steps", "5"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert lines[:6] == [
        "mli demo: synthetic tanh RNN, N=8 M=4 T=5 seed=0",
        "S/N in dB of the fixed-point output against the float model; time per step of the C kernel",
        "(batch modes: one call for all T steps; one_to_one: one call per step, bound once by mli.prepare;",
        " best of 5 rounds after a warm-up)",
        "",
        "kind      mode               S/N dB   us/step",
    ]
    rows = [re.fullmatch(r"(\S+) +(\S+) +(-?\d+\.\d) +(\d+\.\d\d)", ln) for ln in lines[6:]]
    assert all(rows), lines[6:]
    assert [(m[1], m[2], m[3]) for m in rows] == [
        ("fx8", "one_to_one", "15.3"), ("fx8", "batch_to_batch", "20.2"), ("fx8", "batch_to_last", "28.4"),
        ("fx16", "one_to_one", "63.7"), ("fx16", "batch_to_batch", "64.9"), ("fx16", "batch_to_last", "65.6"),
        ("fx8w16d", "one_to_one", "41.1"), ("fx8w16d", "batch_to_batch", "46.2"),
        ("fx8w16d", "batch_to_last", "49.3"),
    ]


def test_mli_demo_usage_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mli", "demo", "--steps", "0"], cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))),
                       capture_output=True, text=True, timeout=300)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", "mli demo: error: --steps: expected 1..10000, got 0\n")
