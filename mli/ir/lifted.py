"""A TensorIterator body planned once and run over the whole sequence.

The body's steps fall in three kinds (decided once, from the port map):

* invariant: constants, invariant inputs and the steps that read only those;
* per-iteration but state-free ("sequence" steps): sliced inputs, iteration counters
  (a merged input whose back edge is ``Add(itself, integer Const)``), and the steps that
  read only those and invariants;
* recurrent: the other merged inputs, the steps that read them, and every step that
  holds state or that mli.fixed_point replaces (ReadValue/Assign, bodies, cells).

The sequence steps run once, on all iterations at once: their values are *stacks*,
arrays with the iteration as a new leading axis.  Element-wise ops and reshapes lift
exactly (the same operations on the same operands), a MatMul by an invariant matrix
becomes one product over all iterations (BLAS may round it differently from the
per-iteration products, by an ulp or so), a Gather of one index per iteration is one
Gather of them all; any other op runs once per iteration and its results are stacked.
Only the recurrent steps are then stepped, over list slots planned once, each reading
iteration k of the stacks it needs, through their compilation for the signature of what
they read (:mod:`mli.ir.fast`: the same operations without the per-iteration checks).

A Loop's iteration count comes from its condition's sequence steps; a condition that
reads the recurrence is stepped with it (the sequence steps computed over the Loop's
bound first), when no step holds state or was replaced.

Anything unexpected while lifting (an error, a warning, a stack of unexpected shape)
gives up the plan for that call: the driver then steps the body as before, so errors
and warnings come where they always did."""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..graph import limits
from ..graph.loop import Loop
from ..graph.ports import ConcatOutput
from ..graph.tensor_iterator import _Stacked
from .fast import FastSteps, compilable, signature
from .program import _F16, _F32, _NO_FOLD, _Program, _execute

_ELEMENTWISE = frozenset({
    "Add", "Subtract", "Multiply", "Maximum", "Minimum", "Less", "Greater", "LessEqual",
    "GreaterEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr", "LogicalXor",
    "LogicalNot", "Select", "Convert", "Sigmoid", "Tanh", "Exp", "ReLU", "Abs", "Negative",
    "Identity"})
_RESHAPES = frozenset({"Squeeze", "Unsqueeze", "Reshape"})


#: a Loop with a recurrent condition is planned when it runs at most this many iterations
#: (its sequence steps are computed for all of them before stepping)
_MAX_BOUND = 4096


