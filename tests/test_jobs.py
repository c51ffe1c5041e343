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
from mli.tools.jobs import MAX_JOBS, default_jobs, jobs_arg, ordered_map

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
