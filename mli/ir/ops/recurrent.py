"""Recurrent ops: RNN/GRU/LSTM cells and sequences."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis
from ... import _core
from .elementwise import _relu, _sigmoid

def _scalar(f):
    return lambda x: f(x).astype(x.dtype, copy=False)


def _affine(al, be):
    return lambda x: (al * x + be).astype(x.dtype, copy=False)


def _hardsigmoid(al, be):
    return lambda x: np.clip(al * x + be, 0, 1).astype(x.dtype, copy=False)


def _leakyrelu(al, be):
    return lambda x: np.where(x >= 0, x, al * x).astype(x.dtype, copy=False)


def _thresholdedrelu(al, be):
    return lambda x: np.where(x > al, x, 0).astype(x.dtype, copy=False)


def _scaledtanh(al, be):
    return lambda x: (al * np.tanh(be * x)).astype(x.dtype, copy=False)


def _elu(al, be):
    return lambda x: np.where(x >= 0, x, al * np.expm1(np.minimum(x, 0))).astype(x.dtype,
                                                                                copy=False)


#: activation name -> (factory(alpha, beta), default alpha, default beta).  sigmoid, tanh and
#: relu (the OpenVINO opset's) ignore alpha/beta; the others are ONNX's RNN activations.
ACTIVATIONS = {
    "sigmoid": (lambda al, be: _sigmoid, None, None),
    "tanh": (lambda al, be: np.tanh, None, None),
    "relu": (lambda al, be: _relu, None, None),
    "hardsigmoid": (_hardsigmoid, 0.2, 0.5),
    "affine": (_affine, 1.0, 0.0),
    "leakyrelu": (_leakyrelu, 0.01, None),
    "thresholdedrelu": (_thresholdedrelu, 1.0, None),
    "scaledtanh": (_scaledtanh, 1.0, 1.0),
    "elu": (_elu, 1.0, None),
    "softsign": (lambda al, be: _scalar(lambda x: x / (1 + np.abs(x))), None, None),
    "softplus": (lambda al, be: _scalar(lambda x: np.logaddexp(0, x)), None, None),
}


def _cell_spec(default_acts, extra=None):
    spec = {"hidden_size": (int, REQUIRED), "activations": (parse_strlist, default_acts),
            "activations_alpha": (parse_floats, []), "activations_beta": (parse_floats, []),
            "clip": (float, 0.0)}
    spec.update(extra or {})
    return spec


def _cell_setup(layer, a, n_acts):
    """(activation functions, clip, hidden_size).  ``activations_alpha[k]`` /
    ``activations_beta[k]`` parameterise the k-th activation (OpenVINO's convention:
    by position); where absent, the activation's default (ONNX's) applies."""
    acts = [x.lower() for x in a["activations"]]
    if len(acts) < n_acts or any(x not in ACTIVATIONS for x in acts):
        raise IRUnsupportedError(f"activations {a['activations']} not supported (need {n_acts} "
                                 f"of {sorted(ACTIVATIONS)})")
    if a["clip"] < 0 or a["hidden_size"] <= 0:
        raise IRError(f"invalid clip {a['clip']} or hidden_size {a['hidden_size']}")
    al, be = a["activations_alpha"], a["activations_beta"]
    fns = []
    for k, name in enumerate(acts[:n_acts]):
        make, da, db = ACTIVATIONS[name]
        fns.append(make(al[k] if k < len(al) else da, be[k] if k < len(be) else db))
    return fns, a["clip"], a["hidden_size"]


def _check_cell(hs, gates, x, h, w, r, b, nb=None):
    nb = gates if nb is None else nb
    if x.ndim != 2 or h.shape != (x.shape[0], hs) or w.shape != (gates * hs, x.shape[1]) \
            or r.shape != (gates * hs, hs) or b.shape != (nb * hs,):
        raise IRError(f"inconsistent cell shapes: X{list(x.shape)} H{list(h.shape)} "
                      f"W{list(w.shape)} R{list(r.shape)} B{list(b.shape)} (hidden_size {hs})")
    if len({v.dtype for v in (x, h, w, r, b)}) != 1 or x.dtype.kind != "f":
        raise IRError("cell inputs must share one floating-point type")


def _gates(x, h, w, r, b, clip):
    g = x @ w.T + h @ r.T + b
    return np.clip(g, -clip, clip) if clip > 0 else g


def _clipper(clip):
    return (lambda v: np.clip(v, -clip, clip)) if clip > 0 else (lambda v: v)


# --- one step of each cell (x [B, N], h [B, M]; weights as the Cell ops take them)
def lstm_step(acts, clip, hs, x, h, c, w, r, b, p=None):
    """LSTM step, gates f, i, c, o (OpenVINO order); ``p``: peepholes [3M] (i, o, f)."""
    f, g, hact = acts
    z = _gates(x, h, w, r, b, clip)
    ft, it, ct, ot = (z[:, k * hs:(k + 1) * hs] for k in range(4))
    if p is not None:
        cl = _clipper(clip)
        it = cl(it + p[:hs] * c)
        ft = cl(ft + p[2 * hs:] * c)
    c_new = f(ft) * c + f(it) * g(ct)
    if p is not None:
        ot = _clipper(clip)(ot + p[hs:2 * hs] * c_new)
    return f(ot) * hact(c_new), c_new


def gru_step(acts, clip, hs, lbr, x, h, w, r, b):
    """GRU step, gates z, r, h (OpenVINO order); ``lbr``: linear_before_reset."""
    f, g = acts
    cl = _clipper(clip)
    xw, hr = x @ w.T, h @ r.T
    zt = f(cl(xw[:, :hs] + hr[:, :hs] + b[:hs]))
    rt = f(cl(xw[:, hs:2 * hs] + hr[:, hs:2 * hs] + b[hs:2 * hs]))
    if lbr:
        ht = g(cl(xw[:, 2 * hs:] + rt * (hr[:, 2 * hs:] + b[3 * hs:]) + b[2 * hs:3 * hs]))
    else:
        ht = g(cl(xw[:, 2 * hs:] + (rt * h) @ r[2 * hs:].T + b[2 * hs:]))
    return (1 - zt) * ht + zt * h


def rnn_step(acts, clip, hs, x, h, w, r, b):
    return acts[0](_gates(x, h, w, r, b, clip))


@register("LSTMCell", {"opset1", "opset4"},
          _spec=lambda l: _cell_spec(["sigmoid", "tanh", "tanh"],
                                     {"input_forget": (parse_bool, False)}
                                     if l.version == "opset1" else None))
@ports((6, 7), n_outputs=2)
def _lstm_cell(layer, a, graph):
    acts, clip, hs = _cell_setup(layer, a, 3)
    if a.get("input_forget"):
        raise IRUnsupportedError("LSTMCell-1 with input_forget=true is not supported")
    if layer.version == "opset4" and len(layer.inputs) != 6:
        raise IRError("LSTMCell-4 has 6 inputs")

    compiled = _compiled_spec(a, 3, 4, clip, [False])

    def check(x, h, c, w, r, b, p=None):
        _check_cell(hs, 4, x, h, w, r, b)
        if c.shape != h.shape or c.dtype != h.dtype:
            raise IRError(f"cell state {c.dtype}{list(c.shape)} does not match H")
        if p is not None and (p.shape != (3 * hs,) or p.dtype != x.dtype):
            raise IRError(f"peepholes P must be {x.dtype}[{3 * hs}], got {p.dtype}{list(p.shape)}")

    def fn(x, h, c, w, r, b, p=None):
        check(x, h, c, w, r, b, p)
        if compiled is not None and p is None and _c_step_pays(x, w, r):
            return _compiled_step(compiled, x, (h, c), w, r, b, hs)
        h_new, c_new = lstm_step(acts, clip, hs, x, h, c, w, r, b, p)
        return arr(h_new), arr(c_new)
    runner = (lambda w, r, b: _lstm_runner(hs, clip, w, r, b)) if _default_acts(a, 3) else None
    return _with_sequence(fn, check, compiled, 2, hs, runner)


@register("GRUCell", {"opset3"}, **_cell_spec(["sigmoid", "tanh"],
                                              {"linear_before_reset": (parse_bool, False)}))
@ports(5)
def _gru_cell(layer, a, graph):
    acts, clip, hs = _cell_setup(layer, a, 2)
    lbr = a["linear_before_reset"]
    compiled = _compiled_spec(a, 2, 3, clip, [False])

    def check(x, h, w, r, b):
        _check_cell(hs, 3, x, h, w, r, b, 4 if lbr else 3)

    def fn(x, h, w, r, b):
        check(x, h, w, r, b)
        if compiled is not None and _c_step_pays(x, w, r):
            return _compiled_step(compiled, x, (h,), w, r, b, hs)[0]
        return arr(gru_step(acts, clip, hs, lbr, x, h, w, r, b))
    runner = (lambda w, r, b: _gru_runner(hs, clip, lbr, w, r, b)) if _default_acts(a, 2) else None
    return _with_sequence(fn, check, compiled, 1, hs, runner)


@register("RNNCell", {"opset1"}, **_cell_spec(["tanh"]))
@ports(5)
def _rnn_cell(layer, a, graph):
    acts, clip, hs = _cell_setup(layer, a, 1)
    compiled = _compiled_spec(a, 1, 1, clip, [False])

    def check(x, h, w, r, b):
        _check_cell(hs, 1, x, h, w, r, b)

    def fn(x, h, w, r, b):
        check(x, h, w, r, b)
        if compiled is not None and _c_step_pays(x, w, r):
            return _compiled_step(compiled, x, (h,), w, r, b, hs)[0]
        return arr(rnn_step(acts, clip, hs, x, h, w, r, b))
    runner = (lambda w, r, b: _rnn_runner(hs, clip, acts[0], w, r, b)) \
        if _default_acts(a, 1) else None
    return _with_sequence(fn, check, compiled, 1, hs, runner)


def _with_sequence(fn, check, compiled, n_states, hs, runner):
    """``fn`` (a cell step) with ``fn.run_sequence(xs, states, *weights, every=False)
    -> (stacks, finals)``: the cell over the steps ``xs [n, B, N]`` from ``states``
    (each [B, M]); ``stacks``: every step's h ``[n, B, M]`` (with ``every``, every
    step's states), ``finals``: the states after the last step.  It computes what
    stepping ``fn`` computes, bit for bit: where ``fn`` steps in C, one C call for the
    sequence (it hoists the input products, the same sums) or, for every state, one C
    step call each; where ``fn`` steps in numpy with the default activations, the numpy
    runner (the step's operations without its per-step calls); else ``fn`` itself.  A
    TensorIterator / Loop body whose recurrence is only this cell runs it so
    (mli.ir.lifted); mli.fixed_point's replacement steps have no such attribute.
    ``runner(w, r, b)``: the numpy whole-sequence runner, None for other activations."""
    def run_sequence(xs, states, *weights, every=False):
        check(xs[0], *states, *weights)
        in_c = compiled is not None and len(weights) == 3 and _c_step_pays(xs, *weights[:2])
        if in_c and not every:
            x = np.ascontiguousarray(np.moveaxis(xs, 0, 1))          # [B, n, N]
            lengths = np.full(x.shape[0], x.shape[1], np.int64)
            w, r, b = weights
            y, *finals = _run_compiled(compiled, x, [s_[:, None] for s_ in states], lengths,
                                       w[None], r[None], b[None], hs)
            return [np.moveaxis(y[:, 0], 1, 0)], [f[:, 0] for f in finals]
        if in_c:
            return _compiled_steps(compiled, xs, states, weights, hs)
        if runner is not None and len(weights) == 3 and not every:
            ys = np.empty(xs.shape[:2] + (hs,), states[0].dtype)
            finals = runner(*weights)(np.ascontiguousarray(xs), *states, ys, None)
            return [ys], list(finals) if n_states > 1 else [finals]
        steps = []
        for x in xs:
            new = fn(x, *states, *weights)
            states = new if n_states > 1 else (new,)
            steps.append(states if every else states[:1])
        return [np.stack(v) for v in zip(*steps)], list(states)
    fn.run_sequence = run_sequence
    return fn


# --- sequences
_DIRECTION = {"direction": (choice("forward", "reverse", "bidirectional"), REQUIRED)}


def step_order(lengths, T, reverse):
    """``idx [B, T]``: the time index each row reads/writes at step k, and ``valid [B, T]``.

    Forward: step k is time k; reverse: step k is time ``len-1-k`` (the valid part read
    backwards, as ReverseSequence would); steps ``k >= len`` are padding (state kept,
    output 0)."""
    k = np.arange(T)[None, :]
    lens = np.asarray(lengths, np.int64)[:, None]
    valid = k < lens
    idx = np.where(valid, lens - 1 - k, k) if reverse else np.broadcast_to(k, valid.shape)
    return idx, valid


def run_sequence(step, x, states, lengths, reverse):
    """Run ``step(x_t [B, N], *states) -> new states (h first)`` over ``x [B, T, N]``.

    Returns ``(y [B, T, M], final states)``: y is 0 beyond each row's length, the final
    states are those after the row's last valid step (the initial ones for length 0)."""
    B, T = x.shape[:2]
    idx, valid = step_order(lengths, T, reverse)
    rows = np.arange(B)
    y = np.zeros((B, T, states[0].shape[-1]), x.dtype)
    states = list(states)
    for k in range(T):
        new = step(x[rows, idx[:, k]], *states)
        new = new if isinstance(new, tuple) else (new,)
        v = valid[:, k]
        if v.all():
            states = list(new)
        else:
            states = [np.where(v[:, None], n, s) for n, s in zip(new, states)]
        y[rows[v], idx[v, k]] = states[0][v]
    return y, states


def _seq_lengths(lengths, B, T):
    if lengths.dtype.kind not in "iu" or lengths.shape != (B,):
        raise IRError(f"sequence_lengths must be an integer [{B}] tensor, got "
                      f"{lengths.dtype}{list(lengths.shape)}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > T):
        raise IRError(f"sequence_lengths {lengths.tolist()} outside [0, {T}]")
    return lengths


def _check_seq(hs, gates, nd, x, hstates, w, r, b, nb=None):
    nb = gates if nb is None else nb
    if x.ndim != 3:
        raise IRError(f"X must be [batch, seq, input], got {list(x.shape)}")
    B, T, N = x.shape
    for h in hstates:
        if h.shape != (B, nd, hs):
            raise IRError(f"initial state {list(h.shape)} must be [{B}, {nd}, {hs}]")
    if w.shape != (nd, gates * hs, N) or r.shape != (nd, gates * hs, hs) \
            or b.shape != (nd, nb * hs):
        raise IRError(f"inconsistent sequence shapes: X{list(x.shape)} W{list(w.shape)} "
                      f"R{list(r.shape)} B{list(b.shape)} (hidden_size {hs}, {nd} directions)")
    if len({v.dtype for v in (x, *hstates, w, r, b)}) != 1 or x.dtype.kind != "f":
        raise IRError("sequence inputs must share one floating-point type")
    return B, T


def _directions(a):
    d = a["direction"]
    return [False, True] if d == "bidirectional" else [d == "reverse"]


# --- whole sequences without per-step interpretation.  Each runner computes exactly
# the float operations of the step functions above, in the same order and on the same
# operands (so the results are bit-identical to stepping them), but with the step's
# temporaries allocated once per sequence, one sigmoid over all sigmoid gates at once
# (it is element-wise) and no per-step Python calls beyond the numpy ufuncs.  The
# input product x_t @ W.T stays per step: one matrix product over all steps rounds
# differently (BLAS takes other kernels for a matrix than for one row).
#
# A runner is ``run(xs [T, B, N], *states, ys, emit) -> final states``: with ``ys``
# ([T, B, M]) step k writes its h into ys[k] and carries it on; without, ``emit(k,
# *new_states)`` stores step k and returns the states to carry (padding steps).
def _sigmoid_into(z, w, d, out):
    """``out = _sigmoid(z)``, the same values: e = exp(-|z|); 1/(1+e) where z >= 0, else
    e/(1+e) -- whose numerator exp(min(z, 0)) is e for z < 0 (-|z| = z) and 1 for z >= 0.
    ``w`` [..., 2n] holds both exponents, so one exp call computes them."""
    n = z.shape[-1]
    num, e = w[..., :n], w[..., n:]
    np.minimum(z, 0, out=num)
    np.abs(z, out=e)
    np.negative(e, out=e)
    np.exp(w, out=w)
    np.add(e, 1, out=d)
    np.divide(num, d, out=out)


def _lstm_runner(hs, clip, w, r, b):
    wt, rt = w.T, r.T
    dot, add, mul, tanh = np.dot, np.add, np.multiply, np.tanh

    def run(xs, h, c, ys, emit):
        B = h.shape[0]
        z = np.empty((B, 4 * hs), h.dtype)
        w2, d, s = np.empty((B, 8 * hs), h.dtype), np.empty_like(z), np.empty_like(z)
        g, tmp = np.empty((B, hs), h.dtype), np.empty((B, hs), h.dtype)
        sf, si, so, zc = s[:, :hs], s[:, hs:2 * hs], s[:, 3 * hs:], z[:, 2 * hs:3 * hs]
        for k in range(len(xs)):
            add(dot(xs[k], wt), dot(h, rt), out=z)
            add(z, b, out=z)
            if clip > 0:
                np.clip(z, -clip, clip, out=z)
            _sigmoid_into(z, w2, d, s)
            tanh(zc, out=g)
            c_new = mul(sf, c)
            mul(si, g, out=tmp)
            add(c_new, tmp, out=c_new)
            tanh(c_new, out=tmp)
            if ys is not None:
                h = mul(so, tmp, out=ys[k])
                c = c_new
            else:
                h, c = emit(k, mul(so, tmp), c_new)
        return h, c
    return run


def _gru_runner(hs, clip, lbr, w, r, b):
    wt, rt, rnt = w.T, r.T, r[2 * hs:].T
    b_zr, b_n, b_rn = b[:2 * hs], b[2 * hs:3 * hs] if lbr else b[2 * hs:], b[3 * hs:]
    dot, add, mul = np.dot, np.add, np.multiply

    def run(xs, h, ys, emit):
        B = h.shape[0]
        zr = np.empty((B, 2 * hs), h.dtype)
        w2, d, s = np.empty((B, 4 * hs), h.dtype), np.empty_like(zr), np.empty_like(zr)
        zt, rt_ = s[:, :hs], s[:, hs:]
        for k in range(len(xs)):
            xw, hr = dot(xs[k], wt), dot(h, rt)
            add(xw[:, :2 * hs], hr[:, :2 * hs], out=zr)
            add(zr, b_zr, out=zr)
            if clip > 0:
                np.clip(zr, -clip, clip, out=zr)
            _sigmoid_into(zr, w2, d, s)
            if lbr:
                n = add(hr[:, 2 * hs:], b_rn)
                mul(rt_, n, out=n)
                add(xw[:, 2 * hs:], n, out=n)
            else:
                n = dot(mul(rt_, h), rnt)
                add(xw[:, 2 * hs:], n, out=n)
            add(n, b_n, out=n)
            if clip > 0:
                np.clip(n, -clip, clip, out=n)
            np.tanh(n, out=n)
            zh = mul(zt, h)
            if ys is not None:
                h = mul(np.subtract(1, zt), n, out=ys[k])
                add(h, zh, out=h)
            else:
                h_new = mul(np.subtract(1, zt), n)
                h = emit(k, add(h_new, zh, out=h_new))
        return h
    return run


def _rnn_runner(hs, clip, act, w, r, b):
    wt, rt = w.T, r.T
    dot, add = np.dot, np.add

    def run(xs, h, ys, emit):
        for k in range(len(xs)):
            z = add(dot(xs[k], wt), dot(h, rt))
            add(z, b, out=z)
            if clip > 0:
                np.clip(z, -clip, clip, out=z)
            if ys is not None:
                h = ys[k]
                h[...] = act(z)
            else:
                h = emit(k, act(z))
        return h
    return run


def _run_fast(runner, x, states, lengths, reverse, y):
    """Run ``runner`` over ``x [B, T, N]`` into ``y [B, T, M]`` with the semantics of
    :func:`run_sequence` (padding steps keep the state and leave y at 0); returns the
    final states."""
    B, T = x.shape[:2]
    idx, valid = step_order(lengths, T, reverse)
    if valid.all():
        xt = np.moveaxis(x, 1, 0)                     # [T, B, N], time-major
        xs = np.ascontiguousarray(xt[::-1] if reverse else xt)
        ys = np.empty((T,) + y.shape[:1] + y.shape[2:], y.dtype)
        final = runner(xs, *states, ys, None)
        y[...] = np.moveaxis(ys[::-1] if reverse else ys, 0, 1)
        return final
    rows = np.arange(B)
    xs = np.ascontiguousarray(np.moveaxis(x[rows[:, None], idx], 1, 0))
    vmask = [valid[:, k] for k in range(T)]
    vall = [bool(v.all()) for v in vmask]
    cur = list(states)

    def emit(k, *new):
        nonlocal cur
        v = vmask[k]
        if vall[k]:
            cur = list(new)
        else:
            cur = [np.where(v[:, None], n, s_) for n, s_ in zip(new, cur)]
        y[rows[v], idx[v, k]] = cur[0][v]
        return tuple(cur) if len(cur) > 1 else cur[0]
    return runner(xs, *states, None, emit)


_DEFAULTS = {3: ("sigmoid", "tanh", "tanh"), 2: ("sigmoid", "tanh"), 1: None}
_F32 = np.dtype(np.float32)
_C_CELL = {4: "lstm", 3: "gru", 1: "rnn"}     # by number of gates
_C_ACTS = ("tanh", "sigmoid", "relu")


def _default_acts(a, n_acts):
    """Whether the layer's activations are the op's defaults (RNN: any one of them),
    without alpha/beta: the whole-sequence runners compute only those."""
    names = tuple(x.lower() for x in a["activations"][:n_acts])
    plain = not a["activations_alpha"] and not a["activations_beta"]
    return plain and (_DEFAULTS[n_acts] is None or names == _DEFAULTS[n_acts])


def _compiled_spec(a, n_acts, gates, clip, dirs):
    """The C runner's spec (float32 with the default activations; RNN: tanh, sigmoid or
    relu), or None."""
    act = a["activations"][0].lower() if n_acts == 1 else "tanh"
    if not _default_acts(a, n_acts) or act not in _C_ACTS:
        return None
    return (_C_CELL[gates], act, bool(a.get("linear_before_reset", False)), float(clip), dirs)


def _c_array(v, dtype=None):
    """`v` as the C runner reads it: C-contiguous and aligned (an IR's weights can
    sit at any byte offset of its .bin; a misaligned float load is undefined in C).
    (An array that already is one is returned as is, as np.require does, without its
    cost.)"""
    if type(v) is np.ndarray and (dtype is None or v.dtype == dtype):
        f = v.flags
        if f.c_contiguous and f.aligned:
            return v
    return np.require(v, dtype, requirements=["C", "A"])


def _run_compiled(spec, x, hstates, lengths, w, r, b, hs):
    """The sequence in C (mli._core.float_rnn_sequence, float32, same formulas and
    semantics as the numpy runners; see csrc/src/kernels/mlipy_float_rnn.c)."""
    cell, act, lbr, clip, dirs = spec
    B, T = x.shape[:2]
    nd = len(dirs)
    y = np.empty((B, nd, T, hs), _F32)
    finals = [np.empty((B, nd, hs), _F32) for _ in hstates]
    lstm = cell == "lstm"
    _core.float_rnn_sequence(cell, act, lbr, clip, dirs, _c_array(x), _c_array(hstates[0]),
                             _c_array(hstates[1]) if lstm else None,
                             _c_array(lengths, np.int64), _c_array(w), _c_array(r),
                             _c_array(b), y, finals[0], finals[1] if lstm else None)
    return (y, *finals)


#: a C step transposes W and R again at every call: beyond about this many weights
#: that costs more than numpy's products save (measured: 8K weights 0.65x numpy's
#: time, 20K 1.2x, 130K 3.4x)
_C_STEP_MAX_WEIGHTS = 12288


def _c_step_pays(x, w, r):
    return x.dtype == _F32 and w.size + r.size <= _C_STEP_MAX_WEIGHTS


def _compiled_step(spec, x, states, w, r, b, hs):
    """One float32 cell step through the C sequence runner (a sequence of one step, so
    the same arithmetic as the Sequence ops): the new states, each [B, M]."""
    ones = np.ones(x.shape[0], np.int64)
    out = _run_compiled(spec, x[:, None], [s[:, None] for s in states], ones, w[None],
                        r[None], b[None], hs)
    return tuple(f[:, 0] for f in out[1:])


def _compiled_steps(spec, xs, states, weights, hs):
    """Every step's states of the cell over ``xs [n, B, N]``, each step one C call as
    :func:`_compiled_step` makes it (the same arithmetic), into preallocated stacks."""
    cell, act, lbr, clip, dirs = spec
    xs = _c_array(xs)
    n, B = xs.shape[:2]
    w, r, b = (_c_array(v[None]) for v in weights)
    ones = np.ones(B, np.int64)
    y = np.empty((B, 1, 1, hs), _F32)
    out = [np.empty((n, B, 1, hs), _F32) for _ in states]
    cur = [_c_array(s_[:, None]) for s_ in states]
    lstm = cell == "lstm"
    for k in range(n):
        new = [o[k] for o in out]
        _core.float_rnn_sequence(cell, act, lbr, clip, dirs, xs[k][:, None], cur[0],
                                 cur[1] if lstm else None, ones, w, r, b, y, new[0],
                                 new[1] if lstm else None)
        cur = new
    return [o[:, :, 0] for o in out], [o[n - 1, :, 0] for o in out]


def _sequence(layer, a, n_acts, gates, n_states, make_step, nb=None, make_runner=None):
    """Builder of a Sequence op: inputs X, initial states, sequence_lengths, W, R, B;
    outputs Y [B, dirs, T, M] and the final states [B, dirs, M].

    ``make_runner(acts, clip, hs, w, r, b)`` (or None) gives a whole-sequence runner for
    the activations it supports (default ones); other activations step ``make_step``."""
    acts, clip, hs = _cell_setup(layer, a, n_acts)
    dirs = _directions(a)
    nd = len(dirs)
    fast = make_runner if make_runner is not None and _default_acts(a, n_acts) else None
    compiled = _compiled_spec(a, n_acts, gates, clip, dirs) if fast is not None else None

    def fn(x, *rest):
        hstates, (lengths, w, r, b) = rest[:n_states], rest[n_states:]
        B, T = _check_seq(hs, gates, nd, x, hstates, w, r, b, nb)
        lengths = _seq_lengths(lengths, B, T)
        if compiled is not None and x.dtype == _F32:
            return _run_compiled(compiled, x, hstates, lengths, w, r, b, hs)
        if fast is not None:
            y = np.zeros((B, nd, T, hs), x.dtype)
            finals = [np.empty((B, nd, hs), x.dtype) for _ in range(n_states)]
            for d, reverse in enumerate(dirs):
                runner = fast(acts, clip, hs, w[d], r[d], b[d])
                st = _run_fast(runner, x, [h[:, d] for h in hstates], lengths, reverse,
                               y[:, d])
                for f_, s_ in zip(finals, st if n_states > 1 else (st,)):
                    f_[:, d] = s_
            return (y, *finals)
        ys, finals_ = [], [[] for _ in range(n_states)]
        for d, reverse in enumerate(dirs):
            step = make_step(acts, clip, hs, w[d], r[d], b[d])
            y, st = run_sequence(step, x, [h[:, d] for h in hstates], lengths, reverse)
            ys.append(y)
            for lst, s_ in zip(finals_, st):
                lst.append(s_)
        out = [np.stack(ys, axis=1)] + [np.stack(f, axis=1) for f in finals_]
        return tuple(arr(o.astype(x.dtype, copy=False)) for o in out)
    return fn


@register("LSTMSequence", {"opset5"}, **_cell_spec(["sigmoid", "tanh", "tanh"], _DIRECTION))
@ports(7, n_outputs=3)
def _lstm_sequence(layer, a, graph):
    return _sequence(layer, a, 3, 4, 2, lambda acts, clip, hs, w, r, b:
                     lambda x, h, c: lstm_step(acts, clip, hs, x, h, c, w, r, b),
                     make_runner=lambda acts, clip, hs, w, r, b:
                     _lstm_runner(hs, clip, w, r, b))


@register("GRUSequence", {"opset5"},
          **_cell_spec(["sigmoid", "tanh"], {**_DIRECTION,
                                             "linear_before_reset": (parse_bool, False)}))
@ports(6, n_outputs=2)
def _gru_sequence(layer, a, graph):
    lbr = a["linear_before_reset"]
    return _sequence(layer, a, 2, 3, 1, lambda acts, clip, hs, w, r, b:
                     lambda x, h: gru_step(acts, clip, hs, lbr, x, h, w, r, b),
                     nb=4 if lbr else 3, make_runner=lambda acts, clip, hs, w, r, b:
                     _gru_runner(hs, clip, lbr, w, r, b))


@register("RNNSequence", {"opset5"}, **_cell_spec(["tanh"], _DIRECTION))
@ports(6, n_outputs=2)
def _rnn_sequence(layer, a, graph):
    return _sequence(layer, a, 1, 1, 1, lambda acts, clip, hs, w, r, b:
                     lambda x, h: rnn_step(acts, clip, hs, x, h, w, r, b),
                     make_runner=lambda acts, clip, hs, w, r, b:
                     _rnn_runner(hs, clip, acts[0], w, r, b))