class _Stack:
    """The values of one slot for every iteration: ``array[k]`` is iteration k's."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array


class _GiveUp(Exception):
    """The lifted run does not apply to this call (the driver steps the body)."""


def _counter_step(program: _Program, result_slot: int, param_slot: int):
    """The integer increment when ``result_slot`` is ``Add(param, Const)`` (either order)
    of one element, else None."""
    for _, ins, outs, _, layer in program.steps:
        if outs != [result_slot] or layer.type != "Add" or len(ins) != 2:
            continue
        other = [i for i in ins if i != param_slot]
        if len(other) != 1 or param_slot not in ins:
            return None
        c = program.template[other[0]]
        if c is None or c.dtype.kind not in "iu" or c.size != 1 \
                or abs(int(c.reshape(-1)[0])) > 1 << 20:
            return None
        return c
    return None


class LiftedPlan:
    """The whole-sequence plan of one TensorIterator's or Loop's body program (see the
    module)."""

    def __init__(self, program: _Program, ti):
        self.program = program
        self.ti = ti
        self.is_loop = isinstance(ti, Loop)
        ps = program.param_slots
        self.sliced = [(p, ps[p.internal]) for p in ti._sliced]
        self.invariant = [(p.external, ps[p.internal]) for p in ti._static
                          if p.internal not in {k for _, k in ti._edges}]
        self.counters: List[Tuple[int, int, np.ndarray]] = []  # (external, slot, increment)
        merged = []                                             # (external, slot, result slot)
        back = {k: j for j, k in ti._edges}
        for p in ti._static:
            if p.internal not in back:
                continue
            rs = program.result_slots[back[p.internal]]
            c = _counter_step(program, rs, ps[p.internal])
            if c is not None:
                self.counters.append((p.external, ps[p.internal], c))
            else:
                merged.append((p.external, ps[p.internal], rs))
        self.merged = merged
        known = {i for i, v in enumerate(program.template) if v is not None}
        known |= {s for _, s in self.invariant}
        seq: Set[int] = {s for _, s in self.sliced} | {s for _, s, _ in self.counters}
        ci = getattr(ti, "current_iteration", None)
        self.ci = None if ci is None else (ps[ci.internal], ci)
        if ci is not None:
            seq.add(ps[ci.internal])
        self.pre, self.lift, self.loop = [], [], []
        for step in program.steps:
            _, ins, outs, _, layer = step
            stateless = layer.type not in _NO_FOLD and layer.body is None
            if stateless and all(i in known for i in ins):
                self.pre.append(step)
                known.update(outs)
            elif stateless and all(i in known or i in seq for i in ins):
                self.lift.append(step)
                seq.update(outs)
            else:
                self.loop.append(step)
        self.seq_slots = seq
        self.loop_outs = {o for st in self.loop for o in st[2]}
        # the stacks the stepped part reads, and the results it makes
        loop_in = {i for st in self.loop for i in st[1]}
        loop_in |= {rs for _, _, rs in merged}
        loop_in |= set(program.result_slots)
        self.stack_reads = sorted(loop_in & seq)
        built = program.built
        self.useful = bool(self.lift) or not self.loop or compilable(self.loop, built)
        # the stepped part compiled per signature of what it reads (see mli.ir.fast)
        self.outside = sorted({i for st in self.loop for i in st[1]} - self.loop_outs)
        self.changing = ({s for _, s, _ in merged} | seq) & set(self.outside)
        self._fast: Dict[Tuple, FastSteps] = {}
        self.dynamic = False
        if self.is_loop:
            self.cond_slot = program.result_slots[ti.execution_condition]
            # a recurrent condition is stepped with the rest (then nothing may hold state:
            # giving up after some iterations must leave no trace; and no step may be
            # replaced, e.g. by one recording its values per iteration)
            self.dynamic = self.cond_slot in self.loop_outs and not any(
                st[4].type in _NO_FOLD or st[4].body is not None for st in self.loop) \
                and all(built.get(id(st[0])) is st[0] for st in program.steps)
            self.useful &= (self.cond_slot in known or self.cond_slot in seq or self.dynamic) \
                and not ti._ci_carried
            self.cond_steps = _cone(self.lift, self.cond_slot)
            # the condition's steps over a window are those over fewer iterations, cut,
            # unless one is a MatMul (one product over all iterations: BLAS may round a
            # longer one otherwise)
            self._window_exact = not any(st[4].type == "MatMul" for st in self.cond_steps)
            cone = {id(st) for st in self.cond_steps}
            self.lift_rest = [st for st in self.lift if id(st) not in cone]
        self._plan_whole_sequence()

    def _plan_whole_sequence(self) -> None:
        """What a whole-sequence run of the recurrence needs: its one cell (a step with
        ``run_sequence``), and the Selects on a sequence condition that may turn out to
        pick one branch in every iteration (then the branch is the value: same shape,
        same type, nothing computed)."""
        cells = [st for st in self.loop if hasattr(st[0], "run_sequence")]
        self.cell = cells[0] if len(cells) == 1 else None
        self.selects = []
        for _, ins, outs, _, layer in self.loop:
            if layer.type != "Select" or ins[0] not in self.seq_slots:
                continue
            out = layer.outputs[0]
            same = [i if p.dims == out.dims and None not in p.dims
                    and p.element_type == out.element_type else None
                    for i, p in zip(ins[1:], layer.inputs[1:])]
            self.selects.append((outs[0], ins[0], *same))

    # ------------------------------------------------------------------ running
    def run(self, arrays: Sequence[np.ndarray]):
        """The TensorIterator's outputs, or None to step the body instead."""
        ti = self.ti
        _, plans = ti._start(arrays)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                window = None
                if self.dynamic:
                    n = self._loop_bound(arrays, plans)
                elif self.is_loop:
                    n, window = self._loop_window(arrays, plans)
                else:
                    n = ti._count(plans)
                if n == 0:
                    return None
                vals = self._lifted_values(arrays, plans, n, self.lift) if window is None \
                    else self._from_window(window, n)
            if caught:
                return None
            whole = None if self.dynamic or self.cell is None \
                else self._quietly(self._whole_sequence, vals, arrays, n)
        except _GiveUp:
            return None
        except Exception:       # noqa: BLE001 -- stepping raises it where it belongs
            return None
        if whole is not None:
            scans, last = whole
        elif self.dynamic:
            stepped = self._step(vals, arrays, n, until=self.ti._trip(arrays[0]))
            if stepped is None:
                return None
            scans, last, n = stepped
        else:
            scans, last = self._step(vals, arrays, n)
        if self.is_loop and sum(v.array.nbytes if isinstance(v, _Stacked) else
                                sum(x.nbytes for x in v) for v in scans) \
                > limits.max_loop_output_bytes():
            return None     # stepping stops with the limit's error
        return ti._finish(arrays, n, scans, last)

    def _loop_count(self, arrays, plans) -> int:
        """The iterations a Loop runs, found by computing its condition over growing
        windows of iterations (only the steps the condition needs); 0 to step it: no
        iteration, or it would not stop within its trip count, its sliced inputs' chunks
        and the iteration limit (stepping then raises where it must)."""
        return self._loop_window(arrays, plans)[0]

    def _loop_window(self, arrays, plans):
        """(:meth:`_loop_count`, the slot values of the last window when the lifted
        values of its first iterations are those of a run of that many, else None)."""
        op = self.ti
        trip = op._trip(arrays[0])
        if not op._cond(arrays[1], "execution_condition input"):
            return 0, None
        bounds = [cnt for _, cnt, *_ in plans] + [limits.max_loop_iterations()]
        bound = min(bounds + [trip] if trip >= 0 else bounds)
        window = min(bound, 64)
        while window:
            vals = self._lifted_values(arrays, plans, window, self.cond_steps)
            c = vals[self.cond_slot]
            flags = c.array if type(c) is _Stack else np.broadcast_to(c, (window,) + np.shape(c))
            if flags.dtype != np.bool_ or flags[0].size != 1:
                return 0, None
            false = np.flatnonzero(~flags.reshape(window))
            if false.size:
                return int(false[0]) + 1, vals if self._window_exact else None
            if window == bound:
                return (bound if bound == trip else 0), vals if self._window_exact else None
            window = min(bound, window * 8)
        return 0, None

    def _from_window(self, vals, n) -> List[Any]:
        """The lifted values for ``n`` iterations from those of a longer window (its
        stacks' first ``n`` iterations: the same values, as no step of the condition's
        rounds otherwise on a longer stack), then the other sequence steps."""
        vals = [_Stack(v.array[:n]) if type(v) is _Stack else v for v in vals]
        for step in self.lift_rest:
            _lift_step(step, vals, n, self.program.built)
        return vals

    @staticmethod
    def _quietly(fn, *args):
        """``fn(*args)``, or None where it raises or warns (stepping then decides)."""
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = fn(*args)
        except Exception:       # noqa: BLE001 -- stepping raises it where it belongs
            return None
        return None if caught else out

    def _whole_sequence(self, vals, arrays, n):
        """(scans, last) with the recurrence run as one cell sequence, or None.

        It applies when, once the Selects whose condition is uniform over the whole
        sequence are replaced by their branch, every merged input is either the cell's
        state fed back unchanged or fed back itself (it keeps its initial value), and
        nothing but the back edges reads a state other than the cell's h output; the
        steps after the cell then run on its stacked h like the other sequence steps."""
        if self.cell is None:
            return None
        alias = {}
        for out, cond, x_s, y_s in self.selects:
            c = vals[cond].array
            if x_s is not None and c.all():
                alias[out] = x_s
            elif y_s is not None and not c.any():
                alias[out] = y_s

        def res(s):
            while s in alias:
                s = alias[s]
            return s
        fn, ins, outs, dtypes, _ = self.cell
        vals = vals.copy()
        states = {}                                    # param slot -> (state index, external)
        captures = []                                  # (Select, param slot, external)
        selects = {sel[0]: sel for sel in self.selects}
        for ext, s, rs in self.merged:
            r = res(rs)
            if r == s:
                vals[s] = _f32(arrays[ext])
            elif r in outs:
                states[s] = (outs.index(r), ext)
            elif r in selects and s in [res(b) for b in selects[r][2:] if b is not None]:
                captures.append((selects[r], s, ext))
            else:
                return None
        x = vals[res(ins[0])]
        n_states = len(outs)
        state_ins = [res(i) for i in ins[1:1 + n_states]]
        weights = [vals[res(i)] for i in ins[1 + n_states:]]
        if type(x) is not _Stack or [states.get(s, (None,))[0] for s in state_ins] \
                != list(range(n_states)) or any(w is None or type(w) is _Stack for w in weights):
            return None
        rest = [st for st in self.loop if st is not self.cell and st[2][0] not in alias
                and st[2][0] not in {sel[0] for sel, _, _ in captures}]
        # every step's c too where a step or a concatenated output reads it
        read = {res(i) for st in rest for i in st[1]}
        read |= {res(self.program.result_slots[q.internal]) for q in self.ti._concat}
        every = bool(read.intersection(outs[1:]))
        hidden = set(states) | (set() if every else set(outs[1:]))  # read by no other step
        hidden |= {s for _, s, _ in captures} | {sel[0] for sel, _, _ in captures}
        if any(st[4].type in _NO_FOLD or st[4].body is not None
               or any(res(i) in hidden for i in st[1]) for st in rest):
            return None
        init = [_f32(arrays[states[s][1]]) for s in state_ins]
        stacks, finals = fn.run_sequence(x.array, init, *weights, every=every)
        if any(v.dtype != dt for v, dt in zip(stacks, dtypes)):
            return None
        for o, v in zip(outs, stacks):
            vals[o] = _Stack(v)
        finals = dict(zip(outs, finals))
        for sel, s, ext in captures:
            finals[sel[0]] = _captured(sel, s, vals, res, finals, _f32(arrays[ext]), n)
        for step in rest:
            _lift_step([step[0], [res(i) for i in step[1]], *step[2:]], vals, n,
                       self.program.built)
        return self._outputs(vals, res, finals, hidden, n)

    def _outputs(self, vals, res, finals, hidden, n):
        """(scans, last) of the whole-sequence run: stacks for the concatenated
        outputs, the last iteration's values (or the cell's final states)."""
        rs = self.program.result_slots
        scans = []
        for q in self.ti._concat:
            v = vals[res(rs[q.internal])]
            if type(v) is not _Stack:
                return None
            scans.append(_Stacked(v.array))
        last = [None] * len(rs)
        for q in self.ti.outputs:
            if isinstance(q, ConcatOutput):
                continue
            r = res(rs[q.internal])
            v = vals[r]
            if r in finals:
                last[q.internal] = finals[r]
            elif r in hidden or v is None:
                return None
            else:
                last[q.internal] = v.array[n - 1] if type(v) is _Stack else np.array(v, copy=True)
        return scans, last

    def _lifted_values(self, arrays, plans, n, steps) -> List[Any]:
        """Slot values after the invariant steps and the sequence ``steps`` (stacks)
        for ``n`` iterations."""
        p = self.program
        vals: List[Any] = p.template.copy()
        for ext, s in self.invariant:
            vals[s] = _f32(arrays[ext])
        _execute(self.pre, vals)
        for (port, s), (_, cnt, x, pre, first, step, size) in zip(self.sliced, plans):
            vals[s] = _Stack(_chunks(_f32(x), len(pre), n, first, step, size))
        for ext, s, c in self.counters:
            vals[s] = _Stack(_counter(arrays[ext], c, n))
        if self.ci is not None:
            s, ci = self.ci
            vals[s] = _Stack(np.arange(n).astype(ci.dtype).reshape((n,) + ci.shape))
        for step in steps:
            _lift_step(step, vals, n, self.program.built)
        return vals

    def _step(self, vals, arrays, n, until=None):
        """Step the recurrent part; returns (scans, last) for the driver's _finish.

        With ``until`` (a Loop's trip count, for a recurrent condition): it stops after
        the iteration whose condition is false and returns (scans, last, iterations), or
        None when the condition is not a boolean scalar or still true after ``n``
        iterations short of the trip count (stepping raises there)."""
        p, ti = self.program, self.ti
        stacks = [(s, vals[s].array) for s in self.stack_reads]
        for s, _ in stacks:
            vals[s] = None
        cur = vals
        state = [(s, _f32(arrays[ext])) for ext, s, _ in self.merged]
        edges = [(s, rs) for _, s, rs in self.merged]
        res = p.result_slots
        concat = [res[q.internal] for q in ti._concat]
        lists = {s: [] for s in concat if s not in self.seq_slots}
        loop = self.loop
        fast, tries = None, 3
        done = n
        cond = self.cond_slot if until is not None else None
        for k in range(n if loop or lists or edges else 0):
            cur = vals.copy()
            for s, a in stacks:
                cur[s] = a[k]
            for s, v in state:
                cur[s] = v
            if fast is None and tries and k + 1 < n:
                # (a state may change shape once, e.g. from its broadcastable initial
                # value: then the next signature is compiled too)
                tries -= 1
                key = signature(cur, self.outside, self.changing)
                fast = self._fast.get(key) if key is not None else None
                if fast is None:
                    _execute(loop, cur)
                    if key is not None:
                        fast = self._compile(key, cur)
                else:
                    fast.run(cur)
            elif fast is not None:
                fast.run(cur)
            else:
                _execute(loop, cur)
            for s, lst in lists.items():
                lst.append(cur[s])
            state = [(s, cur[rs]) for s, rs in edges]
            if fast is not None and not fast.states_match(state):
                fast = None
            if cond is not None:
                c = cur[cond]
                if type(c) is not np.ndarray or c.dtype != np.bool_ or c.ndim > 1 \
                        or c.size != 1:
                    return None
                if not c.reshape(-1)[0]:
                    done = k + 1
                    break
        else:
            if cond is not None and n != until:
                return None
        n = done
        stacked = {s: a[:n] for s, a in stacks}
        scans = [_Stacked(stacked[s]) if s in stacked else lists[s] for s in concat]
        # (an invariant result may be a read-only folded constant: the caller's own copy)
        last = [stacked[s][n - 1] if s in stacked else
                cur[s] if s in self.loop_outs else np.array(cur[s], copy=True) for s in res]
        return (scans, last) if until is None else (scans, last, n)

    def _compile(self, key, cur) -> Optional[FastSteps]:
        """The stepped part compiled for the signature ``key`` from the slot values of
        an iteration that ran it (kept for the next calls)."""
        try:
            fast = FastSteps(self.loop, cur, self.outside, self.changing,
                             [s for _, s, _ in self.merged], self.program.result_slots,
                             self.program.built)
        except Exception:       # noqa: BLE001 -- not compiled: stepped as planned
            return None
        if not fast.compiled:
            return None
        if len(self._fast) >= 8:
            self._fast.clear()
        self._fast[key] = fast
        return fast

    def _loop_bound(self, arrays, plans) -> int:
        """At most how many iterations a Loop with a recurrent condition runs (its trip
        count, its sliced inputs' chunks, the iteration limit), 0 to step it as the
        driver does (no iteration, or no bound worth computing the sequence steps for)."""
        op = self.ti
        trip = op._trip(arrays[0])
        if not op._cond(arrays[1], "execution_condition input"):
            return 0
        bounds = [cnt for _, cnt, *_ in plans] + [limits.max_loop_iterations()]
        bound = min(bounds + [trip] if trip >= 0 else bounds)
        return bound if bound <= _MAX_BOUND else 0


