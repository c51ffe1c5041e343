"""``--jobs N`` of the data-set commands (``mli vectors``, ``mli har
--accuracy``, ``mli crosscheck`` data sets): independent items on N
worker processes (:func:`process_map`), or on threads (:func:`ordered_map`).

The commands use processes: their items spend most of their time in Python
(reading cases, building tensors, comparing), so threads contend for the
GIL and ``--jobs 2`` on threads ran at 0.6x the speed of one job.
:func:`process_map` ships the work in picklable chunks to a pool of
processes (forked when the caller runs one thread, else started by a
``forkserver``: see :func:`_start_method`), each started once with the parent's rounding mode and ISA path, and yields
the results in the items' order, each as soon as its chunk and every chunk
before it are done, so a run prints exactly what ``--jobs 1`` prints, line
for line, and a run stopped with Ctrl-C keeps the lines already printed.
A chunk that takes long does not hold the other workers back (the chunks
after it run meanwhile and wait their turn), the chunks are small
(:func:`chunked`), and each result comes back pickled by its worker and is
unpickled here with the garbage collector paused.
Ctrl-C (or any early exit) terminates the workers at once.  When the work
is too small to pay for starting the workers (:func:`use_processes`), it
runs in the calling process, one chunk after the other.

:func:`ordered_map` (threads) stays for library callers whose items are
closures or share unpicklable state in memory, and for items that spend
their time in C with the GIL released.  Each thread worker runs in the
rounding mode of the thread that started the run (the mode is a per-thread
setting).  The HAR and crosscheck data sets hand out runs of vectors
(:func:`row_chunks`), each run's recurrent layers as batched rows
(:mod:`mli.rows`)."""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import gc
import os
import pickle
import signal
import threading
from typing import Callable, Iterable, Iterator, TypeVar

from ..rounding import get_rounding, rounding

__all__ = ["MAX_JOBS", "MIN_PROCESS_SECONDS", "ROWS_PER_CALL", "Abandoned", "check_abandoned", "chunked",
           "default_jobs", "jobs_arg", "ordered_map", "process_map", "row_chunks", "use_processes"]

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


#: the single-core work (in seconds) below which a run stays in one process:
#: starting a worker (a forkserver child importing numpy and mli) costs about
#: 0.15 s of one core, so with two workers the pool wins from about 0.5 s of
#: work; the margin keeps ``--jobs N`` from ever being slower than ``--jobs 1``
MIN_PROCESS_SECONDS = 1.0


def use_processes(jobs: int, n_chunks: int, seconds: float) -> bool:
    """Whether :func:`process_map` starts workers: `jobs` > 1, at least two
    chunks, and an estimated `seconds` of single-core work (the caller's
    estimate: item count x a measured cost per item) of at least
    :data:`MIN_PROCESS_SECONDS`.  ``MLI_JOBS_PROCESSES=1`` (or ``0``)
    forces the pool (or the one-process run) whatever the estimate: for
    tests and measurements."""
    force = os.environ.get("MLI_JOBS_PROCESSES", "").strip()
    if jobs <= 1 or n_chunks < 2:
        return False
    if force in ("0", "1"):
        return force == "1"
    return seconds >= MIN_PROCESS_SECONDS


