"""The DSP rounding mode of every rounding read-out and shift (process-wide).

MLI 1.1 is built with ``-Xdsp_ctrl=...,convergent`` (round half to even);
firmware built with ``up`` rounds halves up.  Only exact ties differ."""
import contextlib
import threading

from . import _core

_MODES = {"convergent": 0, "up": 1}
_lock = threading.RLock()


def set_rounding(mode):
    """Set the rounding mode: ``"convergent"`` (default) or ``"up"``."""
    if mode not in _MODES:
        raise ValueError(f"rounding: expected 'convergent' or 'up', got {mode!r}")
    _core.set_rounding(_MODES[mode])


def get_rounding():
    """The current rounding mode name."""
    return "up" if _core.get_rounding() else "convergent"


@contextlib.contextmanager
def rounding(mode):
    """Context manager: run a block in rounding `mode`, then restore the
    previous mode.  The mode is process-wide: do not mix modes in threads."""
    with _lock:
        old = get_rounding()
        set_rounding(mode)
        try:
            yield
        finally:
            set_rounding(old)
