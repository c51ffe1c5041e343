"""The C core of mli.v2 against the slow numpy model of MLI 2.0.2
(mli.reference.mli2), on random calls, exactly.

Each call is drawn as a case of schema mli20 (../shared/vectors/mli20/README.md):
shapes with sizes 1, odd and above 16; row strides with holes where the API
allows them; FX frac bits (negative and above 15 too); sa8 zero points, scales
and scale_frac_bits per tensor and per axis; data at the extremes of its type;
both rounding modes; every ISA path of this CPU; and in a good share of the
calls one or two broken requirements (the status must be that of MLI's first
failing check).  The reference runs the case (mli.reference.mli2_cases) and
its answer becomes the case's expected fields; mli.v2.cases then runs it on the
C core and compares status, LUT-creation statuses, output elements, output
metadata, LSTM cell and every other byte of every container.  Calls on which
MLI itself crashes (the reference raises ValueError) must be refused by the C
core as mli-py safety checks.

A failing example prints the case; ``_save(case, path)`` writes it as an .npz
for ``../shared/oracle_mli20/fill_expected.py``, which gives MLI's own answer.
Disagreements settled that way are kept as regression tests at the end.
"""
import io
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mli
import mli.v2 as v
from mli.reference import mli2 as R
from mli.reference.mli2.fxmath import _i
from mli.reference.mli2.tensor import _offsets
from mli.reference.mli2_cases import run_case as ref_run
from mli.v2 import _core2, cases

FX_8, FX_16, SA_8, SA_32 = R.FX_8, R.FX_16, R.SA_8, R.SA_32
CONTAINER = {FX_8: np.int8, SA_8: np.int8, FX_16: np.int16, SA_32: np.int32}
ROUNDINGS = st.sampled_from(["convergent", "up"])
ISAS = st.sampled_from(mli.supported_isas())
# sizes: 1, small odd/even, around 16, and a few long rows
SIZES = st.one_of(st.sampled_from([1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33]), st.integers(1, 40),
                  st.sampled_from([64, 100, 300]))
SMALL = st.integers(1, 6)


# MLI20_HYPOTHESIS_SCALE=k: k times the examples, freshly random (a longer local search)
SCALE = int(os.environ.get("MLI20_HYPOTHESIS_SCALE", "0") or 0)