def chunked(items: list, jobs: int, most: int = 32) -> list[list]:
    """`items` in consecutive chunks for :func:`process_map`: at least
    ``16 * jobs`` chunks when there are items enough (so that the workers
    stay busy to the end when the items' costs differ, e.g. OpenVINO cases of
    3 to 75 ms, and the output streams), at most `most` items each."""
    n = len(items)
    if n == 0:
        return []
    k = min(n, max(16 * int(jobs), -(-n // most)))
    bounds = [n * i // k for i in range(k + 1)]
    return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _worker_init(cwd: str, isa: str, init, init_args) -> None:
    # Ctrl-C goes to the whole process group: the parent ends the workers,
    # a worker must not print a KeyboardInterrupt traceback of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # what the worker inherited (a forked copy of the caller's modules and data)
    # stays out of its garbage collections: they would touch (and so copy) every
    # inherited page and walk objects this process never frees
    gc.freeze()
    try:
        os.chdir(cwd)
    except OSError:
        pass
    from .. import dispatch

    dispatch.set_isa(isa)
    if init is not None:
        init(*init_args)


def _worker_call(fn, mode, chunk):
    # pickled here, unpickled by the caller with the collector paused (_loads)
    with rounding(mode):
        return pickle.dumps(fn(chunk), pickle.HIGHEST_PROTOCOL)


def _loads(data: bytes):
    """A chunk's result, unpickled with the garbage collector paused: the
    thousands of small objects a chunk brings back (reports of 64 vectors)
    would otherwise set off collections that walk every object the caller
    holds (its data set, the results so far): 0.41 s instead of 0.09 s for
    the 4,096 reports of a crosscheck data set."""
    if not gc.isenabled():
        return pickle.loads(data)
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        gc.enable()


def process_map(fn: Callable[[T], R], chunks: Iterable[T], jobs: int = 1, *, seconds: float = float("inf"),
                init: Callable | None = None, init_args: tuple = ()) -> Iterator[R]:
    """``fn(chunk)`` for each chunk, in order, on up to `jobs` worker processes.

    `fn`, `init` and the chunks must be picklable (module-level functions,
    :func:`functools.partial` of them, plain data).  ``init(*init_args)`` runs
    once in each worker (load what the items share there, not per item).
    Each chunk runs in the caller's rounding mode, and the workers on the
    caller's ISA path.  At most ``2 * jobs`` chunks are running or queued
    (a chunk done while one before it still runs does not hold a worker
    back; at most ``8 * jobs`` results wait their turn).  Each result comes
    back pickled by the worker and is unpickled here with the garbage
    collector paused (:func:`_loads`).  An
    exception of a chunk is raised when its turn comes, as the same type
    with the same message.  Leaving early (Ctrl-C, a break, an error)
    cancels the chunks not yet started and terminates the workers.

    When :func:`use_processes` says the work (`seconds`, the caller's
    estimate of its single-core time) is too small, the chunks run here,
    one after the other, with ``init(*init_args)`` run first."""
    chunks = list(chunks)
    mode = get_rounding()
    if not use_processes(jobs, len(chunks), seconds):
        if init is not None:
            init(*init_args)
        for chunk in chunks:
            yield fn(chunk)
        return
    import multiprocessing

    from .. import dispatch

    ctx = multiprocessing.get_context(_start_method())
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=min(jobs, len(chunks)), mp_context=ctx, initializer=_worker_init,
        initargs=(os.getcwd(), dispatch.isa(), init, init_args))
    pending: collections.deque[concurrent.futures.Future[bytes]] = collections.deque()
    source = iter(chunks)
    finished = False

    def top_up() -> None:
        # up to 2 * jobs chunks running or queued; the finished ones waiting for
        # a slow chunk before them do not count (the workers keep going), up
        # to 8 * jobs results held
        busy = sum(not f.done() for f in pending)
        while busy < 2 * jobs and len(pending) < 8 * jobs:
            chunk = next(source, _END)
            if chunk is _END:
                return
            pending.append(pool.submit(_worker_call, fn, mode, chunk))
            busy += 1

    try:
        top_up()
        while pending:
            head = pending[0]
            if not head.done():
                concurrent.futures.wait([f for f in pending if not f.done()],
                                        return_when=concurrent.futures.FIRST_COMPLETED)
                top_up()
                continue
            pending.popleft()
            result = _loads(head.result())
            top_up()
            yield result
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            _terminate(pool, pending)


_END = object()


def _start_method() -> str:
    """``fork`` when this process runs one thread (the workers start at once,
    with the modules and data already loaded, shared copy-on-write); else
    ``forkserver`` (forking a process with threads can copy a lock another
    thread holds), its server preloading :mod:`mli` so that each worker
    does not import it again.  ``MLI_JOBS_START`` names another method."""
    import multiprocessing

    forced = os.environ.get("MLI_JOBS_START", "").strip()
    methods = multiprocessing.get_all_start_methods()
    if forced in methods:
        return forced
    if threading.active_count() == 1 and "fork" in methods:
        return "fork"
    if "forkserver" in methods:
        multiprocessing.get_context("forkserver").set_forkserver_preload(["mli", "mli.tools.vectors"])
        return "forkserver"
    return "spawn"


def _terminate(pool, pending) -> None:
    """End the workers of a left run now: the chunks they run are not waited for."""
    for f in pending:
        f.cancel()
    procs = list((getattr(pool, "_processes", None) or {}).values())  # no public way to reach them
    for p in procs:
        if p.is_alive():
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join(1.0)
