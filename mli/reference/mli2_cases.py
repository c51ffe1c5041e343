"""Cases of schema ``mli20`` (``shared/vectors/mli20/README.md``) through :mod:`.mli2`.

``load_case(path)`` reads one ``.npz``; ``run_case(meta, arrays, rounding)``
builds the tensors, cfg and LUT objects it describes, calls the reference
kernel and returns a :class:`CaseResult` in the shape of the expected fields,
so that a test compares them one to one.  numpy only.
"""

import json
import re
from dataclasses import dataclass, field

import numpy as np

from ..io.npz import load_npz_arrays
from . import mli2

_ROLE_RE = re.compile(r"^(in|out|bias|cell|prev_out|weights_in|weights_out|weights|in\d|weights\d)$")


def load_case(path):
    """(meta dict, {name: array}) of one case file."""
    arrays = load_npz_arrays(path)
    meta = json.loads(str(arrays.pop("meta_json")))
    if meta.get("schema") != "mli20":
        raise ValueError(f"{path}: not an mli20 case (schema {meta.get('schema')!r})")
    return meta, arrays


def expected(meta, arrays, name, rounding):
    """The expected array `name` ("out_data", "cell_data") for `rounding`.

    The ``_if_round_up`` variant exists only where UP differs from CONVERGENT."""
    key = f"expected_{name}"
    if rounding == "up" and f"{key}_if_round_up" in arrays:
        return arrays[f"{key}_if_round_up"]
    return arrays.get(key)


def _tensor(meta, arrays, role, buffers):
    """The Tensor of `role` (None when its pointer is NULL); `buffers` maps
    roles to their Buffer, for aliasing."""
    if meta.get(f"{role}_null", True):
        return None

    def g(k):
        return meta[f"{role}_{k}"]

    el_type = g("el_type")
    data = arrays.get(f"{role}_data")
    buf = None
    if not g("data_null"):
        if data is None:
            data = np.zeros(0, dtype=np.int8)
        # room for the whole capacity (bounded: bad cases may claim 2 GiB they never use)
        buf = mli2.Buffer.of(data, min(int(g("capacity")), max(data.nbytes, 1 << 20)))
    buffers[role] = buf
    t = mli2.Tensor(el_type=el_type, rank=int(g("rank")), shape=[int(v) for v in g("shape")],
                    mem_stride=[int(v) for v in g("mem_stride")], capacity=int(g("capacity")), buf=buf)
    if el_type in (mli2.SA_8, mli2.SA_32):
        # el_params is a union: a kernel reading fx.frac_bits of an SA tensor (an FX kind given
        # an SA tensor: the frac bits checks run before the type checks) gets the low byte of
        # sa.type [x86, little endian], whatever R_frac_bits says
        t.frac_bits = (int(meta.get(f"{role}_sa_type", 0)) + 128) % 256 - 128
    elif f"{role}_frac_bits" in meta:
        t.frac_bits = int(g("frac_bits"))
    if f"{role}_sa_dim" in meta:
        t.sa_dim = int(g("sa_dim"))
        t.zero_point = [int(v) for v in g("zero_point")]
        t.scale = [int(v) for v in g("scale")]
        t.scale_frac_bits = [int(v) for v in g("scale_frac_bits")]
        t.zero_point_capacity = int(g("zero_point_capacity"))
        t.scale_capacity = int(g("scale_capacity"))
        t.scale_frac_bits_capacity = int(g("scale_frac_bits_capacity"))
    return t


def _lut(meta, name_key, cap_key):
    lut = mli2.Lut(capacity=int(meta[cap_key]))
    status = mli2.create_lut(meta[name_key], lut)
    return lut, status


@dataclass
class CaseResult:
    """What the reference did with one case.

    ``out`` is the output in logical order (shape ``out_shape[:out_rank]``),
    read through the output tensor's strides after the call; ``out_meta``
    the output tensor's fields after the call, keyed like the
    ``expected_out_*`` fields; ``lut_status`` the create_lut statuses like
    ``expected_lut_create_status``; ``cell`` the LSTM cell; ``buffers`` every
    role's buffer afterwards (for untouched-bytes checks)."""
    status: int
    lut_status: dict = field(default_factory=dict)
    out: object = None
    out_meta: dict = field(default_factory=dict)
    cell: object = None
    tensors: dict = field(default_factory=dict)