def examples(n):
    """n examples, the same ones on every run (CI reproducible), no time limit."""
    return settings(max_examples=n * max(SCALE, 1), deadline=None, derandomize=not SCALE, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _i8(v):
    """A derived frac_bits / scale_frac_bits (int8 in C) kept in range."""
    return max(-128, min(127, int(v)))


def _int(v):
    return [int(x) for x in v] if isinstance(v, (list, tuple, np.ndarray)) else int(v)


# ---------------------------------------------------------------------------
# Building one case

def _layout(dims, pads):
    """(strides, span in elements): MLI's rule stride[i] >= shape[i+1] * stride[i+1],
    each stride widened by its pad."""
    strides = [0] * len(dims)
    for i in range(len(dims) - 1, -1, -1):
        strides[i] = (1 if i == len(dims) - 1 else dims[i + 1] * strides[i + 1]) + pads[i]
    return strides, 1 + sum((d - 1) * s for d, s in zip(dims, strides))


class Case:
    """meta + arrays of one mli20 case, built role by role."""

    def __init__(self, kernel, kind, rng):
        self.meta = {"schema": "mli20", "schema_version": 1, "case_id": "hyp", "kernel": kernel, "kind": kind,
                     "func": f"mli_krn_{kernel}_{kind}", "args": [], "description": "hypothesis", "tags": []}
        self.arrays = {}
        self.rng = rng
        self.kernel, self.kind = kernel, kind

    def values(self, shape, el_type, style):
        """Random elements of `shape`: full range, small, tie-prone, only the extremes, or
        (sa32 "bias") within 2^20."""
        info = np.iinfo(CONTAINER[el_type])
        lo, hi = int(info.min), int(info.max)
        if style == "small":
            lo, hi = max(lo, -100), min(hi, 100)
        elif style == "ties":          # small values: short shifts land on exact halves often
            lo, hi = -6, 6
        elif style == "bias":          # 32-bit biases kept where the plain 32-bit additions cannot wrap
            lo, hi = -(1 << 20), 1 << 20
        v = self.rng.integers(lo, hi, size=shape, endpoint=True)
        if style == "extreme":
            v = self.rng.choice(np.array([info.min, info.max, info.min + 1, info.max - 1, 0, -1, 1]), size=shape)
        return v

    def tensor(self, role, el_type, values, pads=None, slack=0, frac=None, sa=None):
        """Lay `values` out with row strides widened by `pads` (elements per
        dimension; the innermost entry widens the element stride), holes filled
        with random bytes, `slack` extra elements of capacity."""
        values = np.asarray(values)
        dims = list(values.shape)
        rank = len(dims)
        pads = list(pads or [0] * rank)
        strides, span = _layout(dims, pads)
        dt = CONTAINER[el_type]
        info = np.iinfo(dt)
        buf = self.rng.integers(info.min, info.max, size=span + slack, endpoint=True).astype(dt)
        if rank:
            buf[_offsets(dims, strides).reshape(-1)] = values.reshape(-1)
        else:
            buf[0] = values
        m = self.meta
        m[f"{role}_null"] = False
        m[f"{role}_el_type"] = el_type
        m[f"{role}_rank"] = rank
        m[f"{role}_shape"] = (dims + [0] * 4)[:4]
        m[f"{role}_mem_stride"] = (strides + [0] * 4)[:4]
        m[f"{role}_capacity"] = int(buf.nbytes)
        m[f"{role}_data_null"] = False
        if el_type in (SA_8, SA_32):
            zp, scale, sfb, dim = sa
            m[f"{role}_sa_type"] = 0
            m[f"{role}_sa_dim"] = dim
            m[f"{role}_zero_point"], m[f"{role}_scale"], m[f"{role}_scale_frac_bits"] = (
                _int(np.atleast_1d(zp)), _int(np.atleast_1d(scale)), _int(np.atleast_1d(sfb)))
            n = len(m[f"{role}_scale"]) if dim >= 0 else 0
            m[f"{role}_zero_point_capacity"], m[f"{role}_scale_capacity"] = 2 * n, 2 * n
            m[f"{role}_scale_frac_bits_capacity"] = n
        else:
            m[f"{role}_frac_bits"] = int(frac)
        self.arrays[f"{role}_data"] = buf
        m["args"].append(role)

    def __repr__(self):
        skip = ("schema", "schema_version", "case_id", "description", "tags", "func")
        arrays = {k: a.tolist() for k, a in self.arrays.items()}
        return f"Case({_jsonable({k: v for k, v in self.meta.items() if k not in skip})}, arrays={arrays})"

    def roles(self):
        return [r for r in self.meta["args"] if not self.meta.get(f"{r}_null")]


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def _npz(meta, arrays):
    f = io.BytesIO()
    np.savez(f, meta_json=np.array(json.dumps(_jsonable(meta))), **arrays)
    f.seek(0)
    return f


def _save(case, path):
    """Write the inputs of `case` (no expected fields) for fill_expected.py."""
    meta = {k: v for k, v in case.meta.items() if not k.startswith("expected") and k != "output_defined"}
    with open(path, "wb") as fh:
        fh.write(_npz(meta, {k: v for k, v in case.arrays.items() if not k.startswith("expected")}).getvalue())


# ---------------------------------------------------------------------------
# Drawing quantisation parameters

def fx_frac(draw, lo=-3, hi=18):
    return draw(st.one_of(st.integers(lo, hi), st.sampled_from([0, 7, 15])))


def sa_scale(draw):
    return draw(st.one_of(st.integers(1, 32767), st.sampled_from([1, 2, 16384, 32767, 32766, 32763])))


def sa_sfb(draw):
    return draw(st.one_of(st.integers(8, 30), st.sampled_from([0, 1, 31, 40, -2])))


def sa_data_params(draw):
    zp = draw(st.one_of(st.integers(-128, 127), st.sampled_from([-128, 127, 0])))
    return zp, sa_scale(draw), sa_sfb(draw)


def bias_params(draw, s_in, f_in, s_w, f_w, rounding):
    """(scale, scale_frac_bits) of an sa32 bias that MLI's bias-scale check accepts
    for input (s_in, f_in) and weights (s_w, f_w): in.scale * w.scale within 1."""
    prod = s_in * s_w
    sh = max(prod.bit_length() - 15, 0) + draw(st.sampled_from([0, 0, 0, 1, 3]))
    f_b = f_in + f_w - sh
    if not -128 <= f_b <= 127:
        sh = f_in + f_w - max(min(f_b, 127), -128)
        f_b = f_in + f_w - sh
    e = _i(R.rshr(prod, sh, 32, rounding)) if sh > 0 else prod << -sh
    s_b = e + draw(st.sampled_from([0, 0, 0, 1, -1]))
    if not 1 <= s_b <= 32767:
        s_b = min(max(e, 1), 32767)
    return s_b, f_b


# ---------------------------------------------------------------------------
# Invalid arguments: one requirement broken per mutation (MLI reports the first failing check)

def _other_type(draw, t):
    return draw(st.sampled_from([x for x in (FX_8, FX_16, SA_8, SA_32) if x != t]))


def mutate(draw, case, roles):
    """Break one requirement of the call (or make a variant MLI may accept)."""
    m = case.meta
    what = draw(st.sampled_from(["data_null", "zero_dim", "rank5", "rank_minus", "rank_plus", "stride0",
                                 "stride_neg", "inner_stride", "outer_stride", "capacity", "el_type", "shape",
                                 "frac", "sa", "cfg", "cfg", "cfg"]))
    role = draw(st.sampled_from(roles))
    rank = min(m[f"{role}_rank"], 4)   # a rank already broken (5) keeps its 4 stored entries
    k = draw(st.integers(0, max(rank - 1, 0)))
    if what == "data_null":
        m[f"{role}_data_null"] = True
    elif what == "zero_dim" and rank:
        m[f"{role}_shape"][k] = 0
    elif what == "rank5":
        m[f"{role}_rank"] = 5
    elif what == "rank_minus" and rank:
        m[f"{role}_rank"] = rank - 1
    elif what == "rank_plus" and rank < 4:
        m[f"{role}_rank"] = rank + 1
        m[f"{role}_shape"][rank] = draw(st.sampled_from([1, 2]))
        m[f"{role}_mem_stride"][rank] = 1
    elif what == "stride0" and rank:
        m[f"{role}_mem_stride"][k] = 0
    elif what == "stride_neg" and rank:
        m[f"{role}_mem_stride"][k] = -1
    elif what == "inner_stride" and rank:
        m[f"{role}_mem_stride"][rank - 1] = 2
    elif what == "outer_stride" and rank > 1:       # rows overlapping, or wider rows
        m[f"{role}_mem_stride"][k] = max(m[f"{role}_mem_stride"][k] + draw(st.sampled_from([-1, 1])), 1)
    elif what == "capacity":
        m[f"{role}_capacity"] = max(m[f"{role}_capacity"] - draw(st.sampled_from([1, 2, 4])), 0)
    elif what == "el_type":
        t = _other_type(draw, m[f"{role}_el_type"])
        m[f"{role}_el_type"] = t
        if t in (SA_8, SA_32) and f"{role}_sa_dim" not in m:
            m.update({f"{role}_sa_type": 0, f"{role}_sa_dim": -1, f"{role}_zero_point": [0],
                      f"{role}_scale": [1], f"{role}_scale_frac_bits": [0], f"{role}_zero_point_capacity": 0,
                      f"{role}_scale_capacity": 0, f"{role}_scale_frac_bits_capacity": 0})
        if t in (FX_8, FX_16) and f"{role}_frac_bits" not in m:
            m[f"{role}_frac_bits"] = 0
    elif what == "shape" and rank:
        m[f"{role}_shape"][k] += draw(st.sampled_from([1, -1])) if m[f"{role}_shape"][k] > 1 else 1
    elif what == "frac" and f"{role}_frac_bits" in m:
        m[f"{role}_frac_bits"] = draw(st.sampled_from([_i8(m[f"{role}_frac_bits"] + 1), 40, -20, 127, -128]))
    elif what == "sa" and f"{role}_sa_dim" in m:
        how = draw(st.sampled_from(["zp", "zp_data", "scale0", "scale_neg", "dim_high", "per_axis", "per_tensor",
                                    "cap_small", "cap_set", "bias_scale"]))
        n = len(m[f"{role}_scale"])
        i = draw(st.integers(0, n - 1))
        if how == "zp":
            m[f"{role}_zero_point"][i] = draw(st.sampled_from([1, -1, 5]))
        elif how == "zp_data":
            m[f"{role}_zero_point"][i] = draw(st.sampled_from([128, -129, 300, -32768]))
        elif how == "scale0":
            m[f"{role}_scale"][i] = 0
        elif how == "scale_neg":
            m[f"{role}_scale"][i] = -5
        elif how == "dim_high":
            m[f"{role}_sa_dim"] = max(rank, 0) + draw(st.sampled_from([0, 1]))
        elif how == "per_axis" and rank and m[f"{role}_sa_dim"] < 0:
            d = draw(st.integers(0, rank - 1))
            size = m[f"{role}_shape"][d]
            if 0 < size <= 512:
                m[f"{role}_sa_dim"] = d
                for p in ("zero_point", "scale", "scale_frac_bits"):
                    m[f"{role}_{p}"] = m[f"{role}_{p}"][:1] * size
                m[f"{role}_zero_point_capacity"] = m[f"{role}_scale_capacity"] = 2 * size
                m[f"{role}_scale_frac_bits_capacity"] = size
        elif how == "per_tensor" and m[f"{role}_sa_dim"] >= 0:
            m[f"{role}_sa_dim"] = -1
            for p in ("zero_point", "scale", "scale_frac_bits"):
                m[f"{role}_{p}"] = m[f"{role}_{p}"][:1]
                m[f"{role}_{p}_capacity"] = 0
        elif how == "cap_small" and m[f"{role}_sa_dim"] >= 0:
            p = draw(st.sampled_from(["zero_point", "scale", "scale_frac_bits"]))
            m[f"{role}_{p}_capacity"] -= 1
        elif how == "cap_set" and m[f"{role}_sa_dim"] < 0:
            p = draw(st.sampled_from(["zero_point", "scale", "scale_frac_bits"]))
            m[f"{role}_{p}_capacity"] = 2
        elif how == "bias_scale":
            m[f"{role}_scale"][i] = max(1, min(32767, m[f"{role}_scale"][i] + draw(st.sampled_from([2, -2, 100]))))
    elif what == "cfg":
        mutate_cfg(draw, case)


def mutate_cfg(draw, case):
    m, kernel = case.meta, case.kernel
    if kernel == "fully_connected":
        m["cfg_null"] = True
    elif kernel == "rnn_dense":
        how = draw(st.sampled_from(["null", "zero", "five", "more", "fewer", "out_null"]))
        n = m["cfg_inputs_num"]
        if how == "null":
            m["cfg_null"] = True
        elif how == "out_null":         # MLI dereferences it: a safety refusal of mli-py
            m["out_null"] = True
        else:
            m["cfg_inputs_num"] = {"zero": 0, "five": 5, "more": min(n + 1, 4), "fewer": max(n - 1, 1)}[how]
    elif kernel in ("lstm_cell", "gru_cell"):
        how = draw(st.sampled_from(["null", "scratch_small", "scratch_null", "scratch_in", "tanh_lut_small",
                                    "sigm_lut_small", "other_lut", "out_small"]))
        if how == "null":               # MLI dereferences it: a safety refusal of mli-py
            m["cfg_null"] = True
        elif how == "scratch_small":
            m["cfg_scratch_capacity"] -= 1
        elif how == "scratch_null":
            m["cfg_scratch_null"] = True
        elif how == "scratch_in":
            m["cfg_scratch_overlaps_in"] = True
        elif how == "tanh_lut_small":
            m["tanh_lut_capacity"] = 600
        elif how == "sigm_lut_small":
            m["sigm_lut_capacity"] = 639
        elif how == "other_lut":        # MLI uses whatever table it is given
            m["tanh_lut_from"], m["sigm_lut_from"] = m["sigm_lut_from"], m["tanh_lut_from"]
            m["tanh_lut_capacity"], m["sigm_lut_capacity"] = 688, 688
        elif how == "out_small":
            m["out_capacity"] -= 1
    else:
        how = draw(st.sampled_from(["other_lut", "rank0"]))
        if how == "other_lut":
            m["lut_from"] = "sigm" if case.kernel == "tanh" else "tanh"
            m["lut_capacity"] = 688
        else:                           # MLI reads the stored value as an address: a safety refusal
            for r in ("in", "out"):
                m[f"{r}_rank"] = 0


def maybe_mutate(draw, case, roles):
    for _ in range(draw(st.sampled_from([0, 0, 0, 0, 0, 1, 1, 2]))):
        mutate(draw, case, roles)
    return case


# ---------------------------------------------------------------------------
# Drawing calls, kernel by kernel

def _pads(draw, rank, inner=False):
    """Row-stride padding per dimension (innermost only when `inner`)."""
    if not draw(st.booleans()):
        return [0] * rank
    return [draw(st.sampled_from([0, 0, 1, 3])) if (i < rank - 1 or inner) else 0 for i in range(rank)]


def _style(draw):
    return draw(st.sampled_from(["full", "full", "small", "extreme", "ties"]))


def _out_shift(draw, style):
    """in + weights frac bits minus out's: short in the "ties" style (halves are then common)."""
    return draw(st.sampled_from([1, 1, 2, 3])) if style == "ties" else draw(st.integers(0, 30))


TIE_SCALE = 16384   # "ties" style sa8: every scale 2^14, so each input's multiplier is 2^-k


@st.composite
def transfer_calls(draw):
    kernel = draw(st.sampled_from(["tanh", "sigm"]))
    kind = draw(st.sampled_from(["fx8", "fx16", "sa8"]))
    case = Case(kernel, kind, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    el = {"fx8": FX_8, "fx16": FX_16, "sa8": SA_8}[kind]
    rank = draw(st.integers(1, 4))
    dims = [draw(SIZES)] if rank == 1 else [draw(SMALL) for _ in range(rank - 1)] + [draw(SIZES)]
    x = case.values(dims, el, _style(draw))
    frac = fx_frac(draw, -4, 20)
    sa = (*sa_data_params(draw), -1)
    in_pads, slack = _pads(draw, rank), draw(st.integers(0, 3))
    in_place = draw(st.integers(0, 4)) == 0
    out_pads = _pads(draw, rank) if in_place and draw(st.booleans()) else in_pads
    if in_place:                         # in's container must hold out's layout too
        slack += max(_layout(dims, out_pads)[1] - _layout(dims, in_pads)[1], 0)
    case.tensor("in", el, x, in_pads, slack, frac=frac, sa=sa)
    if in_place:     # out is in's container: the same layout, or other strides (MLI goes element by element)
        case.meta["out_aliases_in"] = True
        m = case.meta
        for f in ("null", "el_type", "rank", "shape", "capacity", "data_null"):
            m[f"out_{f}"] = m[f"in_{f}"] if not isinstance(m[f"in_{f}"], list) else list(m[f"in_{f}"])
        m["out_mem_stride"] = (_layout(dims, out_pads)[0] + [0] * 4)[:4]
        if kind == "sa8":
            m.update({"out_sa_type": 0, "out_sa_dim": -1, "out_zero_point": [0], "out_scale": [1],
                      "out_scale_frac_bits": [0], "out_zero_point_capacity": 0, "out_scale_capacity": 0,
                      "out_scale_frac_bits_capacity": 0})
        else:
            m["out_frac_bits"] = 0
        m["args"].append("out")
    else:
        case.tensor("out", el, np.zeros(dims, np.int64), _pads(draw, rank), draw(st.integers(0, 3)),
                    frac=draw(st.integers(-5, 20)), sa=(3, 7, 2, -1))
    case.meta["lut_from"] = kernel
    case.meta["lut_capacity"] = 688 if kernel == "tanh" else 640
    return maybe_mutate(draw, case, case.roles())


@st.composite
def fc_calls(draw, rounding):
    kind = draw(st.sampled_from(R.KERNEL_KINDS["fully_connected"]))
    case = Case("fully_connected", kind, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    d_t, w_t, b_t = R.KIND_TYPES[kind]
    in_dims = draw(st.one_of(st.lists(SIZES, min_size=1, max_size=1), st.lists(SMALL, min_size=2, max_size=3)))
    n, m_out = int(np.prod(in_dims)), draw(SIZES)
    style = _style(draw)
    x = case.values(in_dims, d_t, style)
    w = case.values((n, m_out), w_t, style)
    b = case.values(m_out, b_t, "ties" if style == "ties" else "full" if b_t != SA_32
                    else draw(st.sampled_from(["bias", "full"])))
    w_pads = _pads(draw, 2)
    if kind.startswith("sa8"):
        zp_in, s_in, f_in = sa_data_params(draw)
        per_axis = draw(st.booleans())
        k = m_out if per_axis else 1
        s_w = [sa_scale(draw) for _ in range(k)]
        f_w = [sa_sfb(draw) for _ in range(k)]
        p_out = sa_data_params(draw)
        if style == "ties":
            s_in, s_w = TIE_SCALE, [TIE_SCALE] * k
            f_w = [_i8(f_w[0] + draw(st.sampled_from([0, 0, 1]))) for _ in range(k)]
            p_out = (p_out[0], TIE_SCALE, _i8(f_in + f_w[0] - 14 - _out_shift(draw, style)))
        sb = [bias_params(draw, s_in, f_in, s_w[i], f_w[i], rounding) for i in range(k)]
        dim_w, dim_b = (1, 0) if per_axis else (-1, -1)
        case.tensor("in", d_t, x, sa=(zp_in, s_in, f_in, -1))
        case.tensor("weights", w_t, w, w_pads, sa=([0] * k, s_w, f_w, dim_w))
        case.tensor("bias", b_t, b, sa=([0] * k, [v[0] for v in sb], [v[1] for v in sb], dim_b))
        case.tensor("out", d_t, np.zeros(m_out, np.int64), sa=(*p_out, -1), slack=draw(SMALL) - 1)
    else:
        f_in, f_w = fx_frac(draw), fx_frac(draw)
        case.tensor("in", d_t, x, frac=f_in)
        case.tensor("weights", w_t, w, w_pads, frac=f_w)
        case.tensor("bias", b_t, b, frac=_i8(f_in + f_w - draw(st.integers(0, 24))))
        case.tensor("out", d_t, np.zeros(m_out, np.int64), frac=_i8(f_in + f_w - _out_shift(draw, style)),
                    slack=draw(SMALL) - 1)
    case.meta["cfg_null"] = False
    case.meta["cfg_relu_type"] = draw(st.integers(0, 3))
    if draw(st.integers(0, 15)) == 0:    # out over in: MLI's overlap check
        case.meta["out_aliases_in"] = True
        case.meta["out_capacity"] = case.meta["in_capacity"]
        del case.arrays["out_data"]
    return maybe_mutate(draw, case, case.roles())


@st.composite
def dense_calls(draw, rounding):
    kind = draw(st.sampled_from(R.KERNEL_KINDS["rnn_dense"]))
    case = Case("rnn_dense", kind, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    d_t, w_t, b_t = R.KIND_TYPES[kind]
    n_in = draw(st.integers(1, 4))
    m_out = draw(SIZES)
    style = _style(draw)
    sa = kind.startswith("sa8")
    fmts = []
    p_out = sa_data_params(draw)
    if sa and style == "ties":
        p_out = (p_out[0], TIE_SCALE, draw(st.integers(0, 16)))
    for i in range(n_in):
        dims = draw(st.one_of(st.lists(SIZES, min_size=1, max_size=1), st.lists(SMALL, min_size=2, max_size=2)))
        n = int(np.prod(dims))
        if sa:
            p_in, p_w = sa_data_params(draw), (0, sa_scale(draw), sa_sfb(draw))
            if style == "ties":
                p_in = (p_in[0], TIE_SCALE, p_in[2])
                p_w = (0, TIE_SCALE, _i8(p_out[2] + 14 + _out_shift(draw, style) - p_in[2]))
            case.tensor(f"in{i}", d_t, case.values(dims, d_t, style), sa=(*p_in, -1))
            case.tensor(f"weights{i}", w_t, case.values((n, m_out), w_t, style), _pads(draw, 2), sa=(*p_w, -1))
        else:
            p_in, p_w = fx_frac(draw), fx_frac(draw)
            case.tensor(f"in{i}", d_t, case.values(dims, d_t, style), frac=p_in)
            case.tensor(f"weights{i}", w_t, case.values((n, m_out), w_t, style), _pads(draw, 2), frac=p_w)
        fmts.append((p_in, p_w))
    args = case.meta["args"]
    case.meta["args"] = [r for r in args if r.startswith("in")] + [r for r in args if r.startswith("weights")]
    b = case.values(m_out, b_t, "ties" if style == "ties" else draw(st.sampled_from(["bias", "bias", "full"]))
                    if b_t == SA_32 else "full")
    if sa:
        (_, s_in, f_in), (_, s_w, f_w) = fmts[0]
        case.tensor("bias", b_t, b, sa=(0, *bias_params(draw, s_in, f_in, s_w, f_w, rounding), -1))
        case.tensor("out", d_t, np.zeros(m_out, np.int64), sa=(*p_out, -1), slack=draw(SMALL) - 1)
    else:
        top = min(p_in + p_w for p_in, p_w in fmts)
        case.tensor("bias", b_t, b, frac=_i8(fmts[0][0] + fmts[0][1] - draw(st.integers(0, 24))))
        case.tensor("out", d_t, np.zeros(m_out, np.int64), frac=_i8(top - _out_shift(draw, style)),
                    slack=draw(SMALL) - 1)
    case.meta["cfg_null"] = False
    case.meta["cfg_inputs_num"] = n_in
    if draw(st.integers(0, 15)) == 0:    # out over in0: MLI's overlap check
        case.meta["out_aliases_in"] = True
        case.meta["out_capacity"] = case.meta["in0_capacity"]
        del case.arrays["out_data"]
    return maybe_mutate(draw, case, case.roles())


@st.composite
def cell_calls(draw, kernel, rounding):
    kind = draw(st.sampled_from(R.KERNEL_KINDS[kernel]))
    case = Case(kernel, kind, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    d_t, w_t, b_t = R.KIND_TYPES[kind]
    g = 4 if kernel == "lstm_cell" else 3
    t_len = draw(st.sampled_from([1, 1, 2, 3, 5]))
    n, m = draw(SIZES), draw(st.one_of(st.sampled_from([1, 2, 3, 8, 16, 17]), st.integers(1, 24)))
    style = _style(draw)
    results = draw(st.integers(0, 1))
    x = case.values((t_len, n), d_t, style)
    h = case.values(m, d_t, style)
    w_in = case.values((g, n, m), w_t, style)
    w_out = case.values((g, m, m), w_t, style)
    b = case.values((g, m), b_t, draw(st.sampled_from(["bias", "bias", "full"])) if b_t == SA_32 else "full")
    rows = t_len if results else 1
    out_dims = draw(st.sampled_from([[rows, m], [rows * m], [rows, m, 1]]))
    over_in = draw(st.integers(0, 7)) == 0   # out over in's container (MLI reads each step's row late)
    in_slack = max(rows * m - t_len * n, 0) + draw(st.integers(0, 2)) if over_in else 0
    if kind.startswith("sa8"):
        p_in = sa_data_params(draw)
        per_axis = draw(st.booleans())
        k = g if per_axis else 1
        dim = 0 if per_axis else -1
        s_wi, f_wi = [sa_scale(draw) for _ in range(k)], [sa_sfb(draw) for _ in range(k)]
        s_wo, f_wo = [sa_scale(draw) for _ in range(k)], [sa_sfb(draw) for _ in range(k)]
        sb = [bias_params(draw, p_in[1], p_in[2], s_wi[i], f_wi[i], rounding) for i in range(k)]
        case.tensor("in", d_t, x, slack=in_slack, sa=(*p_in, -1))
        case.tensor("prev_out", d_t, h, sa=(*sa_data_params(draw), -1))
        case.tensor("weights_in", w_t, w_in, _pads(draw, 3), sa=([0] * k, s_wi, f_wi, dim))
        case.tensor("weights_out", w_t, w_out, _pads(draw, 3), sa=([0] * k, s_wo, f_wo, dim))
        case.tensor("bias", b_t, b, _pads(draw, 2), sa=([0] * k, [v[0] for v in sb], [v[1] for v in sb], dim))
        if g == 4:
            case.tensor("cell", d_t, case.values(m, d_t, style), sa=(*sa_data_params(draw), -1))
        case.tensor("out", d_t, np.zeros(out_dims, np.int64), sa=(*sa_data_params(draw), -1),
                    slack=draw(SMALL) - 1)
    else:
        f_in, f_wi = fx_frac(draw), fx_frac(draw)
        case.tensor("in", d_t, x, slack=in_slack, frac=f_in)
        case.tensor("prev_out", d_t, h, frac=fx_frac(draw))
        case.tensor("weights_in", w_t, w_in, _pads(draw, 3), frac=f_wi)
        case.tensor("weights_out", w_t, w_out, _pads(draw, 3), frac=fx_frac(draw))
        case.tensor("bias", b_t, b, _pads(draw, 2), frac=_i8(f_in + f_wi - draw(st.integers(0, 24))))
        if g == 4:
            case.tensor("cell", d_t, case.values(m, d_t, style), frac=fx_frac(draw, -2, 15))
        case.tensor("out", d_t, np.zeros(out_dims, np.int64), frac=fx_frac(draw), slack=draw(SMALL) - 1)
    mt = case.meta
    esize = 2 if d_t == FX_16 else 1
    mt.update(cfg_null=False, cfg_direction=draw(st.integers(0, 1)), cfg_results=results,
              cfg_act=draw(st.integers(0, 2)), cfg_scratch_capacity=g * m * esize + draw(st.sampled_from([0, 0, 5])),
              cfg_scratch_null=False, cfg_scratch_overlaps_in=False, tanh_lut_from="tanh", tanh_lut_capacity=688,
              sigm_lut_from="sigm", sigm_lut_capacity=640)
    if over_in:
        mt.update(out_aliases_in=True, out_capacity=mt["in_capacity"])
        del case.arrays["out_data"]
    return maybe_mutate(draw, case, case.roles())


# ---------------------------------------------------------------------------
# Running both sides

def check(case, rounding, isa):
    """The reference's answer to `case` as its expected fields, then the C core on it."""
    meta, arrays = case.meta, case.arrays
    try:
        res = ref_run(meta, {k: v.copy() for k, v in arrays.items()}, rounding)
    except ValueError:
        res = None                       # MLI crashes on this call
    meta = dict(meta)
    arrays = dict(arrays)
    if res is None:
        meta["expected_status"] = -1000
    else:
        meta["expected_status"] = res.status
        meta["output_defined"] = res.status == 0
        if res.lut_status:
            meta["expected_lut_create_status"] = res.lut_status
        if res.status == 0:
            for k, v in res.out_meta.items():
                meta[f"expected_out_{k}"] = v
            arrays["expected_out_data"] = np.asarray(res.out)
            if res.cell is not None:
                arrays["expected_cell_data"] = np.asarray(res.cell)
    case.meta, case.arrays = meta, arrays   # printed on failure, with the expected fields
    with mli.use_isa(isa):
        got = cases.run_case(_npz(meta, arrays), rounding)
    if res is None:
        safety = _core2.last_error()[4]
        assert got.where == "status" and got.actual != 0 and safety, \
            f"MLI crashes on this call: mli-py must refuse it as a safety check, got {got} (safety {safety})"
    else:
        assert got.passed, str(got)


def _public_call(case, rounding, isa):
    """Run `case` through the public functions of mli.v2 (LUT objects, cfg objects,
    rounding from mli.rounding, ISA from mli.use_isa).  Returns (MliError or None,
    out, cell, {role: raw buffer before}, {role: raw buffer})."""
    meta, arrays = case.meta, case.arrays
    kernel = case.kernel
    in_role = "in0" if kernel == "rnn_dense" else "in"
    alias = bool(meta.get("out_aliases_in"))
    raws, tens = {}, {}
    for role in meta["args"]:
        if meta.get(f"{role}_null") or (role == "out" and alias):
            tens[role] = None
            continue
        data = arrays.get(f"{role}_data", np.zeros(0, np.int8))
        extra = int(meta.get("cfg_scratch_capacity", 0)) if meta.get("cfg_scratch_overlaps_in") else 0
        raw = np.zeros(max(int(meta[f"{role}_capacity"]), data.nbytes, extra, 1), np.uint8)
        raw[:data.nbytes] = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        raws[role] = raw
        tens[role] = cases._tensor(meta, role, raw)
    if alias and not meta.get("out_null"):
        out = cases._tensor(meta, "out", raws[in_role])
        out.buffer, out.capacity = tens[in_role].buffer, tens[in_role].capacity
        tens["out"] = out
    before = {r: b.copy() for r, b in raws.items()}

    def lut(prefix):
        fn, cap = meta[f"{prefix}_from"], int(meta[f"{prefix}_capacity"])
        if cap == getattr(v, f"{fn}_get_lut_size")() and (prefix == "lut" or prefix.startswith(fn)) \
                and case.rng.integers(2):
            return None                  # the wrapper's shared LUT object
        obj = v.Lut(cap)
        try:
            getattr(v, f"{meta[prefix + '_from']}_create_lut")(obj)
        except mli.MliNotEnoughMemError:
            pass                         # as in C: the object holds only its type
        return obj

    t = tens.get
    fn = getattr(v, f"{kernel}_{case.kind}")
    err = None
    with mli.rounding(rounding), mli.use_isa(isa):
        try:
            if kernel in ("tanh", "sigm"):
                fn(t("in"), lut("lut"), t("out"))
            elif kernel == "fully_connected":
                cfg = None if meta["cfg_null"] else v.FullyConnectedCfg(meta["cfg_relu_type"])
                fn(t("in"), t("weights"), t("bias"), cfg, t("out"))
            elif kernel == "rnn_dense":
                cfg = None if meta["cfg_null"] else v.RnnDenseCfg(meta["cfg_inputs_num"])
                fn([t(f"in{i}") for i in range(4)], [t(f"weights{i}") for i in range(4)], t("bias"), cfg, t("out"))
            else:
                cfg = None
                if not meta["cfg_null"]:
                    cap = int(meta["cfg_scratch_capacity"])
                    scratch = (None if meta["cfg_scratch_null"] else raws["in"] if meta["cfg_scratch_overlaps_in"]
                               else np.zeros(max(cap, 1), np.uint8))
                    g = 4 if kernel == "lstm_cell" else 3
                    m = int(meta["prev_out_shape"][0])
                    if (scratch is not None and not meta["cfg_scratch_overlaps_in"] and meta["prev_out_rank"] == 1
                            and meta["in_el_type"] in (FX_8, FX_16, SA_8)
                            and cap >= g * m * (2 if meta["in_el_type"] == FX_16 else 1) and case.rng.integers(2)):
                        scratch, cap = None, 0   # the wrapper allocates one
                    cfg = v.RnnCellCfg(meta["cfg_direction"], meta["cfg_results"], meta["cfg_act"], scratch, cap)
                args = (t("in"), t("prev_out"), t("weights_in"), t("weights_out"), t("bias"), lut("tanh_lut"),
                        lut("sigm_lut"), cfg)
                fn(*args, *((t("cell"),) if kernel == "lstm_cell" else ()), t("out"))
        except mli.MliError as e:
            err = e
    return err, t("out"), t("cell"), before, raws


def check_public(case, rounding, isa):
    """The public mli.v2 call against the reference: status as the MliError
    raised, outputs, output metadata and LSTM cell; a refused call changes nothing."""
    try:
        res = ref_run(case.meta, {k: a.copy() for k, a in case.arrays.items()}, rounding)
    except ValueError:
        res = None                       # MLI crashes on this call
    err, out, cell, before, after = _public_call(case, rounding, isa)
    if res is None or res.status:
        assert err is not None, f"expected a refusal ({'MLI crashes' if res is None else res.status}), got none"
        if res is None:
            assert err.mlipy_safety, err
        else:
            assert int(err.status) == res.status, err
        assert all(np.array_equal(before[r], after[r]) for r in before), "a refused call changed a buffer"
        return
    assert err is None, err
    np.testing.assert_array_equal(out.numpy(), res.out)
    got = {"rank": out.rank, "shape": list(out.shape), "mem_stride": list(out.mem_stride), "el_type": out.el_type}
    if out.is_sa:
        got.update(zero_point=int(out.zero_point[0]), scale=int(out.scale[0]),
                   scale_frac_bits=int(out.scale_frac_bits[0]), sa_dim=out.sa_dim)
    else:
        got["frac_bits"] = out.frac_bits
    assert got == res.out_meta
    if case.kernel == "lstm_cell":
        np.testing.assert_array_equal(cell.numpy(), res.cell)


# ---------------------------------------------------------------------------
# The properties

@examples(200)
@given(transfer_calls(), ROUNDINGS, ISAS)
def test_tanh_sigm(case, rounding, isa):
    check(case, rounding, isa)


@examples(200)
@given(st.data(), ROUNDINGS, ISAS)
def test_fully_connected(data, rounding, isa):
    check(data.draw(fc_calls(rounding)), rounding, isa)


@examples(160)
@given(st.data(), ROUNDINGS, ISAS)
def test_rnn_dense(data, rounding, isa):
    check(data.draw(dense_calls(rounding)), rounding, isa)


@examples(120)
@given(st.data(), ROUNDINGS, ISAS)
def test_lstm_cell(data, rounding, isa):
    check(data.draw(cell_calls("lstm_cell", rounding)), rounding, isa)


@examples(120)
@given(st.data(), ROUNDINGS, ISAS)
def test_gru_cell(data, rounding, isa):
    check(data.draw(cell_calls("gru_cell", rounding)), rounding, isa)


@examples(60)
@given(st.data(), st.sampled_from(["tanh_sigm", "fully_connected", "rnn_dense", "lstm_cell", "gru_cell"]),
       ROUNDINGS, ISAS)
def test_public_api(data, kernel, rounding, isa):
    """The same calls through mli.v2's functions and objects (mli.rounding, mli.use_isa)."""
    strategy = {"tanh_sigm": transfer_calls(), "fully_connected": fc_calls(rounding),
                "rnn_dense": dense_calls(rounding), "lstm_cell": cell_calls("lstm_cell", rounding),
                "gru_cell": cell_calls("gru_cell", rounding)}[kernel]
    check_public(data.draw(strategy), rounding, isa)


# ---------------------------------------------------------------------------
# Disagreements the properties found, settled by MLI 2.0.2 itself: each literal
# below is the answer of ../shared/oracle_mli20/fill_expected.py for that call.

def _mli_says(case, status):
    """Both sides give MLI's `status` for `case` (a refused call: nothing else to compare)."""
    assert ref_run(case.meta, case.arrays, "convergent").status == status
    meta = dict(case.meta, expected_status=status, output_defined=status == 0)
    for isa in mli.supported_isas():
        with mli.use_isa(isa):
            for rounding in ("convergent", "up"):
                got = cases.run_case(_npz(meta, case.arrays), rounding)
                assert got.passed, str(got)


@pytest.mark.parametrize("f_in, f_w, sa_type, mli_status", [
    (2, 2, 4, 12),      # frac read 4 <= 2 + 2: on to the type check
    (2, 2, 5, 3),       # frac read 5 > 2 + 2
    (-28, 14, 0, 3),    # found by test_fully_connected: 0 > -14 (the stored -44 would pass)
])
def test_fx_fc_reads_an_sa_outs_frac_bits_through_the_union(f_in, f_w, sa_type, mli_status):
    """An fx kind given an SA out: MLI's frac-bits check reads fx.frac_bits, which
    shares its byte with sa.type; the reference read the schema's frac_bits field."""
    case = Case("fully_connected", "fx16_fx8_fx8", np.random.default_rng(1))
    case.tensor("in", FX_16, np.array([7, 8]), frac=f_in)
    case.tensor("weights", FX_8, np.array([[3, -7], [1, 1]]), frac=f_w)
    case.tensor("bias", FX_8, np.array([100, -50]), frac=min(0, f_in + f_w))
    case.tensor("out", SA_32, np.zeros(2), sa=(0, 1, 0, -1))
    case.meta.update(out_frac_bits=-44, out_sa_type=sa_type, cfg_null=False, cfg_relu_type=0)
    _mli_says(case, mli_status)


def _in_place_other_strides(fn, kind):
    """tanh/sigm in place, in (2, 3) dense, out over it with rows 4 apart: writing
    out's row 1 overwrites in's row 1 before it is read."""
    el = {"fx16": FX_16, "fx8": FX_8, "sa8": SA_8}[kind]
    x = [[-3000, 1200, 2500], [900, -1700, 3100]] if kind == "fx16" else [[-90, 30, 75], [20, -60, 110]]
    case = Case(fn, kind, np.random.default_rng(3))
    case.tensor("in", el, np.array(x), slack=2, frac=10 if kind == "fx16" else 5, sa=(2, 20000, 20, -1))
    case.arrays["in_data"][6:] = [7, -7]
    m = case.meta
    m.update(out_null=False, out_el_type=el, out_rank=2, out_shape=[2, 3, 0, 0], out_mem_stride=[4, 1, 0, 0],
             out_capacity=m["in_capacity"], out_data_null=False, out_aliases_in=True, lut_from=fn,
             lut_capacity=688 if fn == "tanh" else 640)
    if el == SA_8:
        m.update(out_sa_type=0, out_sa_dim=-1, out_zero_point=[0], out_scale=[1], out_scale_frac_bits=[0],
                 out_zero_point_capacity=0, out_scale_capacity=0, out_scale_frac_bits_capacity=0)
    else:
        m["out_frac_bits"] = 0
    m["args"].append("out")
    return case


@pytest.mark.parametrize("fn, kind, conv, up", [
    ("tanh", "fx16", [[-32581, 27028, 32275], [23129, 32767, 32767]], [[-32581, 27027, 32275], [23129, 32767, 32767]]),
    ("tanh", "fx8", [[-127, 94, 126], [71, 125, 127]], None),
    ("tanh", "sa8", [[-121, 63, 113], [42, 82, 116]], None),
    ("sigm", "fx16", [[1662, 25017, 30144], [23153, 32766, 32766]], None),
    ("sigm", "fx8", [[7, 92, 117], [83, 119, 125]], None),
    ("sigm", "sa8", [[-90, 33, 77], [22, 24, 26]], None),
])
def test_in_place_transfer_with_other_strides(fn, kind, conv, up):
    """MLI reads each element after writing the ones before it (the reference read
    them all first); row 1 is f(900), f(f(900)), f(f(f(900))) in MLI's answer."""
    case = _in_place_other_strides(fn, kind)
    meta = dict(case.meta, expected_status=0, output_defined=True, expected_out_rank=2,
                expected_out_shape=[2, 3, 0, 0], expected_out_mem_stride=[4, 1, 0, 0],
                expected_out_el_type=case.meta["in_el_type"])
    if kind == "sa8":
        zp, scale, sfb = (0, 1, 7) if fn == "tanh" else (-128, 1, 8)
        meta.update(expected_out_zero_point=zp, expected_out_scale=scale, expected_out_scale_frac_bits=sfb,
                    expected_out_sa_dim=-1)
    else:
        meta["expected_out_frac_bits"] = 15 if kind == "fx16" else 7
    arrays = dict(case.arrays, expected_out_data=np.array(conv))
    if up is not None:
        arrays["expected_out_data_if_round_up"] = np.array(up)
    for rounding in ("convergent", "up"):
        want = up if rounding == "up" and up is not None else conv
        assert ref_run(case.meta, {k: a.copy() for k, a in case.arrays.items()}, rounding).out.tolist() == want
        for isa in mli.supported_isas():
            with mli.use_isa(isa):
                got = cases.run_case(_npz(meta, arrays), rounding)
            assert got.passed, str(got)


def _cell_out_over_in(kernel, kind):
    """A cell with T = 2, N = 1, M = 2 whose out is in's container: out's row 0
    covers in's row 1."""
    g, sa = (4 if kernel == "lstm_cell" else 3), kind.startswith("sa8")
    d_t, w_t, b_t = R.KIND_TYPES[kind]
    fx = dict(sa=(3, 20000, 21, -1)) if sa else dict(frac=12)
    fw = dict(sa=(0, 16384, 20, -1)) if sa else dict(frac=14)
    case = Case(kernel, kind, np.random.default_rng(0))
    case.tensor("in", d_t, np.zeros((2, 1)), slack=2, **fx)      # rows 0, 1, then 2 elements of room for out
    case.arrays["in_data"][:] = [88, 25, 20, 70] if sa else [17796, 5003, 5130, 18067]
    case.tensor("prev_out", d_t, np.array([66, -55]) if sa else np.array([13346, -10992]), **fx)
    w_in = [-43, 74, 82, -99, -1, 64, -74, 59] if sa else [-8598, 14942, 16504, -19790, -9, 12849, -14743, 11882]
    w_out_l = ([98, -11, -5, 0, 16, 10, 1, 99, 61, 58, 40, 24, -32, 97, -7, -57] if sa else
               [19618, -2197, -875, 181, 3301, 2139, 377, 19820, 12306, 11706, 8010, 4887, -6359, 19558, -1351, -11388])
    w_gru_out = ([-32, -45, 43, -50, 98, -11, -5, 0, 16, 10, 1, 99] if sa else
                 [-6336, -8863, 8778, -9806, 19618, -2197, -875, 181, 3301, 2139, 377, 19820])
    case.tensor("weights_in", w_t, np.array(w_in[:2 * g]).reshape(g, 1, 2), **fw)
    case.tensor("weights_out", w_t, np.array(w_out_l if g == 4 else w_gru_out).reshape(g, 2, 2), **fw)
    b = ([-118, 28, -468, -7, -242, -505, 986, -977] if g == 4 else [-771, -913, -111, -929, -717, 29])
    case.tensor("bias", b_t, np.array(b).reshape(g, 2), **(dict(sa=(0, 10000, 26, -1)) if sa else dict(frac=12)))
    if g == 4:
        case.tensor("cell", d_t, np.array([-3, -100]) if sa else np.array([-440, -19851]), **fx)
    m = case.meta
    m.update(out_null=False, out_el_type=d_t, out_rank=2, out_shape=[2, 2, 0, 0], out_mem_stride=[2, 1, 0, 0],
             out_capacity=m["in_capacity"], out_data_null=False, out_aliases_in=True, cfg_null=False,
             cfg_direction=0, cfg_results=1, cfg_act=1, cfg_scratch_capacity=g * 2 * (1 if sa else 2),
             cfg_scratch_null=False, cfg_scratch_overlaps_in=False, tanh_lut_from="tanh", tanh_lut_capacity=688,
             sigm_lut_from="sigm", sigm_lut_capacity=640)
    if sa:
        m.update(out_sa_type=0, out_sa_dim=-1, out_zero_point=[-5], out_scale=[20000], out_scale_frac_bits=[21],
                 out_zero_point_capacity=0, out_scale_capacity=0, out_scale_frac_bits_capacity=0)
    else:
        m["out_frac_bits"] = 12
    m["args"].append("out")
    return case


# MLI 2.0.2's answers: (out CONVERGENT, out UP, cell CONVERGENT, cell UP)
CELL_OUT_OVER_IN = {
    ("lstm_cell", "fx16"): ([[24, -4095], [-731, -1552]], [[24, -4095], [-730, -1552]], [-964, -5477], [-963, -5477]),
    ("lstm_cell", "sa8_sa8_sa32"): ([[7, -83], [-33, -20]], [[7, -83], [-33, -19]], [-36, -28], [-36, -27]),
    ("gru_cell", "fx16"): ([[1896, -10648], [236, -5512]], [[1896, -10648], [236, -5512]], None, None),
    ("gru_cell", "sa8_sa8_sa32"): ([[8, -44], [-1, -33]], [[8, -44], [-1, -33]], None, None),
}


@pytest.mark.parametrize("kernel, kind", sorted(CELL_OUT_OVER_IN))
def test_cell_out_over_in(kernel, kind):
    """out over in's container: MLI reads step t's input row after writing the
    outputs before it, and the GRU keeps z*h in the step's output row before it
    reads the input of the new gate (both sides read the rows ahead before)."""
    case = _cell_out_over_in(kernel, kind)
    want = CELL_OUT_OVER_IN[kernel, kind]
    meta = dict(case.meta, expected_status=0, output_defined=True, expected_out_rank=2,
                expected_out_shape=[2, 2, 0, 0], expected_out_mem_stride=[2, 1, 0, 0],
                expected_out_el_type=case.meta["in_el_type"])
    if kind.startswith("sa8"):
        meta.update(expected_out_zero_point=-5, expected_out_scale=20000, expected_out_scale_frac_bits=21,
                    expected_out_sa_dim=-1)
    else:
        meta["expected_out_frac_bits"] = 12
    for k, rounding in enumerate(("convergent", "up")):
        res = ref_run(case.meta, {n: a.copy() for n, a in case.arrays.items()}, rounding)
        assert res.status == 0 and res.out.tolist() == want[k]
        arrays = dict(case.arrays, expected_out_data=np.array(want[k]))
        if kernel == "lstm_cell":
            assert res.cell.tolist() == want[2 + k]
            arrays["expected_cell_data"] = np.array(want[2 + k])
        for isa in mli.supported_isas():
            with mli.use_isa(isa):
                got = cases.run_case(_npz(meta, arrays), rounding)
            assert got.passed, str(got)
