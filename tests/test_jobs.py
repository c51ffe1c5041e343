"""``--jobs N`` of the data-set commands: the same output as ``--jobs 1``, in
the same order, in the caller's rounding mode; errors in turn; a bad N is a
one-line usage error."""
import argparse
import os
import pathlib
import threading
import time

import numpy as np
import pytest

import mli
from mli.tools import har, vectors
from mli.tools.jobs import (MAX_JOBS, MIN_PROCESS_SECONDS, chunked, default_jobs, jobs_arg, ordered_map, process_map,
                            use_processes)

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MLI_SHARED", ROOT.parent / "shared"))
needs_shared = pytest.mark.skipif(not (SHARED / "vectors" / "mli11").is_dir(),
                                  reason="../shared (reference cases and HAR data) is not beside the project")


def test_ordered_map_keeps_the_order_whatever_finishes_first():
    def slow_first(i):
        time.sleep(0.02 if i % 3 == 0 else 0)
        return i * i

    for jobs in (1, 2, 3, 8):
        assert list(ordered_map(slow_first, range(20), jobs)) == [i * i for i in range(20)]


def test_ordered_map_runs_on_several_threads():
    seen = set()
    barrier = threading.Barrier(2, timeout=10)

    def meet(i):
        seen.add(threading.get_ident())
        barrier.wait()      # two items must be running at once, or this times out
        return i

    assert list(ordered_map(meet, range(4), 2)) == [0, 1, 2, 3]
    assert len(seen) == 2


def test_ordered_map_raises_in_turn_and_starts_nothing_after_an_early_exit():
    started = []

    def fn(i):
        started.append(i)
        if i == 3:
            raise ValueError("item 3")
        return i

    got = []
    with pytest.raises(ValueError, match="item 3"):
        for r in ordered_map(fn, range(100), 2):
            got.append(r)
    assert got == [0, 1, 2]           # everything before the failing item, in order
    time.sleep(0.1)
    assert max(started) < 3 + 2 * 2   # at most 2*jobs items were ever in flight


def test_workers_run_in_the_callers_rounding_mode():
    before = mli.get_rounding()
    with mli.rounding("up"):
        modes = list(ordered_map(lambda _: mli.get_rounding(), range(6), 2))
    assert modes == ["up"] * 6
    assert mli.get_rounding() == before
    assert list(ordered_map(lambda _: mli.get_rounding(), range(4), 2)) == [before] * 4


@pytest.mark.parametrize("text, want", [("1", 1), ("2", 2), (str(MAX_JOBS), MAX_JOBS), ("0", None)])
def test_jobs_arg_accepts(text, want):
    assert jobs_arg(text) == (default_jobs() if want is None else want)


@pytest.mark.parametrize("text", ["-1", str(MAX_JOBS + 1), "two", "1.5", ""])
def test_jobs_arg_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError):
        jobs_arg(text)


@pytest.mark.parametrize("argv", [["vectors", ".", "--jobs", "-3"], ["har", "--jobs", "x"],
                                  ["crosscheck", "--jobs", "100000"]])
def test_bad_jobs_is_a_usage_error(capsys, argv):
    from mli.tools import cli

    try:
        code = cli.main(argv)
    except SystemExit as e:     # argparse's own exit
        code = e.code
    assert code == 2
    assert "--jobs" in capsys.readouterr().err


@needs_shared
@pytest.mark.parametrize("rounding", ["convergent", "up"])
def test_vectors_same_results_in_the_same_order(rounding):
    folder = str(SHARED / "vectors" / "mli11")
    one = vectors.run_dir(folder, ["*lstm*", "*rnn*"], rounding, jobs=1)
    two = vectors.run_dir(folder, ["*lstm*", "*rnn*"], rounding, jobs=2)
    assert len(one) > 50
    assert one == two
    assert all(r.passed for r in one)