def run_case(meta, arrays, rounding):
    """Run one mli20 case through the reference in `rounding` ("convergent" / "up")."""
    mli2.check_rounding(rounding)
    kernel, kind = meta["kernel"], meta["kind"]
    buffers = {}
    roles = [r for r in meta["args"] if _ROLE_RE.match(r)]
    if kernel == "rnn_dense":   # missing entries of in[] / weights[] are NULL
        roles = sorted(set(roles) | {f"{p}{i}" for p in ("in", "weights") for i in range(4)})
    tensors = {}
    for role in roles:
        if role == "out" and meta.get("out_aliases_in"):
            continue
        tensors[role] = _tensor(meta, arrays, role, buffers)
    if meta.get("out_aliases_in"):
        # the output's data container (pointer and capacity) is in's (rnn_dense: in0's)
        src = tensors["in0" if kernel == "rnn_dense" else "in"]
        out = _tensor(meta, {**arrays, "out_data": np.zeros(0, np.int8)}, "out", {})
        if out is not None:
            out.buf, out.capacity = src.buf, src.capacity
        tensors["out"] = out
    t = tensors.get
    result = CaseResult(status=-1, tensors=tensors)

    if kernel in ("lstm_cell", "gru_cell"):
        tanh_lut, st_t = _lut(meta, "tanh_lut_from", "tanh_lut_capacity")
        sigm_lut, st_s = _lut(meta, "sigm_lut_from", "sigm_lut_capacity")
        result.lut_status = {"tanh_lut": st_t, "sigm_lut": st_s}
        cfg = None
        if not meta["cfg_null"]:
            if meta["cfg_scratch_null"]:
                scratch = None
            elif meta["cfg_scratch_overlaps_in"]:
                scratch = buffers["in"]
            else:
                scratch = mli2.Buffer.of(np.zeros(0, np.int8), 8)
            cfg = mli2.RnnCellCfg(direction=meta["cfg_direction"], results=meta["cfg_results"],
                                  act=meta["cfg_act"], scratch_buf=scratch,
                                  scratch_capacity=int(meta["cfg_scratch_capacity"]))
        args = (kind, t("in"), t("prev_out"), t("weights_in"), t("weights_out"), t("bias"),
                tanh_lut, sigm_lut, cfg)
        if kernel == "lstm_cell":
            result.status = mli2.lstm_cell(*args, t("cell"), t("out"), rounding=rounding)
        else:
            result.status = mli2.gru_cell(*args, t("out"), rounding=rounding)
    elif kernel == "fully_connected":
        cfg = None if meta["cfg_null"] else mli2.FullyConnectedCfg(relu_type=meta["cfg_relu_type"])
        result.status = mli2.fully_connected(kind, t("in"), t("weights"), t("bias"), cfg, t("out"),
                                             rounding=rounding)
    elif kernel == "rnn_dense":
        cfg = None if meta["cfg_null"] else mli2.RnnDenseCfg(inputs_num=meta["cfg_inputs_num"])
        result.status = mli2.rnn_dense(kind, [t(f"in{i}") for i in range(4)],
                                       [t(f"weights{i}") for i in range(4)], t("bias"), cfg, t("out"),
                                       rounding=rounding)
    elif kernel in ("tanh", "sigm"):
        lut, st = _lut(meta, "lut_from", "lut_capacity")
        result.lut_status = {"lut": st}
        func = mli2.tanh if kernel == "tanh" else mli2.sigm
        result.status = func(kind, t("in"), lut, t("out"), rounding=rounding)
    else:
        raise ValueError(f"unknown kernel {kernel!r}")

    if result.status == mli2.OK:
        out = t("out")
        result.out = out.read()
        result.out_meta = {"rank": out.rank, "shape": list(out.shape), "mem_stride": list(out.mem_stride),
                           "el_type": out.el_type}
        if out.is_sa():
            # per tensor: the inline values; per axis: the arrays
            pick = (lambda v: list(v)) if out.per_axis() else (lambda v: v[0])
            result.out_meta.update(zero_point=pick(out.zero_point), scale=pick(out.scale),
                                   scale_frac_bits=pick(out.scale_frac_bits), sa_dim=out.sa_dim)
        else:
            result.out_meta["frac_bits"] = out.frac_bits
        if kernel == "lstm_cell":
            result.cell = t("cell").read()
    return result
