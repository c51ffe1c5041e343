"""What makes ``--jobs N`` on worker processes pay (mli.tools.jobs): a slow
chunk does not hold the other workers back, results come back pickled by
the worker and are unpickled with the collector paused, the workers keep
what they inherited out of their collections, and a run too small for
workers decides so without starting or importing anything.  No timings are
asserted: only what runs where, and the results."""
import gc
import os
import pathlib
import subprocess
import sys
import time

import pytest

from mli.tools import jobs
from mli.tools.jobs import chunked, process_map


@pytest.fixture
def processes(monkeypatch):
    """process_map starts its workers whatever the size of the work."""
    monkeypatch.setenv("MLI_JOBS_PROCESSES", "1")


def _wait_for_a_later_chunk(args):
    """Chunk 0 waits (20 s at most) for the file chunk `i` writes: it appears
    only if chunks far behind chunk 0 run while chunk 0 still runs."""
    i, folder, signal_at = args
    flag = pathlib.Path(folder) / "later-chunk-ran"
    if i == 0:
        end = time.monotonic() + 20
        while not flag.exists() and time.monotonic() < end:
            time.sleep(0.005)
        return (i, flag.exists())
    if i == signal_at:
        flag.write_text("x")
    return (i, True)


def test_a_slow_chunk_does_not_hold_the_other_worker_back(processes, tmp_path):
    # 2 jobs: chunk 9 is beyond the 2 * jobs chunks once in flight; it must run
    # (on the other worker) while chunk 0 still runs, and the order stays
    items = [(i, str(tmp_path), 9) for i in range(12)]
    got = list(process_map(_wait_for_a_later_chunk, items, 2))
    assert got == [(i, True) for i in range(12)]


def _objects(chunk):
    # a few thousand small objects, as a chunk of crosscheck reports brings back
    return [{"k": [i, float(i), (i, str(i))]} for i in chunk]


def test_results_come_back_equal_and_the_collector_is_left_as_found(processes):
    items = [range(i * 500, (i + 1) * 500) for i in range(6)]
    want = [_objects(c) for c in items]
    assert gc.isenabled()
    assert list(process_map(_objects, items, 2)) == want
    assert gc.isenabled()
    gc.disable()
    try:
        assert list(process_map(_objects, items, 2)) == want
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_loads_pauses_the_collector_and_restores_it(monkeypatch):
    import pickle

    seen = []
    real = pickle.loads

    def spy(data):
        seen.append(gc.isenabled())
        return real(data)
    monkeypatch.setattr(jobs.pickle, "loads", spy)
    assert jobs._loads(pickle.dumps([1, 2])) == [1, 2]
    assert seen == [False] and gc.isenabled()


def _freeze_count(_):
    return gc.get_freeze_count()


def test_workers_keep_what_they_inherited_out_of_their_collections(processes):
    assert all(n > 0 for n in process_map(_freeze_count, range(4), 2))
    assert gc.get_freeze_count() == 0       # the caller's collector is not touched


def test_chunked_gives_the_workers_small_chunks():
    # OpenVINO cases of 3 to 75 ms: 107 cases in 32 chunks, not 8 of 13
    parts = chunked(list(range(107)), 2)
    assert len(parts) == 32 and [i for p in parts for i in p] == list(range(107))
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1
    assert len(chunked(list(range(1635)), 2)) == 52     # 32 cases at most per chunk
    assert len(chunked(list(range(5)), 2)) == 5


def test_the_fall_back_starts_and_imports_nothing():
    """A run too small for workers: decided from the caller's estimate alone,
    before anything of multiprocessing is imported or started."""
    code = (
        "import sys, os\n"
        "os.environ.pop('MLI_JOBS_PROCESSES', None)\n"
        "from mli.tools.jobs import process_map\n"
        "before = set(sys.modules)\n"
        "got = list(process_map(abs, [-1, -2, -3], 2, seconds=0.01))\n"
        "assert got == [1, 2, 3], got\n"
        "new = sorted(m for m in set(sys.modules) - before\n"
        "             if m.startswith(('multiprocessing', 'concurrent.futures.process')))\n"
        "print(new)\n")
    from conftest import child_env

    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=child_env(), cwd=os.path.dirname(__file__))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MLI_SHARED", ROOT.parent / "shared"))


@pytest.mark.skipif(not (SHARED / "vectors" / "ov_ti_loop").is_dir(), reason="../shared is not beside the project")
def test_openvino_cases_through_workers_same_results_in_the_same_order(processes):
    # the small chunks of an OpenVINO folder (36 cases: 32 chunks with 2 jobs) through two workers
    from mli.tools import vectors

    folder = str(SHARED / "vectors" / "ov_ti_loop")
    one = vectors.run_dir(folder, jobs=1)
    two = vectors.run_dir(folder, jobs=2)
    assert len(one) == 36 and one == two