def _captured(sel, param, vals, res, finals, init, n):
    """The last value of a merged input fed back through ``Select(cond, value, itself)``
    (or ``Select(cond, itself, value)``): per element, the value of the last iteration
    that picked it, else the initial one.  A value known only after the last iteration
    (a cell's final c) must be the one picked there wherever any iteration picked it."""
    _, cond, x_s, y_s = sel
    keeps_x = x_s is not None and res(x_s) == param
    value = y_s if keeps_x else x_s
    c = vals[cond].array
    shape = init.shape
    c = c.reshape((n,) + (1,) * (len(shape) + 1 - c.ndim) + c.shape[1:])
    pick = np.broadcast_to(~c if keeps_x else c, (n,) + shape)
    ever = pick.any(axis=0)
    v = vals[res(value)]
    if type(v) is _Stack:
        last = n - 1 - np.argmax(pick[::-1], axis=0)
        seq = np.broadcast_to(v.array, (n,) + shape)
        return np.where(ever, np.take_along_axis(seq, last[None], axis=0)[0], init)
    if res(value) in finals and np.array_equal(ever, pick[n - 1]):
        return np.where(ever, finals[res(value)], init)
    raise _GiveUp


def _cone(steps, slot):
    """The steps of ``steps`` that ``slot``'s value needs, in order."""
    need, out = {slot}, []
    for step in reversed(steps):
        if need.intersection(step[2]):
            need.update(step[1])
            out.append(step)
    return out[::-1]


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(_F32) if x.dtype == _F16 else x


