"""Shared machinery of the fuzz targets (see run_fuzz.py).

Every target draws a *spec* (plain data: tuples, dicts, ints, bytes) with
hypothesis and hands it to an executor that builds the objects and makes the
call.  The spec's repr is the reproduction: ``run_fuzz.py --target T
--replay "<spec>"`` runs one spec again.

Outcome rules (issue 5): the call succeeds, or raises a ValueError,
TypeError, NotImplementedError or OSError subclass with a non-empty message.
Anything else is a finding, and so is caller memory changed (inputs, or the
guard bytes around every buffer the fuzzer hands out), or a view outside its
buffer.
"""
import os
import signal
import sys
import traceback

import numpy as np

ACCEPTED = (ValueError, TypeError, NotImplementedError, OSError)
# guard bytes on each side of every buffer handed out; under AddressSanitizer
# set MLI_FUZZ_GUARD=0 so every buffer is its own allocation and ASan's red
# zones (not ours) catch the first byte outside it, reads included
GUARD = int(os.environ.get("MLI_FUZZ_GUARD", "64"))
GUARD_BYTE = 0xA5


class Finding(AssertionError):
    """An outcome the rules do not allow (raised inside the hypothesis test)."""


class Timeout(BaseException):
    """One example ran longer than the per-example time limit."""


def _on_alarm(signum, frame):
    raise Timeout()


class Alarm:
    """Per-example wall-clock limit (interrupts Python code, not a C loop)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        if self.seconds:
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.seconds:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return False


def where(exc):
    """file:line of the innermost frame of an exception's traceback."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return "?"
    fr = tb[-1]
    return f"{os.path.relpath(fr.filename, os.getcwd()) if fr.filename.startswith(os.getcwd()) else fr.filename}:{fr.lineno}"


def check_exception(exc, extra_ok=()):
    """None when `exc` is an acceptable error, else a one-line reason."""
    if isinstance(exc, ACCEPTED + tuple(extra_ok)):
        msg = str(exc).strip()
        if not msg or msg in ("''", '""'):
            return f"{type(exc).__name__} with an empty message at {where(exc)}"
        return None
    return f"unexpected {type(exc).__module__}.{type(exc).__name__}: {str(exc)[:300]} at {where(exc)}"


# ------------------------------------------------------------ guarded memory
class Guarded:
    """A buffer of `n` bytes inside a larger uint8 array whose GUARD bytes on
    both sides are GUARD_BYTE: `.inner` is what the code under test gets."""

    def __init__(self, n, fill=None, readonly=False):
        self.n = n
        self.big = np.full(n + 2 * GUARD, GUARD_BYTE, np.uint8)
        if fill is not None:
            self.big[GUARD:GUARD + n] = np.frombuffer(bytes(fill), np.uint8)[:n]
        self.inner = self.big[GUARD:GUARD + n]
        if readonly:
            self.inner.flags.writeable = False

    def guards_intact(self):
        if not GUARD:
            return True
        return bool(np.all(self.big[:GUARD] == GUARD_BYTE) and np.all(self.big[GUARD + self.n:] == GUARD_BYTE))

    def bounds(self):
        lo = self.big.__array_interface__["data"][0] + GUARD
        return lo, lo + self.n


def guarded_array(dtype, shape, values=None, readonly=False, order="C"):
    """An array of `dtype`/`shape` living in a Guarded buffer."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape)) if len(shape) else 1
    g = Guarded(count * dt.itemsize)
    a = g.inner.view(dt)[:count] if dt.itemsize else g.inner
    if values is not None:
        a[...] = np.asarray(values).reshape(-1)[:count].astype(dt, copy=False) if count else a
    a = a.reshape(shape)
    if order == "F" and a.ndim > 1:
        a = a.T
    if readonly:
        a.flags.writeable = False
    return g, a


def within(arr, lo, hi):
    """True when every byte numpy may touch through `arr` is in [lo, hi)."""
    if arr.size == 0 or arr.base is None:  # empty, or a fresh array (not a view)
        return True
    try:
        blo, bhi = np.byte_bounds(arr)
    except AttributeError:  # numpy 2.x moved it
        blo, bhi = np.lib.array_utils.byte_bounds(arr)
    return lo <= blo and bhi <= hi


# ------------------------------------------------------------ reporting
class Stats:
    def __init__(self, target):
        self.target = target
        self.examples = 0
        self.ok = 0
        self.errors = 0
        self.timeouts = 0
        self.error_types = {}
        self.findings = {}     # key -> (reason, spec repr)
        self.timeout_specs = []

    def as_dict(self):
        return {"target": self.target, "examples": self.examples, "ok": self.ok, "errors": self.errors,
                "timeouts": self.timeouts, "error_types": dict(sorted(self.error_types.items())),
                "findings": [{"reason": r, "spec": s} for r, s in self.findings.values()],
                "timeout_specs": self.timeout_specs[:5]}


class LastSpec:
    """Writes the spec about to run to a file first, so a crash that kills
    the process still leaves its reproduction behind."""

    def __init__(self, path):
        self.path = path
        self.f = open(path, "w") if path else None
        self.count = 0

    def write(self, text):
        """Record the spec about to run: line 1 is '# example N', line 2 the spec."""
        self.count += 1
        if self.f is None:
            return
        self.f.seek(0)
        self.f.truncate()
        self.f.write(f"# example {self.count}\n{text}\n")
        self.f.flush()


def read_last_spec(path):
    """(example number, spec text) from a --last-spec file."""
    with open(path) as f:
        head, _, spec = f.read().partition("\n")
    n = int(head.split()[-1]) if head.startswith("# example") else 0
    return n, spec.strip()


def short(obj, limit=4000):
    r = repr(obj)
    return r if len(r) <= limit else r[:limit] + "...<truncated>"


def eprint(*a):
    print(*a, file=sys.stderr, flush=True)
