"""The stepped part of a loop body precompiled for one signature of its inputs.

:class:`mli.ir.lifted.LiftedPlan` steps the recurrent steps of a TensorIterator's or
Loop's body once per iteration.  Each op's step checks its inputs (types, shapes, axes,
target shapes) and parses its shape inputs at every call; in a loop those checks see the
same shapes every iteration.  A :class:`FastSteps` is that step list compiled once for a
*signature* (the shapes and types of the values the steps read from outside, and the
values of the small integer ones): every op with a builder here becomes a closure that
computes what its step computes -- the same numpy operations on the same operands, so
the same values bit for bit -- without the checks the signature already passed and with
its shape arithmetic done once.  Checks that depend on data (a Gather or ScatterUpdate
index) stay; when one fails, the op's own step runs and raises its error.

A value is *stable* when its shape and type are the same in every iteration: a value
from outside the loop, a sliced input's chunk, a carried state whose shape and type the
driver checks at every iteration (:meth:`FastSteps.states_match`), and the output of a
compiled op on stable inputs.  A value is *fixed* when, moreover, its contents are known
from the signature (a small integer value from outside the loop, a ShapeOf of a stable
value, a compiled op on fixed inputs): ops may read axes, shapes and indices only from
fixed values.  Any other op runs its own step (with its checks), and what reads its
output runs its own step too, unless the op's output shape is known from its inputs'
(the cells)."""

from __future__ import annotations

from typing import Any, Callable, Collection, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .errors import ELEMENT_TYPES
from .ops.elementwise import _relu, _sigmoid
from .program import _execute
from .registry import parse_bool

_nd = np.ndarray
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)

_BINARY = {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply,
           "Maximum": np.maximum, "Minimum": np.minimum, "Less": np.less,
           "Greater": np.greater, "LessEqual": np.less_equal,
           "GreaterEqual": np.greater_equal, "Equal": np.equal, "NotEqual": np.not_equal,
           "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or,
           "LogicalXor": np.logical_xor}
_UNARY = {"Sigmoid": _sigmoid, "Tanh": np.tanh, "Exp": np.exp, "ReLU": _relu, "Abs": np.abs,
          "Negative": np.negative, "LogicalNot": np.logical_not}
#: ops run by their own step whose output shapes and types follow from their inputs'
_SHAPE_KEPT = frozenset({"LSTMCell", "GRUCell", "RNNCell"})
#: small integer values from outside the loop that go into the signature
_FIXED_MAX = 64


def _ints(v) -> List[int]:
    return np.asarray(v).reshape(-1).tolist()


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


# each builder: (layer, example inputs, which inputs are fixed, the step's function)
# -> a function of the step's inputs computing its output(s), or None (not compiled)
def _b_binary(layer, xs, fixed, fn):
    u = _BINARY[layer.type]
    return lambda x, y: u(x, y)


def _b_unary(layer, xs, fixed, fn):
    if layer.type == "Sigmoid" and xs[0].dtype in (_F32, _F64):
        return _sigmoid_fast(xs[0].dtype)
    u = _UNARY[layer.type]
    return lambda x: u(x)


def _sigmoid_fast(dt):
    """``_sigmoid(x)`` for ``x`` of float type ``dt``, the same values (as
    mli.ir.ops.recurrent._sigmoid_into computes them): e = exp(-|x|); 1/(1+e) where
    x >= 0, else e/(1+e), whose numerator exp(min(x, 0)) is e for x < 0 and 1 for
    x >= 0; both exponents in one exp call over a contiguous buffer, as _sigmoid's is."""
    zero, one = dt.type(0), dt.type(1)
    mn, ab, ng, ex, ad, dv, em = (np.minimum, np.abs, np.negative, np.exp, np.add,
                                  np.divide, np.empty)

    def sigmoid(x):
        w = em((2,) + x.shape, dt)
        num = w[0]
        e = w[1]
        mn(x, zero, out=num)
        ab(x, out=e)
        ng(e, out=e)
        ex(w, out=w)
        d = ad(e, one)
        return dv(num, d, out=d)
    return sigmoid


def _b_identity(layer, xs, fixed, fn):
    return lambda x: x


def _b_select(layer, xs, fixed, fn):
    where = np.where
    return lambda c, x, y: where(c, x, y)


def _b_convert(layer, xs, fixed, fn):
    dst = ELEMENT_TYPES[layer.attrs["destination_type"]]
    if dst == np.bool_:
        return lambda x: x != 0
    if xs[0].dtype.kind == "f" and dst.kind in "iu":
        return None         # a data check
    return lambda x: x.astype(dst)


