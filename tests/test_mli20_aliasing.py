"""mli.v2 with outputs that share memory with other operands (issue 20, N25).

MLI 2.0.2 writes its outputs -- out at every step, an LSTM's cell at every
step, the gate values into cfg.scratch_data, each fully_connected / rnn_dense
output before it reads the next one's weights and bias -- while it still
reads its operands.  mli-py reads the operands ahead (packed weights, private
copies of h and the cell), so where a written region shares bytes with an
operand the two would compute different things.  mli-py reproduces the
layouts MLI itself documents or that fall out of its order (out over in, out
over prev_out, the LSTM cell over prev_out, tanh/sigm in place) and refuses
every other one: ``MliIncompatibleTensorsError`` with ``mlipy_safety``, the
written argument as ``argument`` and the other operand named in the message,
nothing written.

Each refused layout is also run through MLI 2.0.2's own library
(../shared/oracle_mli20/lib, through ctypes, over the same overlapping
buffers): MLI returns OK with an answer other than the "clean" one (every
operand in its own buffer), which is why mli-py refuses rather than answer.
"""
from __future__ import annotations

import numpy as np
import pytest

import mli
import mli.v2 as v2
from mli20_ctypes import AVAILABLE, SKIP_REASON, Oracle

DT = {v2.FX_8: np.int8, v2.FX_16: np.int16, v2.SA_8: np.int8, v2.SA_32: np.int32}
ESZ = {k: np.dtype(d).itemsize for k, d in DT.items()}
KIND_TYPES = {"fx16": (v2.FX_16, v2.FX_16, v2.FX_16), "fx16_fx8_fx8": (v2.FX_16, v2.FX_8, v2.FX_8),
              "sa8_sa8_sa32": (v2.SA_8, v2.SA_8, v2.SA_32), "fx8": (v2.FX_8, v2.FX_8, v2.FX_8),
              "sa8_sa8_sa32_ext_bias": (v2.SA_8, v2.SA_8, v2.SA_32)}