def _chunks(x, axis, n, first, step, size) -> np.ndarray:
    """Chunk k of ``x`` on ``axis`` (chunk k starts at first + k*step, ``size`` long)
    at ``[k]``: a view of ``x``."""
    lo = first if step > 0 else first + (n - 1) * step
    part = x[(slice(None),) * axis + (slice(lo, lo + n * size),)]
    part = part.reshape(x.shape[:axis] + (n, size) + x.shape[axis + 1:])
    part = np.moveaxis(part, axis, 0)
    return part if step > 0 else part[::-1]


def _counter(init: np.ndarray, c: np.ndarray, n: int) -> np.ndarray:
    """init, init + c, init + 2c, ...: what adding c once per iteration gives (integer
    sums wrap alike, summed at once in int64 then cast)."""
    if init.dtype != c.dtype or init.size != 1 or c.ndim > init.ndim \
            or abs(int(init.reshape(-1)[0])) > 1 << 40:
        raise _GiveUp
    k = np.arange(n, dtype=np.int64).reshape((n,) + (1,) * init.ndim)
    return (init.astype(np.int64) + k * int(c.reshape(-1)[0])).astype(init.dtype)


def _lift_step(step, vals, n, built=None) -> None:
    """Run one sequence step on all iterations at once; its outputs become stacks.
    (``built``: the program's functions as built; a Gather is lifted only when its
    function is one of them, not a replacement recording its calls.)"""
    fn, ins, outs, dtypes, layer = step
    xs = [vals[i] for i in ins]
    out = None
    kind = layer.type
    if kind in _ELEMENTWISE:
        out = _lift_elementwise(fn, xs, n)
    elif kind in _RESHAPES and all(type(x) is not _Stack for x in xs[1:]):
        one = np.asarray(fn(xs[0].array[0], *xs[1:]))
        out = (xs[0].array.reshape((n,) + one.shape),)
    elif kind == "MatMul" and type(xs[0]) is _Stack and type(xs[1]) is not _Stack \
            and xs[1].ndim == 2 and xs[0].array.ndim >= 3:
        out = (np.asarray(fn(xs[0].array, xs[1])),)
    elif kind == "Gather" and built is not None and built.get(id(fn)) is fn \
            and type(xs[1]) is _Stack and xs[1].array.ndim == 1 \
            and type(xs[0]) is not _Stack and type(xs[2]) is not _Stack \
            and layer.attrs.get("batch_dims", "0") == "0":
        out = _lift_gather(fn, xs, n)
    if out is None:
        out = _per_iteration(fn, xs, len(outs), n)
    for s, v, dt in zip(outs, out, dtypes):
        if v.shape[:1] != (n,) or (dt is not None and v.dtype != dt):
            raise _GiveUp
        vals[s] = _Stack(v)


