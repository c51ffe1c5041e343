"""The DSP rounding mode of every rounding read-out and shift.

MLI 1.1 is built with ``-Xdsp_ctrl=...,convergent`` (round half to even);
firmware built with ``up`` rounds halves up.  Only exact ties differ.

:func:`set_rounding` sets the process default.  ``with rounding(mode):``
overrides it for the calling thread only, for the block: other threads keep
their own mode and are never blocked.  Every kernel call takes the mode of
its thread once, when it starts, and uses it to its end.  A child process
made by ``fork`` starts with the default and the forking thread's override."""
import contextlib

from . import _core

_MODES = {"convergent": 0, "up": 1}


def _mode(mode):
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"rounding: expected 'convergent' or 'up', got {mode!r}")
    return _MODES[mode]


def set_rounding(mode):
    """Set the process-wide default: ``"convergent"`` (MLI 1.1's build) or ``"up"``.
    A thread inside a ``with rounding(...)`` block keeps that block's mode."""
    _core.set_rounding(_mode(mode))


def get_rounding():
    """The mode a kernel called now on this thread uses."""
    return "up" if _core.get_rounding() else "convergent"


@contextlib.contextmanager
def rounding(mode):
    """Run a block in rounding `mode` on this thread, then restore the
    thread's previous setting.  Blocks nest; other threads are unaffected."""
    new = _mode(mode)
    old = _core.get_thread_rounding()
    _core.set_thread_rounding(new)
    try:
        yield
    finally:
        _core.set_thread_rounding(old)