@needs_shared
def test_vectors_cli_prints_the_same_lines(capsys):
    folder = str(SHARED / "vectors" / "mli11")
    outs = []
    for jobs in ("1", "2"):
        assert vectors.main([folder, "-k", "*fully*", "-v", "--jobs", jobs]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and outs[0].count("PASS ") > 10


@needs_shared
def test_har_accuracy_same_predictions():
    model = har.load_har(None, 16)
    one = har.accuracy(model, "custom", jobs=1)
    two = har.accuracy(model, "custom", jobs=2)
    assert one[:2] == two[:2]
    np.testing.assert_array_equal(one[2], two[2])


# ---- worker processes (process_map): what the commands' --jobs runs on ----

def _square_slow_first(i):
    time.sleep(0.02 if i % 3 == 0 else 0)
    return i * i


def _pid_and_mode(_):
    return os.getpid(), mli.get_rounding(), mli.dispatch.isa()


def _fail_at_3(i):
    if i == 3:
        raise ValueError("item 3 is malformed: want [2, 3], got [3]")
    return i


@pytest.fixture
def processes(monkeypatch):
    """process_map starts its workers whatever the size of the work."""
    monkeypatch.setenv("MLI_JOBS_PROCESSES", "1")


def test_process_map_keeps_the_order_whatever_finishes_first(processes):
    for jobs in (2, 3):
        assert list(process_map(_square_slow_first, range(20), jobs)) == [i * i for i in range(20)]


def test_process_map_runs_in_workers_in_the_callers_rounding_and_isa(processes):
    with mli.rounding("up"), mli.use_isa("scalar"):
        got = list(process_map(_pid_and_mode, range(8), 2))
    assert {mode for _, mode, _ in got} == {"up"}
    assert {isa for _, _, isa in got} == {"scalar"}
    assert os.getpid() not in {pid for pid, _, _ in got}


def test_process_map_raises_a_workers_error_in_turn_as_the_same_error(processes):
    got = []
    with pytest.raises(ValueError) as e:
        for r in process_map(_fail_at_3, range(40), 2):
            got.append(r)
    assert got == [0, 1, 2]
    assert str(e.value) == "item 3 is malformed: want [2, 3], got [3]"
    with pytest.raises(ValueError) as one:
        list(process_map(_fail_at_3, range(40), 1))
    assert str(one.value) == str(e.value)


def test_small_work_stays_in_this_process(monkeypatch):
    monkeypatch.delenv("MLI_JOBS_PROCESSES", raising=False)
    assert not use_processes(2, 10, MIN_PROCESS_SECONDS / 2)
    assert not use_processes(1, 10, 100.0)
    assert not use_processes(4, 1, 100.0)          # one chunk: nothing to share out
    assert use_processes(2, 10, MIN_PROCESS_SECONDS)
    assert {pid for pid, _, _ in process_map(_pid_and_mode, range(6), 2, seconds=0.01)} == {os.getpid()}
    assert os.getpid() not in {pid for pid, _, _ in process_map(_pid_and_mode, range(6), 2, seconds=10.0)}
    monkeypatch.setenv("MLI_JOBS_PROCESSES", "0")
    assert not use_processes(2, 10, 100.0)


def test_chunked_covers_the_items_in_order():
    for n in (0, 1, 5, 63, 1000):
        for jobs in (1, 2, 7):
            parts = chunked(list(range(n)), jobs)
            assert [i for p in parts for i in p] == list(range(n))
            assert all(0 < len(p) <= 32 for p in parts)


def _mli(args, **env):
    import subprocess
    import sys

    from conftest import child_env

    import tempfile

    # from an empty folder: the command imports the mli under test (child_env), never a
    # source tree in the current folder (CI's clean clone has no extension built there);
    # the shared folder named (an installed mli does not sit beside it)
    with tempfile.TemporaryDirectory() as cwd:
        p = subprocess.run([sys.executable, "-m", "mli", *args], capture_output=True, timeout=300,
                           env=child_env(**{"MLI_SHARED": str(SHARED), **env}), cwd=cwd)
    return p.returncode, p.stdout, p.stderr


@needs_shared
def test_vectors_cli_processes_print_the_same_bytes_with_a_bad_case(tmp_path):
    """Through worker processes: the same stdout, byte for byte, and the same
    exit code, a malformed case reported on its line as with one job."""
    import shutil

    src = sorted((SHARED / "vectors" / "mli11").glob("*.npz"))[:150]
    for f in src:
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(SHARED / "vectors" / "mli11" / "index.json", tmp_path / "index.json")
    (tmp_path / src[70].name).write_bytes(b"not a zip file")
    one = _mli(["vectors", str(tmp_path), "-v", "--jobs", "1"])
    two = _mli(["vectors", str(tmp_path), "-v", "--jobs", "2"], MLI_JOBS_PROCESSES="1")
    assert one[0] == 1 and b"FAIL " + src[70].stem.encode() + b": cannot read case" in one[1]
    assert one[:2] == two[:2] and two[2] == b""


@needs_shared
def test_har_accuracy_cli_processes_print_the_same_bytes():
    one = _mli(["har", "--accuracy", "--jobs", "1"])
    two = _mli(["har", "--accuracy", "--jobs", "2"], MLI_JOBS_PROCESSES="1")
    assert one[0] == 0 and b"Accuracy: " in one[1]
    assert one[:2] == two[:2]


def _lstm_data_set(tmp_path, V=96):
    rng = np.random.default_rng(1)
    T, N, M = 3, 3, 4
    np.save(tmp_path / "x.npy", rng.integers(-3000, 3000, (V, T, N)).astype(np.int16))
    np.save(tmp_path / "w.npy", rng.integers(-300, 300, (4, M, N + M)).astype(np.int16))
    np.save(tmp_path / "b.npy", rng.integers(-300, 300, (4, M)).astype(np.int16))
    fw = np.zeros((V, T, M), np.int16)
    np.save(tmp_path / "fw.npy", fw)
    return ["crosscheck", "--kernel", "lstm_cell_fx16", "--in", str(tmp_path / "x.npy"), "--in-frac", "12",
            "--weights", str(tmp_path / "w.npy"), "--weights-frac", "12", "--bias", str(tmp_path / "b.npy"),
            "--bias-frac", "11", "--prev-out-frac", "15", "--cell-frac", "12", "--firmware",
            str(tmp_path / "fw.npy"), "--vectors"]


@pytest.mark.parametrize("start", ["fork", "forkserver"])     # forked: the parent's case; else prepared again
def test_crosscheck_data_set_processes_print_the_same_bytes(tmp_path, start):
    argv = _lstm_data_set(tmp_path)
    one = _mli(argv + ["--jobs", "1"])
    two = _mli(argv + ["--jobs", "2"], MLI_JOBS_PROCESSES="1", MLI_JOBS_START=start)
    assert one[0] == 1 and one[1].count(b"\n") > 90      # zero firmware outputs: the vectors differ
    assert one[:2] == two[:2]


def test_crosscheck_data_set_error_reported_the_same(tmp_path):
    argv = _lstm_data_set(tmp_path)
    np.save(tmp_path / "fw.npy", np.zeros((96, 3, 5), np.int16))     # firmware of the wrong shape
    one = _mli(argv + ["--jobs", "1"])
    two = _mli(argv + ["--jobs", "2"], MLI_JOBS_PROCESSES="1")      # raised in a worker, at vector 0
    assert one[0] == 2 and b"--firmware: shape (3, 5)" in one[2]
    assert one == two


@needs_shared
def test_ctrl_c_ends_every_worker_within_a_second(tmp_path):
    """SIGINT to the process group (a terminal's Ctrl-C) in the middle of a
    --jobs 2 run on worker processes: the command exits within two seconds
    (130, 'interrupted') and leaves no worker behind."""
    import signal
    import subprocess
    import sys

    from conftest import child_env

    p = subprocess.Popen([sys.executable, "-m", "mli", "vectors", str(SHARED / "vectors" / "mli20"), "-v",
                          "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=child_env(MLI_JOBS_PROCESSES="1"), start_new_session=True, cwd=tmp_path)
    try:
        for _ in range(5):      # a few lines: the workers are running
            assert p.stdout.readline().startswith(b"PASS ")
        kids = _children(p.pid)
        assert len(kids) >= 2, kids
        t0 = time.monotonic()
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert b"interrupted" in err and b"Traceback" not in err
    assert took < 2.0, took
    end = time.monotonic() + 1.0
    while any(_alive(k) for k in kids) and time.monotonic() < end:
        time.sleep(0.02)
    assert not [k for k in kids if _alive(k)]


def _children(pid):
    kids = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


def _alive(pid):
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