def _lift_gather(fn, xs, n):
    """A Gather of one index per iteration from an array that stays: one Gather of all
    the indices (the same elements), the iteration axis moved first."""
    data, idx, axis = xs[0], xs[1].array, xs[2]
    if np.ndim(axis) > 1 or np.size(axis) != 1 or data.ndim == 0:
        return None
    ax = int(np.asarray(axis).reshape(-1)[0])
    if not -data.ndim <= ax < data.ndim:
        return None
    out = np.asarray(fn(data, idx, axis))
    return (np.moveaxis(out, ax % data.ndim, 0),)


def _lift_elementwise(fn, xs, n):
    """An element-wise op on stacks: every stack gets ones after its iteration axis up to
    the op's rank, so numpy broadcasts the per-iteration shapes as it would."""
    rank = max(x.array.ndim - 1 if type(x) is _Stack else np.ndim(x) for x in xs)
    args = []
    for x in xs:
        if type(x) is _Stack:
            a = x.array
            args.append(a.reshape((n,) + (1,) * (rank + 1 - a.ndim) + a.shape[1:]))
        else:
            args.append(x)
    out = np.asarray(fn(*args))
    return (out,) if out.ndim == rank + 1 else None


def _per_iteration(fn, xs, n_out, n):
    """Any other op: once per iteration, the results stacked."""
    outs = [[] for _ in range(n_out)]
    for k in range(n):
        r = fn(*[x.array[k] if type(x) is _Stack else x for x in xs])
        for lst, v in zip(outs, (r,) if n_out == 1 else r):
            lst.append(np.asarray(v))
    return [np.stack(lst) for lst in outs]


def plan_for(program: _Program, ti) -> Optional[LiftedPlan]:
    """The whole-sequence plan of ``program`` as ``ti``'s body, None when it would not
    save anything (nothing to lift)."""
    plan = LiftedPlan(program, ti)
    return plan if plan.useful else None
