"""Ctrl-C during a data-set run on threads: the runs of vectors handed to the
workers (up to 64 vectors each, as batched rows) must not all run to their end
after the run is left, or the process waits for up to 64 vectors per worker
before it can exit (a second Ctrl-C was the only way out)."""
import threading
import time

import numpy as np
import pytest

from mli.tools import jobs
from mli.tools.crosscheck import cli, run


def _workers_done(timeout):
    end = time.monotonic() + timeout
    for t in threading.enumerate():
        if t.name.startswith("mli-job"):
            t.join(max(0.0, end - time.monotonic()))
    return not any(t.name.startswith("mli-job") and t.is_alive() for t in threading.enumerate())


def test_a_left_run_stops_its_running_items():
    """An item that checks jobs.check_abandoned stops there once the run is left."""
    steps, ended = [], []

    def item(k):
        if k == 0:
            return 0
        try:
            for i in range(3000):
                jobs.check_abandoned()
                steps.append(i)
                time.sleep(0.001)
        except jobs.Abandoned:
            ended.append("abandoned")
            raise
        return 1

    g = jobs.ordered_map(item, [0, 1], 2)
    assert next(g) == 0
    end = time.monotonic() + 10
    while not steps and time.monotonic() < end:     # item 1 running
        time.sleep(0.001)
    g.close()                       # as Ctrl-C in the consumer
    assert _workers_done(10)
    assert ended == ["abandoned"] and len(steps) < 3000
    jobs.check_abandoned()          # nothing left over in this thread
    assert list(jobs.ordered_map(lambda k: k * 2, range(5), 2)) == [0, 2, 4, 6, 8]


def test_crosscheck_data_set_stops_after_ctrl_c(tmp_path, capsys, monkeypatch):
    """--jobs 2 over 2 runs of 64 vectors, Ctrl-C when the first line is printed:
    the other worker's run stops at its next vector instead of checking all 64."""
    rng = np.random.default_rng(0)
    V, T, N, M = 128, 3, 3, 4
    np.save(tmp_path / "x.npy", rng.integers(-3000, 3000, (V, T, N)).astype(np.int16))
    np.save(tmp_path / "w.npy", rng.integers(-300, 300, (4, M, N + M)).astype(np.int16))
    np.save(tmp_path / "b.npy", rng.integers(-300, 300, (4, M)).astype(np.int16))
    np.save(tmp_path / "fw.npy", np.zeros((V, T, M), np.int16))
    compared = []
    compare = run._compare_vector

    def slow_second_run(prep, data, outs, alt_outs, mode, alt_mode, label):
        if int(label) >= 64:        # the second run: slow, so it is still running at the Ctrl-C
            time.sleep(0.03)
        compared.append(int(label))
        return compare(prep, data, outs, alt_outs, mode, alt_mode, label)

    def ctrl_c(*a, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(run, "_compare_vector", slow_second_run)
    monkeypatch.setattr(cli, "_print_line", ctrl_c)
    argv = ["--kernel", "lstm_cell_fx16", "--in", tmp_path / "x.npy", "--in-frac", 12, "--weights",
            tmp_path / "w.npy", "--weights-frac", 12, "--bias", tmp_path / "b.npy", "--bias-frac", 11,
            "--prev-out-frac", 15, "--cell-frac", 12, "--firmware", tmp_path / "fw.npy", "--vectors",
            "--no-alt-rounding", "--jobs", 2]
    with pytest.raises(KeyboardInterrupt):
        cli.main([str(a) for a in argv])
    capsys.readouterr()
    assert _workers_done(10)
    second = [v for v in compared if v >= 64]
    assert len(second) < 64, "the second run checked every vector after the Ctrl-C"
