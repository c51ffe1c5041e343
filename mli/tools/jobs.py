"""``--jobs N`` of the data-set commands (``mli vectors``, ``mli har
--accuracy``, ``mli crosscheck`` data sets): independent items on N threads.

Threads, not processes: the kernels release the GIL in C, the items share
the loaded weights, and nothing needs pickling.  Results come back in the
items' order, each as soon as it and every item before it are done, so a
run prints exactly what ``--jobs 1`` prints, line for line, and a run
stopped with Ctrl-C keeps the lines already printed.  Each worker runs in
the rounding mode of the thread that started the run (the mode is a
per-thread setting).  The HAR and crosscheck data sets hand out runs of
vectors (:func:`row_chunks`), each run's recurrent layers as batched rows
(:mod:`mli.rows`)."""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import threading
from typing import Callable, Iterable, Iterator, TypeVar

from ..rounding import get_rounding, rounding

__all__ = ["MAX_JOBS", "ROWS_PER_CALL", "Abandoned", "check_abandoned", "default_jobs", "jobs_arg", "ordered_map",
           "row_chunks"]

T = TypeVar("T")
R = TypeVar("R")

#: more threads than this buy nothing on any machine we know and only cost memory
MAX_JOBS = 256


def default_jobs() -> int:
    """The cores this process may run on (``--jobs 0`` means this)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def jobs_arg(text: str) -> int:
    """argparse type of ``--jobs``: 1..MAX_JOBS, or 0 for every core."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of threads, got {text!r}") from None
    if n < 0 or n > MAX_JOBS:
        raise argparse.ArgumentTypeError(f"expected 0 (every core) to {MAX_JOBS}, got {n}")
    return n if n else default_jobs()


class Abandoned(BaseException):
    """Raised by :func:`check_abandoned` in an item whose run was left: a
    BaseException, so that no ``except Exception`` of the item takes it for
    the item's own failure."""


_worker = threading.local()     # .stop: the Event of the ordered_map run this thread's item belongs to


def check_abandoned() -> None:
    """In a long item of :func:`ordered_map` (a run of vectors), between its
    parts: raise :class:`Abandoned` when the run has been left (Ctrl-C, an
    error, a break), so that the item stops there instead of finishing."""
    stop = getattr(_worker, "stop", None)
    if stop is not None and stop.is_set():
        raise Abandoned()


def ordered_map(fn: Callable[[T], R], items: Iterable[T], jobs: int = 1) -> Iterator[R]:
    """``fn(item)`` for each item, in order, with up to `jobs` items running
    at once.  At most ``2 * jobs`` items are in flight, so a long data set
    is not read ahead without bound.  An exception of an item is raised when
    its turn comes (the items after it are not started).  Leaving early
    (Ctrl-C, a break, an error) cancels the items not yet started; those
    running finish their item (or stop at its next :func:`check_abandoned`),
    then stop."""
    if jobs <= 1:
        for item in items:
            yield fn(item)
        return
    mode = get_rounding()
    stop = threading.Event()

    def run(item: T) -> R:
        _worker.stop = stop
        try:
            check_abandoned()
            with rounding(mode):
                return fn(item)
        finally:
            _worker.stop = None

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mli-job")
    pending: collections.deque[concurrent.futures.Future[R]] = collections.deque()
    try:
        source = iter(items)
        for item in source:
            pending.append(pool.submit(run, item))
            if len(pending) >= 2 * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        stop.set()
        for f in pending:
            f.cancel()
        pool.shutdown(wait=False, cancel_futures=True)


#: rows per batched-rows call of a data set: beyond this a call gains little
#: and a long data set would be held in memory (and reported) in large pieces
ROWS_PER_CALL = 64


def row_chunks(n: int, jobs: int = 1, most: int = ROWS_PER_CALL) -> list[tuple[int, int]]:
    """[(start, stop)] splitting ``n`` rows into runs of at most `most` rows,
    at least `jobs` of them (when there are rows enough), sizes within one."""
    if n <= 0:
        return []
    k = min(n, max(int(jobs), -(-n // most)))
    bounds = [n * i // k for i in range(k + 1)]
    return list(zip(bounds[:-1], bounds[1:]))
