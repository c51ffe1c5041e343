"""The static memory plan of a :class:`~mli.deploy.program.Program`: every
input, output, activation, state and scratch tensor at an offset of one
arena, two tensors sharing bytes only when their lifetimes do not overlap.

A tensor lives from the step that first writes it to the last step that
reads it (inputs from before step 0, outputs and states to after the last
step, a scratch buffer during its one step).  Tensors are placed largest
first, each at the lowest aligned offset that no placed tensor of an
overlapping lifetime covers -- the greedy rule of the static planners of
TVM's and TFLite Micro's ahead-of-time flows, written anew here.
"""
from dataclasses import dataclass

__all__ = ["Slot", "plan_arena", "ALIGN"]

ALIGN = 4   # bytes: every tensor starts at a multiple, so int16 and int32 views stay aligned


@dataclass(frozen=True)
class Slot:
    """Where one tensor lives: its byte offset and size in the arena, and
    the first and last step of its lifetime (-1: before the first step;
    len(steps): after the last)."""

    offset: int
    nbytes: int
    first: int
    last: int

    def overlaps_in_time(self, other):
        return self.first <= other.last and other.first <= self.last

    @property
    def end(self):
        return self.offset + self.nbytes


def lifetimes(prog):
    """name -> (first, last) step of every tensor the arena holds (a view's
    reads and writes are its parent's)."""
    n = len(prog.steps)
    span = {}
    for t in prog.by_role("input", "state"):
        span[t.name] = [-1, n if t.role == "state" else -1]
    for k, s in enumerate(prog.steps):
        for name in map(prog.base, s.writes()):
            if name not in span:
                span[name] = [k, k]
        for name in map(prog.base, s.reads() + s.writes()):
            if name in span:    # not a const
                span[name][1] = max(span[name][1], k)
    for t in prog.by_role("output"):
        span[t.name][1] = n
    return {k: tuple(v) for k, v in span.items()}


def _aligned(x):
    return -(-x // ALIGN) * ALIGN


def plan_arena(prog):
    """(arena bytes, {name: :class:`Slot`}) for `prog`."""
    prog.check()
    span = lifetimes(prog)
    order = sorted(span, key=lambda name: (-prog.tensors[name].nbytes, span[name][0], name))
    placed = {}
    for name in order:
        if prog.tensors[name].role == "view":
            continue
        nbytes = prog.tensors[name].nbytes
        first, last = span[name]
        probe = Slot(0, nbytes, first, last)
        busy = sorted((s.offset, s.end) for s in placed.values() if s.overlaps_in_time(probe))
        offset = 0
        for lo, hi in busy:
            if offset + nbytes <= lo:
                break
            offset = max(offset, _aligned(hi))
        placed[name] = Slot(offset, nbytes, first, last)
    size = _aligned(max((s.end for s in placed.values()), default=0))
    for t in prog.by_role("view"):
        p = placed[t.parent]
        placed[t.name] = Slot(p.offset + t.byte_offset, t.nbytes, p.first, p.last)
    return size, placed