def _b_matmul(layer, xs, fixed, fn):
    ta = parse_bool(layer.attrs.get("transpose_a", "false")) and xs[0].ndim >= 2
    tb = parse_bool(layer.attrs.get("transpose_b", "false")) and xs[1].ndim >= 2
    mm, sw = np.matmul, np.swapaxes
    if ta and tb:
        return lambda x, y: mm(sw(x, -1, -2), sw(y, -1, -2))
    if ta:
        return lambda x, y: mm(sw(x, -1, -2), y)
    if tb:
        return lambda x, y: mm(x, sw(y, -1, -2))
    return lambda x, y: mm(x, y)


def _b_reshape(layer, xs, fixed, fn):
    """Reshape, Squeeze, Unsqueeze with fixed shape/axes: the output shape of the
    example (it follows from the input's shape and the fixed values)."""
    if not all(fixed[1:]):
        return None
    shape = fn(*xs).shape
    return lambda x, *_: x.reshape(shape)


def _b_split(layer, xs, fixed, fn):
    if not fixed[1]:
        return None
    parts = fn(*xs)
    x = xs[0]
    ax = _axis(_ints(xs[1])[0], x.ndim)
    size = x.shape[ax] // len(parts)
    pre = (slice(None),) * ax
    index = [pre + (slice(k * size, (k + 1) * size),) for k in range(len(parts))]

    def split(x, _):
        return tuple([x[i] for i in index])
    split.index = index     # type: ignore[attr-defined]  # (read by _fuse_sigmoids)
    return split


def _b_concat(layer, xs, fixed, fn):
    ax = _axis(int(layer.attrs["axis"]), xs[0].ndim)
    cat = np.concatenate
    return lambda *ys: cat(ys, axis=ax)


def _b_shape_of(layer, xs, fixed, fn):
    dt = fn(*xs).dtype
    shape = xs[0].shape
    return lambda x: np.array(shape, dt)


def _b_slice(layer, xs, fixed, fn):
    if not all(fixed[1:]):
        return None
    x = xs[0]
    st, sp, se = (_ints(v) for v in xs[1:4])
    ax = list(range(len(st))) if len(xs) < 5 else [_axis(v, x.ndim) for v in _ints(xs[4])]
    index = [slice(None)] * x.ndim
    for i, b, e, s in zip(ax, st, sp, se):
        index[i] = slice(b, e, s)
    index = tuple(index)
    cont = np.ascontiguousarray
    return lambda x, *_: cont(x[index])


def _b_gather(layer, xs, fixed, fn):
    data, indices, axis = xs
    if not fixed[2] or indices.ndim != 0 or indices.dtype.kind not in "iu":
        return None
    ax = _axis(_ints(axis)[0], data.ndim)
    dim = data.shape[ax]
    lo = -dim if layer.version == "opset8" else 0
    take = np.take

    def f(data, indices, axis):
        i = int(indices)
        if i < lo or i >= dim:
            return fn(data, indices, axis)          # its error
        return take(data, i + dim if i < 0 else i, axis=ax)
    return f


def _b_broadcast(layer, xs, fixed, fn):
    mode = layer.attrs.get("mode", "numpy")
    if mode not in ("numpy", "bidirectional") or not all(fixed[1:]):
        return None
    target = tuple(_ints(xs[1]))
    if mode == "bidirectional":
        target = np.broadcast_shapes(xs[0].shape, target)
    empty, copyto, dt = np.empty, np.copyto, xs[0].dtype

    def f(x, *_):       # np.array(np.broadcast_to(x, target)): the same copy
        out = empty(target, dt)
        copyto(out, x)
        return out
    return f


def _b_scatter_update(layer, xs, fixed, fn):
    data, indices, updates, axis = xs
    if not fixed[3] or indices.size != 1 or indices.dtype.kind not in "iu":
        return None
    ax = _axis(_ints(axis)[0], data.ndim)
    dim = data.shape[ax]
    pre = (slice(None),) * ax
    ushape = data.shape[:ax] + (1,) + data.shape[ax + 1:]
    src = pre + (0,)

    def f(data, indices, updates, axis):
        i = int(indices.reshape(-1)[0])
        if i < -dim or i >= dim:
            return fn(data, indices, updates, axis)  # its error
        out = data.copy()
        out[pre + (i + dim if i < 0 else i,)] = updates.reshape(ushape)[src]
        return out
    return f