needs_oracle = pytest.mark.skipif(not AVAILABLE, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def oracle():
    """MLI 2.0.2's library (CONVERGENT), or None where ../shared is absent (then
    only mli-py's side of a test runs)."""
    return Oracle("conv") if AVAILABLE else None


def _values(rng, shape, el):
    hi = {v2.FX_16: 6000, v2.FX_8: 100, v2.SA_8: 100, v2.SA_32: 3000}[el]
    return rng.integers(-hi, hi, shape)


def _fmt(el, data_zp, fx):
    """frac bits (FX) or an SA triple."""
    if el in (v2.SA_8, v2.SA_32):
        return (data_zp, 16384, 28 if el == v2.SA_32 else 21)
    return fx


class Layout:
    """A call whose tensors (and scratch, and LUT objects) sit in one uint8
    arena; `alias` = (A, B, offset in bytes) puts A's bytes at B's start +
    offset.  roles: {name: (shape, el_type, values or None, frac or SA triple)};
    "scratch" and the LUT names are containers (bytes)."""

    def __init__(self, fn, roles, alias=None, scratch=0, luts=(), results=1, direction=0, act=1):
        self.fn, self.roles, self.alias = fn, roles, alias
        self.sizes = {r: int(np.prod(s)) * ESZ[el] for r, (s, el, _, _) in roles.items()}
        if scratch:
            self.sizes["scratch"] = scratch
        for name in luts:
            self.sizes[name] = 640 if self._lut_fn(name) == "sigm" else 688
        self.luts, self.results, self.direction, self.act = tuple(luts), results, direction, act
        pad = (max(self.sizes.values()) + 31) // 16 * 16
        self.start = {r: pad + 2 * pad * i for i, r in enumerate(self.sizes)}
        self.length = pad * (2 * len(self.sizes) + 1)
        if alias:
            a, b, off = alias
            self.start[a] = self.start[b] + off

    def _lut_fn(self, name):
        return "sigm" if name == "sigm_lut" or (name == "lut" and self.fn.startswith("sigm")) else "tanh"

    def initial(self, start=None):
        """The arena before the call: the values, then the LUT objects' tables."""
        start = start or self.start
        arena = np.zeros(self.length, np.uint8)
        order = [r for r in self.roles if not (self.alias and r == self.alias[0])]
        if self.alias and self.alias[0] in self.roles:
            order.append(self.alias[0])          # A's own values (a cell) over B's
        for r in order:
            shape, el, vals, _ = self.roles[r]
            if vals is not None:
                arena[start[r]:start[r] + self.sizes[r]] = np.asarray(vals, DT[el]).reshape(-1).view(np.uint8)
        for name in self.luts:
            lut = v2.Lut(self.sizes[name])
            lut.buffer = arena[start[name]:start[name] + self.sizes[name]].view(np.int16)
            getattr(v2, f"{self._lut_fn(name)}_create_lut")(lut)
        return arena

    def _objects(self, arena, start, side, oracle):
        t = {}
        for r, (shape, el, _, p) in self.roles.items():
            x = v2.Tensor(arena[start[r]:start[r] + self.sizes[r]], el, shape)
            if isinstance(p, tuple):
                x.set_sa(*p)
            else:
                x.frac_bits = p
            t[r] = x
        for name in self.luts:
            lut = v2.Lut(self.sizes[name])
            lut.buffer = arena[start[name]:start[name] + self.sizes[name]].view(np.int16)
            fn = self._lut_fn(name)
            if side == "mli":
                oracle.lut(fn, into=lut)
            else:
                getattr(v2, f"{fn}_create_lut")(lut)
            t[name] = lut
        if "scratch" in self.sizes:
            t["cfg"] = v2.RnnCellCfg(self.direction, self.results, self.act,
                                     arena[start["scratch"]:start["scratch"] + self.sizes["scratch"]])
        return t

    def args(self, t):
        g = t.get
        if self.fn.startswith(("tanh_", "sigm_")):
            return (g("in"), g("lut"), g("out"))
        if self.fn.startswith("fully_connected_"):
            return (g("in"), g("weights"), g("bias"), v2.FullyConnectedCfg(0), g("out"))
        if self.fn.startswith("rnn_dense_"):
            return ([g("in0"), g("in1")], [g("weights0"), g("weights1")], g("bias"), v2.RnnDenseCfg(2), g("out"))
        a = (g("in"), g("prev_out"), g("weights_in"), g("weights_out"), g("bias"), g("tanh_lut"), g("sigm_lut"),
             g("cfg"))
        return a + ((g("cell"),) if self.fn.startswith("lstm") else ()) + (g("out"),)

    def run(self, side, oracle=None, start=None, arena=None):
        """(status or the MliError, arena after the call)."""
        start = start or self.start
        arena = self.initial(start) if arena is None else arena
        args = self.args(self._objects(arena, start, side, oracle))
        if side == "mli":
            return oracle.call(self.fn, *args), arena
        try:
            getattr(v2, self.fn)(*args)
            return 0, arena
        except mli.MliError as e:
            return e, arena

    def written(self):
        """The regions the call writes in the "clean" semantics: out's rows, the cell."""
        shape, el, _, _ = self.roles["out"]
        rows = shape[0] if (self.results or not self.fn.startswith(("lstm", "gru"))) else 1
        n = rows * int(np.prod(shape[1:])) * ESZ[el]
        w = [("out", n)]
        if "cell" in self.roles:
            w.append(("cell", self.sizes["cell"]))
        return w

    def clean(self):
        """The arena as mli-py's answer with every operand in its own buffer
        (same initial bytes) would leave it: the outputs written over the
        initial arena, out first, then the cell."""
        init = self.initial()
        own = Layout(self.fn, self.roles, None, self.sizes.get("scratch", 0), self.luts, self.results,
                     self.direction, self.act).start
        sep = np.zeros(self.length, np.uint8)
        for r in self.roles:
            sep[own[r]:own[r] + self.sizes[r]] = init[self.start[r]:self.start[r] + self.sizes[r]]
        st, sep = self.run("ours", start=own, arena=sep)
        assert st == 0, st
        want = init.copy()
        for r, n in self.written():
            want[self.start[r]:self.start[r] + n] = sep[own[r]:own[r] + n]
        return want

    def mask(self, arena):
        """The scratch's own bytes (its content afterwards is not specified) when it is not aliased."""
        a = arena.copy()
        if "scratch" in self.sizes and not (self.alias and self.alias[0] == "scratch"):
            s = self.start["scratch"]
            a[s:s + self.sizes["scratch"]] = 0
        return a


# ---------------------------------------------------------------------------- the calls

def cell_roles(cell_kind, kind, T=3, N=2, M=3, seed=0):
    rng = np.random.default_rng(seed)
    G = 4 if cell_kind == "lstm" else 3
    d, w, b = KIND_TYPES[kind]
    wf = 14 if w == v2.FX_16 else 7
    r = {"in": ((T, N), d, _values(rng, (T, N), d), _fmt(d, 3, 13)),
         "prev_out": ((M,), d, _values(rng, (M,), d), _fmt(d, -4, 15)),
         "weights_in": ((G, N, M), w, _values(rng, (G, N, M), w), _fmt(w, 0, wf)),
         "weights_out": ((G, M, M), w, _values(rng, (G, M, M), w), _fmt(w, 0, wf)),
         "bias": ((G, M), b, _values(rng, (G, M), b), _fmt(b, 0, 12))}
    if G == 4:
        r["cell"] = ((M,), d, _values(rng, (M,), d), _fmt(d, 2, 12))
    r["out"] = ((T, M), d, None, _fmt(d, -3, 15))
    return r, G * M * ESZ[d]


def cell_layout(cell_kind, kind, alias, results=1, direction=0, luts=(), **kw):
    roles, scratch = cell_roles(cell_kind, kind, **kw)
    return Layout(f"{cell_kind}_cell_{kind}", roles, alias, scratch, luts, results, direction)


def fc_layout(kind, alias, N=5, M=4, seed=0):
    rng = np.random.default_rng(seed)
    d, w, b = KIND_TYPES[kind]
    wf = 14 if w == v2.FX_16 else 7
    roles = {"in": ((N,), d, _values(rng, (N,), d), _fmt(d, 3, 10)),
             "weights": ((N, M), w, _values(rng, (N, M), w), _fmt(w, 0, wf)),
             "bias": ((M,), b, _values(rng, (M,), b), _fmt(b, 0, 9)),
             "out": ((M,), d, None, _fmt(d, -2, 8))}
    return Layout(f"fully_connected_{kind}", roles, alias)


def dense_layout(kind, alias, N=3, M=4, seed=0):
    rng = np.random.default_rng(seed)
    d, w, b = KIND_TYPES[kind]
    wf = 14 if w == v2.FX_16 else 7
    roles = {"in0": ((N,), d, _values(rng, (N,), d), _fmt(d, 3, 10)),
             "in1": ((N,), d, _values(rng, (N,), d), _fmt(d, 3, 10)),
             "weights0": ((N, M), w, _values(rng, (N, M), w), _fmt(w, 0, wf)),
             "weights1": ((N, M), w, _values(rng, (N, M), w), _fmt(w, 0, wf)),
             "bias": ((M,), b, _values(rng, (M,), b), _fmt(b, 0, 9)),
             "out": ((M,), d, None, _fmt(d, -2, 8))}
    return Layout(f"rnn_dense_{kind}", roles, alias)


def act_layout(fn, kind, alias):
    rng = np.random.default_rng(0)
    el = KIND_TYPES["fx8" if kind == "fx8" else kind if kind == "fx16" else "sa8_sa8_sa32"][0]
    roles = {"in": ((2, 5), el, _values(rng, (2, 5), el), _fmt(el, 3, 10)),
             "out": ((2, 5), el, None, _fmt(el, 0, 0))}
    return Layout(f"{fn}_{kind}", roles, alias, luts=("lut",))


def _assert_refused(lay, writer, other):
    before = lay.initial()
    err, after = lay.run("ours")
    assert isinstance(err, mli.MliIncompatibleTensorsError), err
    assert err.mlipy_safety and err.argument == writer
    assert f"overlaps {other}" in str(err) and "MLI 2.0.2 would not detect this" in str(err)
    assert np.array_equal(after, before)              # nothing written (LUT storage aside)
    return err


def _assert_mli_differs(lay, oracle):
    if oracle is None:
        return                                        # (../shared absent: mli-py's side only)
    st, mli_arena = lay.run("mli", oracle)
    assert st == 0                                    # MLI accepts the call ...
    assert not np.array_equal(lay.mask(mli_arena), lay.mask(lay.clean()))   # ... with another answer


# ---------------------------------------------------------------------------- the auditor's example

@needs_oracle
def test_lstm_cell_on_outs_buffer_the_audit_example(oracle):
    """The call of the audit: mli-py answered [844, -287, 2624, -1311, 3392, -1175]
    with OK; MLI 2.0.2 reads the cell it wrote into out's rows at every step."""
    T, M = 3, 2
    x = v2.Tensor.fx([[4000, -3000], [1000, 2000], [-5000, 700]], 13)
    h0 = v2.Tensor.fx([3000, -2000], 15)
    wi = v2.Tensor.fx([[[5000, -4000], [3000, 2000]], [[-6000, 1000], [2500, -3500]],
                       [[4500, 1500], [-2000, 6000]], [[1000, -1000], [7000, 3000]]], 14)
    wo = v2.Tensor.fx([[[2000, 1000], [-3000, 4000]], [[1500, -2500], [3500, 500]],
                       [[-1000, 2000], [4000, -1500]], [[3000, 3000], [-2000, 1000]]], 14)
    b = v2.Tensor.fx([[100, -200], [300, 50], [-150, 250], [80, -60]], 12)

    def call(run):
        buf = np.zeros(T * M, np.int16)
        buf[:M] = [2500, -1200]
        cell = v2.Tensor(buf, v2.FX_16, (M,), frac_bits=12)
        out = v2.Tensor(buf, v2.FX_16, (T, M), frac_bits=15)
        return run(x, h0, wi, wo, b, None, None, v2.RnnCellCfg(0, 1, 1, np.zeros(64, np.uint8)), cell, out), buf

    with pytest.raises(mli.MliIncompatibleTensorsError, match="overlaps") as e:
        call(v2.lstm_cell_fx16)
    assert e.value.mlipy_safety and e.value.argument in ("out", "cell")
    st, buf = call(lambda *a: oracle.call("lstm_cell_fx16", *a))
    assert st == 0 and buf.tolist() == [1414, -663, 7704, -3765, 5646, -2727]


# ---------------------------------------------------------------------------- refused layouts

CELL_KINDS = ["fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"]
# (cell kind, A, B, byte offset of A from B's start) -- the layouts the audit listed, then the
# other overlaps of a written region with an operand
REFUSED_CELL = [
    ("lstm", "cell", "out", 0), ("lstm", "out", "cell", 0), ("lstm", "cell", "out", 2),
    ("lstm", "out", "weights_in", 0), ("lstm", "out", "weights_out", 0), ("lstm", "out", "bias", 0),
    ("gru", "out", "weights_in", 0), ("gru", "out", "weights_out", 0), ("gru", "out", "bias", 0),
    ("lstm", "scratch", "out", 0), ("lstm", "scratch", "weights_in", 0), ("lstm", "scratch", "bias", 0),
    ("gru", "scratch", "out", 0), ("gru", "scratch", "weights_in", 0), ("gru", "scratch", "bias", 0),
    # beyond the audit's list
    ("lstm", "cell", "in", 0), ("lstm", "cell", "weights_in", 2), ("lstm", "cell", "weights_out", 0),
    ("lstm", "cell", "bias", 0), ("lstm", "scratch", "prev_out", 0), ("lstm", "scratch", "weights_out", 0),
    ("lstm", "scratch", "cell", 0), ("gru", "scratch", "prev_out", 0), ("gru", "scratch", "weights_out", 0),
    ("gru", "out", "prev_out", 2),       # the GRU writes z*h into out's row while it still reads h
]
ARG = {"out": "out", "cell": "cell", "scratch": "cfg"}


def _named(a, b):
    """(argument, the other operand in the message) of the refusal of A over B:
    out is checked first, then the cell, then the scratch (argument cfg)."""
    return ("out", "cell") if {a, b} == {"out", "cell"} else (ARG[a], b)


@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("results", [1, 0], ids=["ALL", "LAST"])
@pytest.mark.parametrize("cell_kind, a, b, off", REFUSED_CELL, ids=[f"{c}-{a}-over-{b}-{o}" for c, a, b, o in REFUSED_CELL])
def test_cell_layout_is_refused(cell_kind, a, b, off, results, kind):
    lay = cell_layout(cell_kind, kind, (a, b, off), results=results)
    writer, other = _named(a, b)
    _assert_refused(lay, writer, other)


@needs_oracle
@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("results", [1, 0], ids=["ALL", "LAST"])
@pytest.mark.parametrize("cell_kind, a, b, off", REFUSED_CELL, ids=[f"{c}-{a}-over-{b}-{o}" for c, a, b, o in REFUSED_CELL])
def test_mli_answers_a_refused_cell_layout_otherwise(cell_kind, a, b, off, results, kind, oracle):
    if (a, b, kind) == ("cell", "bias", "sa8_sa8_sa32"):
        pytest.skip("MLI's sa8 cell reads the bias once per call: the same answer here (refused all the same)")
    _assert_mli_differs(cell_layout(cell_kind, kind, (a, b, off), results=results), oracle)


def _sweep(make, a, b, writer, other, oracle, step=1):
    """Every placement of A over B that shares a byte (offsets in steps of
    `step`): refused by mli-py; and MLI, given the same placements, answers
    other than the clean answer for some of them (which ones depends on its
    order of reads and writes and on the data)."""
    plain = make(None)
    na, nb = plain.sizes[a], plain.sizes[b]
    differs = 0
    for off in range(-na + 1, nb, step):
        lay = make((a, b, off))
        _assert_refused(lay, writer, other)
        if oracle is not None:
            st, theirs = lay.run("mli", oracle)
            assert st == 0
            differs += not np.array_equal(lay.mask(theirs), lay.mask(lay.clean()))
    assert oracle is None or differs


@pytest.mark.parametrize("lut", ["tanh_lut", "sigm_lut"])
@pytest.mark.parametrize("cell_kind, a", [("lstm", "out"), ("lstm", "cell"), ("lstm", "scratch"), ("gru", "out"),
                                          ("gru", "scratch")])
def test_cell_output_over_a_lut_is_refused(cell_kind, a, lut, oracle):
    _sweep(lambda al: cell_layout(cell_kind, "fx16", al, luts=("tanh_lut", "sigm_lut"), T=6),
           a, lut, ARG[a], lut, oracle, step=6)


FC_KINDS = ["fx16", "fx16_fx8_fx8", "fx8", "sa8_sa8_sa32", "sa8_sa8_sa32_ext_bias"]


@pytest.mark.parametrize("kind", FC_KINDS)
@pytest.mark.parametrize("b", ["weights", "bias"])
def test_fully_connected_out_over_weights_or_bias_is_refused(kind, b, oracle):
    _sweep(lambda al: fc_layout(kind, al), "out", b, "out", b, oracle)


def test_fully_connected_fx16_fx8_fx8_out_on_weights_the_audit_layout(oracle):
    """out at the start of weights: each 16-bit output covers the 8-bit weights
    of the next output, which MLI reads after writing it."""
    lay = fc_layout("fx16_fx8_fx8", ("out", "weights", 0))
    _assert_refused(lay, "out", "weights")
    _assert_mli_differs(lay, oracle)


@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("b", ["weights0", "weights1", "bias"])
def test_rnn_dense_out_over_weights_or_bias_is_refused(kind, b, oracle):
    name = b if b == "bias" else f"weights[{b[-1]}]"
    _sweep(lambda al: dense_layout(kind, al), "out", b, "out", name, oracle)


@pytest.mark.parametrize("fn", ["tanh", "sigm"])
@pytest.mark.parametrize("kind", ["fx16", "fx8", "sa8"])
def test_transfer_out_over_its_lut_is_refused(fn, kind, oracle):
    _sweep(lambda al: act_layout(fn, kind, al), "out", "lut", "out", "lut", oracle, step=2)


# ---------------------------------------------------------------------------- layouts kept

KEPT_CELL = [("lstm", "out", "in", 0), ("lstm", "out", "in", 4), ("gru", "out", "in", 0), ("gru", "out", "in", 4),
             ("lstm", "out", "prev_out", 0), ("lstm", "out", "prev_out", 2), ("lstm", "prev_out", "out", 0),
             ("lstm", "prev_out", "out", 2), ("gru", "out", "prev_out", 0), ("gru", "prev_out", "out", 0),
             ("gru", "prev_out", "out", 2), ("lstm", "cell", "prev_out", 0), ("lstm", "cell", "prev_out", 2),
             ("lstm", "prev_out", "cell", 2)]


@needs_oracle
@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("results", [1, 0], ids=["ALL", "LAST"])
@pytest.mark.parametrize("direction", [0, 1], ids=["FWD", "BWD"])
@pytest.mark.parametrize("cell_kind, a, b, off", KEPT_CELL, ids=[f"{c}-{a}-over-{b}-{o}" for c, a, b, o in KEPT_CELL])
def test_reproduced_cell_layout_matches_mli(cell_kind, a, b, off, results, direction, kind, oracle):
    """out over in, out over prev_out (the GRU: out starting at or before prev_out),
    the LSTM cell over prev_out: computed, bit for bit what MLI computes."""
    lay = cell_layout(cell_kind, kind, (a, b, off), results=results, direction=direction)
    st, ours = lay.run("ours")
    st_m, theirs = lay.run("mli", oracle)
    assert st == 0 and st_m == 0
    assert np.array_equal(lay.mask(ours), lay.mask(theirs))


def test_separate_buffers_are_not_refused():
    """The overlap test compares byte ranges: operands side by side in one
    arena (no shared byte) compute as usual."""
    for cell_kind in ("lstm", "gru"):
        lay = cell_layout(cell_kind, "fx16", None)
        st, _ = lay.run("ours")
        assert st == 0
