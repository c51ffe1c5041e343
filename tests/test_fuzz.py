"""Fuzzing (issue 5): hypothesis drives the kernel API, the raw bridge, the
IR reader, the file readers and the CLIs with hostile inputs.  Each target
runs in a subprocess (tests/fuzz/run_fuzz.py) so that a segfault or abort
fails the test instead of killing pytest.

Accepted per example: success, or a ValueError / TypeError /
NotImplementedError / OSError subclass with a message (CLIs: exit 0/1/2, no
traceback); inputs and the guard bytes around every buffer unchanged.

Budget: MLI_FUZZ_EXAMPLES examples per target (default 300, fixed seed
MLI_FUZZ_SEED, default 0).  The whole budget always runs (--keep-going); a
failure lists every distinct finding with the command that replays it
(run_fuzz.py without --keep-going shrinks the first one instead).
"""
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "fuzz" / "run_fuzz.py"
SHARED = Path(os.environ.get("MLI_SHARED") or ROOT.parent / "shared")
# the subprocess imports the same mli as this process (installed package or checkout)
MLI_HOME = str(Path(importlib.import_module("mli").__file__).resolve().parents[1])
EXAMPLES = int(os.environ.get("MLI_FUZZ_EXAMPLES", "300"))
SEED = int(os.environ.get("MLI_FUZZ_SEED", "0"))


def run_target(target, tmp_path, examples=EXAMPLES, seed=SEED, timeout=600):
    last = tmp_path / f"last_{target}.txt"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([MLI_HOME] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("MLI_SHARED", str(SHARED))
    cmd = [sys.executable, str(RUNNER), "--target", target, "--examples", str(examples), "--seed", str(seed),
           "--last-spec", str(last), "--keep-going"]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    summary = json.loads(lines[-1]) if lines else None
    if p.returncode == 1 and summary is not None and summary["findings"]:
        found = "\n".join(f"* {f['reason']}\n  replay: python tests/fuzz/run_fuzz.py --target {target} --replay "
                          f"{json.dumps(f['spec'])}" for f in summary["findings"])
        pytest.fail(f"fuzz target {target!r}: {len(summary['findings'])} distinct finding(s) in "
                    f"{summary['examples']} examples:\n{found}", pytrace=False)
    if p.returncode != 0:
        spec = last.read_text() if last.exists() else "?"
        how = (f"killed by signal {-p.returncode}" if p.returncode < 0 else f"exit code {p.returncode}")
        pytest.fail(f"fuzz target {target!r}: {how}\n--- last spec run:\n{spec}\n--- stderr (tail):\n"
                    f"{p.stderr[-6000:]}\n--- stdout (tail):\n{p.stdout[-3000:]}", pytrace=False)
    assert summary is not None, p.stdout[-2000:]
    return summary


@pytest.mark.parametrize("target", ["kernels", "bridge", "io", "cli"])
def test_fuzz(target, tmp_path):
    s = run_target(target, tmp_path)
    assert s["examples"] >= EXAMPLES, s  # ran the whole budget
    assert not s["findings"], s
    print(f"{target}: {s['examples']} examples, {s['ok']} ok, {s['errors']} clean errors, "
          f"{s['timeouts']} timeouts, {s['seconds']} s")


@pytest.mark.skipif(not (SHARED / "vectors" / "ov_ti_loop").is_dir(),
                    reason=f"IR seed models not found under {SHARED} (set MLI_SHARED)")
def test_fuzz_ir(tmp_path):
    s = run_target("ir", tmp_path)
    assert s["examples"] >= EXAMPLES, s
    assert not s["findings"], s


def test_runner_reports_a_crash(tmp_path):
    """The harness itself: a crash in the subprocess is caught and reported
    with the spec that was running (not just 'pytest died')."""
    env = dict(os.environ, PYTHONPATH=MLI_HOME)
    code = (f"import sys; sys.path.insert(0, {str(RUNNER.parent)!r}); import common; "
            f"common.LastSpec({str(tmp_path / 'l.txt')!r}).write('SPEC'); import ctypes; ctypes.string_at(0)")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert p.returncode != 0
    sys.path.insert(0, str(RUNNER.parent))
    try:
        from common import read_last_spec
    finally:
        sys.path.remove(str(RUNNER.parent))
    assert read_last_spec(tmp_path / "l.txt") == (1, "SPEC")