def _b_reduce_mean(layer, xs, fixed, fn):
    x = xs[0]
    if not fixed[1] or x.dtype.kind != "f":
        return None
    ax = tuple(sorted({_axis(v, x.ndim) for v in _ints(xs[1])}))
    if not ax:
        return lambda x, _: x
    keep = parse_bool(layer.attrs.get("keep_dims", "false"))
    n = x.dtype.type(int(np.prod([x.shape[i] for i in ax])))
    dt = x.dtype
    sm = np.add.reduce      # (what np.sum calls for an array)
    return lambda x, _: (sm(x, axis=ax, keepdims=keep, dtype=dt) / n).astype(dt, copy=False)


_BUILDERS: Dict[str, Callable] = {
    **{t: _b_binary for t in _BINARY}, **{t: _b_unary for t in _UNARY},
    "Identity": _b_identity, "Select": _b_select, "Convert": _b_convert,
    "MatMul": _b_matmul, "Reshape": _b_reshape, "Squeeze": _b_reshape,
    "Unsqueeze": _b_reshape, "Split": _b_split, "Concat": _b_concat, "ShapeOf": _b_shape_of,
    "Slice": _b_slice, "Gather": _b_gather, "Broadcast": _b_broadcast,
    "ScatterUpdate": _b_scatter_update, "ReduceMean": _b_reduce_mean}
#: the inputs a compiled op does not read (their values are compiled in)
_COMPILED_IN = {"Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,),
                "Slice": (1, 2, 3, 4), "Broadcast": (1, 2), "ReduceMean": (1,),
                "ShapeOf": (0,)}
#: ops whose outputs are fixed when their inputs are (ShapeOf: when its input is stable)
_FIXED_OPS = frozenset({"Add", "Subtract", "Multiply", "Concat", "Slice", "Gather",
                        "Squeeze", "Unsqueeze", "Reshape", "Convert", "Identity"})


def compilable(steps, built: Dict[int, Any]) -> bool:
    """Whether any of ``steps`` has a compiled form (``built``: see :class:`FastSteps`)."""
    return any(st[4].type in _BUILDERS and built.get(id(st[0])) is st[0] for st in steps)


def signature(vals: Sequence[Any], slots: Sequence[int], changing=()) -> Optional[Tuple]:
    """The signature of the values in ``slots`` (class, shape and type; the contents too
    of small integer ones not in ``changing``), None when one is not an array or a numpy
    scalar (a sliced rank-1 sequence gives scalars)."""
    key: List[Tuple] = []
    for s in slots:
        v = vals[s]
        t = type(v)
        if t is not _nd and not isinstance(v, np.generic):
            return None
        if v.dtype.kind in "iub" and v.size <= _FIXED_MAX and s not in changing:
            key.append((t, v.shape, v.dtype, v.tobytes()))
        else:
            key.append((t, v.shape, v.dtype))
    return tuple(key)


class FastSteps:
    """``steps`` (a body's stepped steps, in order) compiled on the slot values ``vals``
    of an iteration that ran them; ``outside``: the slots they read that they do not
    write (their signature is the key of this compilation), ``states``: those of them
    that change from one iteration to the next (carried states, sliced chunks)."""

    def __init__(self, steps, vals: Sequence[Any], outside: Sequence[int],
                 changing: Collection[int], carried: Sequence[int], keep: Sequence[int],
                 built: Dict[int, Any]):
        stable = set(outside)
        fixed = {s for s in outside if s not in changing and vals[s].dtype.kind in "iub"
                 and vals[s].size <= _FIXED_MAX}
        self.state_sig = {s: (vals[s].shape, vals[s].dtype) for s in carried if s in stable}
        runners: List[Tuple[Callable, Any, bool]] = []   # (runner, step, compiled)
        parts: Dict[int, Tuple[int, Any]] = {}   # Split output -> (its input, index)
        self.compiled = 0
        for step in steps:
            fn, ins, outs, dtypes, layer = step
            f = None
            if layer.type in _BUILDERS and built.get(id(fn)) is fn \
                    and all(i in stable for i in ins):
                try:
                    f = _BUILDERS[layer.type](layer, [vals[i] for i in ins],
                                              [i in fixed for i in ins], fn)
                except Exception:   # noqa: BLE001 -- not compiled: it runs its own step
                    f = None
            if f is None:
                runners.append((_plain(step), step, False))
                if layer.type in _SHAPE_KEPT and all(i in stable for i in ins):
                    stable.update(outs)
                continue
            self.compiled += 1
            runners.append((_runner(f, step), step, True))
            stable.update(outs)
            for o, index in zip(outs, getattr(f, "index", ())):
                parts[o] = (ins[0], index)
            if layer.type == "ShapeOf" or (layer.type in _FIXED_OPS
                                           and all(i in fixed for i in ins)):
                fixed.update(outs)
        runners = _fuse_sigmoids(runners, parts, vals, keep)
        # a compiled step with fixed outputs that nothing reads at run time (only compiled
        # into other steps) is left out
        live = set(keep)
        kept = []
        for run, step, compiled in reversed(runners):
            _, ins, outs, _, layer = step
            if compiled and live.isdisjoint(outs) and fixed.issuperset(outs):
                continue
            kept.append(run)
            skip = _COMPILED_IN.get(layer.type, ()) if compiled else ()
            live.update(i for k, i in enumerate(ins) if k not in skip)
        self.runners = kept[::-1]

    def states_match(self, state: Sequence[Tuple[int, Any]]) -> bool:
        """Whether the carried states ``state`` ((slot, value) pairs) for the next
        iteration have the compiled shapes and types."""
        sig = self.state_sig
        for s, v in state:
            if s in sig:
                shape, dt = sig[s]
                if type(v) is not _nd or v.shape != shape or v.dtype != dt:
                    return False
        return True

    def run(self, vals: List[Any]) -> None:
        for r in self.runners:
            r(vals)


def _fuse_sigmoids(runners: List[Tuple[Callable, Any, bool]], parts: Dict[int, Tuple[int, Any]],
                   vals: Sequence[Any], keep: Sequence[int]) -> List[Tuple[Callable, Any, bool]]:
    """Compiled Sigmoids of two or more parts of one Split (an LSTM's gates): one
    sigmoid of the Split's input, at the first one's place, each part a view of it.
    The sigmoid is element-wise, computed as _sigmoid_fast computes it on the part
    (each exponent over a contiguous buffer), so the same values; a body result
    keeps its own Sigmoid (a fresh array)."""
    groups: Dict[int, List[int]] = {}
    for pos, (_, step, compiled) in enumerate(runners):
        _, ins, outs, _, layer = step
        if compiled and layer.type == "Sigmoid" and ins[0] in parts and outs[0] not in keep:
            src = parts[ins[0]][0]
            if vals[src].dtype in (_F32, _F64):
                groups.setdefault(src, []).append(pos)
    drop = set()
    for src, positions in groups.items():
        if len(positions) < 2:
            continue
        sig = _sigmoid_fast(vals[src].dtype)
        targets = [(runners[p][1][2][0], parts[runners[p][1][1][0]][1]) for p in positions]

        def run(v, src=src, targets=targets, sig=sig):
            a = sig(v[src])
            for o, index in targets:
                v[o] = a[index]
        first = runners[positions[0]][1]
        fused = (None, [src], [o for o, _ in targets], [first[3][0]] * len(targets), first[4])
        runners[positions[0]] = (run, fused, True)
        drop.update(positions[1:])
    return [r for k, r in enumerate(runners) if k not in drop]


def _plain(step):
    one = [step]
    return lambda vals: _execute(one, vals)


def _runner(f, step):
    """``f`` over the value slots: its outputs stored as the step's are; on an error,
    the step itself runs (and raises it, located)."""
    _, ins, outs, _, _ = step
    asarray = np.asarray
    one = [step]
    if len(outs) == 1:
        o = outs[0]
        if len(ins) == 1:
            a, = ins

            def run(vals):
                try:
                    r = f(vals[a])
                except Exception:   # noqa: BLE001
                    return _execute(one, vals)
                vals[o] = r if type(r) is _nd else asarray(r)
        elif len(ins) == 2:
            a, b = ins

            def run(vals):
                try:
                    r = f(vals[a], vals[b])
                except Exception:   # noqa: BLE001
                    return _execute(one, vals)
                vals[o] = r if type(r) is _nd else asarray(r)
        else:
            def run(vals):
                try:
                    r = f(*[vals[i] for i in ins])
                except Exception:   # noqa: BLE001
                    return _execute(one, vals)
                vals[o] = r if type(r) is _nd else asarray(r)
        return run

    def run_many(vals):
        try:
            r = f(*[vals[i] for i in ins])
        except Exception:   # noqa: BLE001
            return _execute(one, vals)
        for s, v in zip(outs, r):
            vals[s] = v if type(v) is _nd else asarray(v)
    return run_many
