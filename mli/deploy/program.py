"""A deployable program: the MLI 1.1 kernel calls of a model in order, on
tensors of fixed formats, as :mod:`mli.deploy.emit` writes them into C and
as :meth:`Program.run` computes them on the package's kernels (the goldens).

A program is a list of :class:`Step` (one MLI call each) over named
:class:`DeployTensor` s.  Each tensor has a role:

``input``       written by ``model_run`` from the caller's buffer
``output``      copied to the caller's buffer at the end of ``model_run``
``const``       weights, biases, slopes: ``const`` arrays outside the arena
``activation``  written by one step, read by later ones
``state``       kept between runs (LSTM cell and h); ``model_reset_state``
                sets it to its `values`, and ``model_run`` does first when
                the tensor is ``per_run`` (the MLI examples' zero state)
``scratch``     a kernel's work buffer for one step (an LSTM's ``ir_tsr``)
``view``        row `index` of another tensor's first axis (what
                ``mli_hlp_point_to_subtensor`` gives): its bytes are the
                parent's, e.g. one time step of a sequence

Every non-const tensor lives in one arena (:mod:`mli.deploy.arena`).
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

import mli

from ..tensor import Tensor

__all__ = ["DeployError", "DeployTensor", "Step", "Program", "SIGNATURES"]

ROLES = ("input", "output", "const", "activation", "state", "scratch", "view")
_DTYPES = {"fx8": np.dtype(np.int8), "fx16": np.dtype(np.int16)}

# call signature -> the C arguments in MLI's order: "in:K" the K-th input, "cfg",
# "state:K", "out" (the argument lists of mli_kernels_api.h / mli_helpers_api.h)
SIGNATURES = {
    "conv": ("in:0", "in:1", "in:2", "cfg", "out"),
    "fc": ("in:0", "in:1", "in:2", "out"),
    "leaky_relu": ("in:0", "in:1", "out"),
    "pool": ("in:0", "cfg", "out"),
    "permute": ("in:0", "cfg", "out"),
    "unary": ("in:0", "out"),           # softmax, sigm, tanh, mli_hlp_convert_tensor
    "relu": ("in:0", "cfg", "out"),
    "eltwise": ("in:0", "in:1", "out"),
    "lstm": ("in:0", "in:1", "in:2", "in:3", "cfg", "state:0", "out"),
    "rnn": ("in:0", "in:1", "in:2", "in:3", "cfg", "out"),
}


class DeployError(ValueError):
    """A program or an option that cannot be deployed; the message names it."""


@dataclass
class DeployTensor:
    """One tensor of the program: its element type (``fx8``/``fx16``), frac
    bits, shape (``()`` for a rank-0 value such as a slope) and role; for a
    const its values, for a state the values ``model_reset_state`` sets."""

    name: str
    el: str
    frac: int
    shape: Tuple[int, ...]
    role: str
    values: Optional[np.ndarray] = None
    per_run: bool = False
    parent: Optional[str] = None     # a view's tensor
    byte_offset: int = 0             # a view's first byte in its parent

    @property
    def dtype(self):
        return _DTYPES[self.el]

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize


@dataclass
class Step:
    """One MLI call: `func` is MLI's C name, `sig` a key of
    :data:`SIGNATURES`, `ins` the input tensors, `out` the output tensor,
    `state` in/out tensors (an LSTM's cell), `scratch` its work buffer and
    `cfg` its configuration (an ``mli`` config object, a ReLU type, or for
    the cells ``(mode, act)``)."""

    func: str
    sig: str
    ins: Tuple[str, ...]
    out: str
    cfg: object = None
    state: Tuple[str, ...] = ()
    scratch: Tuple[str, ...] = ()
    layer: str = ""

    @property
    def py_name(self):
        """The package's function for this C function."""
        for prefix in ("mli_krn_", "mli_hlp_"):
            if self.func.startswith(prefix):
                return self.func[len(prefix):]
        raise DeployError(f"{self.func}: not an MLI kernel or helper name")

    def writes(self):
        return (self.out,) + self.state + self.scratch

    def reads(self):
        return self.ins + self.state


@dataclass
class Program:
    """The kernel calls of one model, in order (see the module's text)."""

    name: str
    tensors: Dict[str, DeployTensor] = field(default_factory=dict)
    steps: List[Step] = field(default_factory=list)

    # ---------------------------------------------------------------- building
    def add(self, name, el, frac, shape, role, values=None, per_run=False):
        if name in self.tensors:
            raise DeployError(f"tensor {name!r} is defined twice")
        if role not in ROLES:
            raise DeployError(f"tensor {name!r}: role {role!r} is not one of {', '.join(ROLES)}")
        if el not in _DTYPES:
            raise DeployError(f"tensor {name!r}: element type {el!r} is not fx8 or fx16")
        shape = tuple(int(d) for d in shape)
        if values is not None:
            values = np.array(values, order="C")  # (ascontiguousarray makes a rank-0 value rank 1)
            if values.dtype != _DTYPES[el] or values.shape != shape:
                raise DeployError(f"tensor {name!r}: values {values.dtype}{list(values.shape)} do not fit "
                                  f"{el} {list(shape)}")
        t = DeployTensor(name, el, int(frac), shape, role, values, per_run)
        self.tensors[name] = t
        return t

    def add_view(self, name, parent, index):
        """Row `index` of `parent`'s first axis as a tensor of its own."""
        p = self.tensors.get(parent)
        if p is None or p.role in ("const", "view") or len(p.shape) < 2 or not 0 <= index < p.shape[0]:
            raise DeployError(f"view {name!r}: {parent!r} has no row {index}")
        t = self.add(name, p.el, p.frac, p.shape[1:], "view")
        t.parent, t.byte_offset = parent, index * t.nbytes
        return t

    def add_alias(self, name, parent, shape, byte_offset=0):
        """`parent`'s bytes from `byte_offset` seen as a tensor of `shape`
        (a reshape, a row, any run of whole elements)."""
        p = self.tensors.get(parent)
        if p is not None and p.role == "view":
            parent, byte_offset = p.parent, p.byte_offset + byte_offset
            p = self.tensors[parent]
        if p is None or p.role == "const":
            raise DeployError(f"view {name!r}: {parent!r} is not a tensor of the arena")
        t = DeployTensor(name, p.el, p.frac, tuple(int(d) for d in shape), "view")
        if byte_offset < 0 or byte_offset % p.dtype.itemsize or byte_offset + t.nbytes > p.nbytes:
            raise DeployError(f"view {name!r}: bytes {byte_offset}..{byte_offset + t.nbytes} are not inside "
                              f"{parent!r} ({p.nbytes} bytes)")
        if name in self.tensors:
            raise DeployError(f"tensor {name!r} is defined twice")
        t.parent, t.byte_offset = parent, int(byte_offset)
        self.tensors[name] = t
        return t

    def rename(self, old, new):
        """Tensor `old` as `new` everywhere (steps, views)."""
        if new in self.tensors:
            raise DeployError(f"tensor {new!r} is defined twice")
        t = self.tensors.pop(old)
        t.name = new
        self.tensors[new] = t
        for v in self.tensors.values():
            if v.parent == old:
                v.parent = new
        sub = {old: new}
        for st in self.steps:
            st.ins = tuple(sub.get(n, n) for n in st.ins)
            st.out = sub.get(st.out, st.out)
            st.state = tuple(sub.get(n, n) for n in st.state)
            st.scratch = tuple(sub.get(n, n) for n in st.scratch)

    def base(self, name):
        """The tensor holding `name`'s bytes: its parent for a view, else itself."""
        t = self.tensors[name]
        return t.parent if t.role == "view" else name

    def add_const(self, name, tensor):
        """A const from an :class:`mli.Tensor` (its values and frac bits)."""
        v = tensor.numpy()
        el = {np.dtype(np.int8): "fx8", np.dtype(np.int16): "fx16"}.get(v.dtype)
        if el is None:
            raise DeployError(f"tensor {name!r}: {v.dtype} data is not fx8 or fx16")
        return self.add(name, el, tensor.frac_bits, v.shape, "const", v)

    def call(self, func, sig, ins, out, cfg=None, state=(), scratch=(), layer=""):
        if sig not in SIGNATURES:
            raise DeployError(f"{func}: unknown call signature {sig!r}")
        step = Step(func, sig, tuple(ins), out, cfg, tuple(state), tuple(scratch), layer or out)
        for n in step.reads() + step.writes():
            if n not in self.tensors:
                raise DeployError(f"{func} ({step.layer}): tensor {n!r} is not defined")
        self.steps.append(step)
        return step

    # ---------------------------------------------------------------- queries
    def by_role(self, *roles):
        return [t for t in self.tensors.values() if t.role in roles]

    def check(self):
        """Every activation written before it is read, every input never
        written, every output written once."""
        written = {t.name for t in self.by_role("input", "const", "state")}
        for k, s in enumerate(self.steps):
            for n in s.ins:
                if n not in written and self.base(n) not in written:
                    raise DeployError(f"step {k} ({s.layer}): {n!r} is read before any step writes it")
            for n in s.writes():
                if self.tensors[self.base(n)].role in ("input", "const"):
                    raise DeployError(f"step {k} ({s.layer}): writes the {self.tensors[self.base(n)].role} {n!r}")
            written.update(s.writes())
            written.update(self.base(n) for n in s.writes())
        for t in self.by_role("output", "activation"):
            if t.name not in written:
                raise DeployError(f"{t.role} {t.name!r} is never written")
        if not self.by_role("input") or not self.by_role("output"):
            raise DeployError(f"program {self.name!r} needs at least one input and one output")

    # ---------------------------------------------------------------- goldens
    def run(self, inputs):
        """The program on the package's kernels, from `inputs` (name -> int
        array of the input's dtype and shape; states from their reset
        values).  Returns ``(values, events)``: the final value of every
        tensor, and per step the values it wrote (outputs and states; not
        scratch) -- the goldens of every layer."""
        self.check()
        vals = {}
        for t in self.by_role("input"):
            if t.name not in inputs:
                raise DeployError(f"inputs: {t.name!r} is missing")
            a = np.asarray(inputs[t.name])
            if a.dtype != t.dtype or a.shape != t.shape:
                raise DeployError(f"inputs: {t.name!r} must be {t.dtype}{list(t.shape)}, got {a.dtype}{list(a.shape)}")
            vals[t.name] = a.copy()
        for t in self.by_role("const", "state"):
            vals[t.name] = t.values if t.values is not None else np.zeros(t.shape, t.dtype)
        events = []
        for s in self.steps:
            for n in s.reads():
                if self.tensors[n].role == "view":
                    vals[n] = _view_values(self, vals, n)
            wrote = _run_step(self, s, vals)
            for n, v in wrote.items():
                vals[n] = v
                t = self.tensors[n]
                if t.role == "view":   # the row of the parent, in a new array (events keep the old one)
                    parent = vals.get(t.parent, np.zeros(self.tensors[t.parent].shape, t.dtype)).copy()
                    parent.reshape(-1).view(np.uint8)[t.byte_offset:t.byte_offset + t.nbytes] = v.view(np.uint8).reshape(-1)
                    vals[t.parent] = parent
            events.append(wrote)
        return vals, events


def _view_values(prog, vals, name):
    t = prog.tensors[name]
    raw = np.ascontiguousarray(vals[t.parent]).reshape(-1).view(np.uint8)[t.byte_offset:t.byte_offset + t.nbytes]
    return raw.view(t.dtype).reshape(t.shape)


def _tensor(prog, vals, name):
    t = prog.tensors[name]
    v = vals[name]
    return Tensor(np.asarray(v).reshape(t.shape) if t.shape else v.reshape(()), t.frac)


def _run_step(prog, s, vals):
    """One step on the package's kernels: {tensor name: values written}."""
    f = getattr(mli, s.py_name, None)
    if f is None:
        raise DeployError(f"{s.func}: the package has no mli.{s.py_name}")
    x = [_tensor(prog, vals, n) for n in s.ins]
    out = prog.tensors[s.out]
    if s.sig in ("conv", "fc"):
        y = f(*x, s.cfg, out_frac_bits=out.frac) if s.sig == "conv" else f(*x, out_frac_bits=out.frac)
    elif s.sig == "unary" and s.py_name == "convert_tensor":
        y = f(x[0], out.el, out.frac)
    elif s.sig == "eltwise" and "_max_" not in s.func and "_min_" not in s.func:
        y = f(*x, out_frac_bits=out.frac)
    elif s.sig in ("unary", "leaky_relu", "eltwise"):
        y = f(*x)
    elif s.sig in ("pool", "permute", "relu"):
        y = f(x[0], s.cfg)
    elif s.sig == "lstm":
        mode, act = s.cfg
        ir = prog.tensors[s.scratch[0]]
        cfg = mli.RnnCellConfig(mode=mode, act=act, ir=Tensor(np.zeros(ir.shape, ir.dtype), 0))
        h, c = f(*x, cfg, _tensor(prog, vals, s.state[0]))
        return {s.out: _checked(out, h, s), s.state[0]: _checked(prog.tensors[s.state[0]], c, s)}
    elif s.sig == "rnn":
        mode, act = s.cfg
        kw = {"out_frac_bits": out.frac} if act == mli.RnnActivation.NONE else {}
        y = f(*x, mli.RnnCellConfig(mode=mode, act=act), **kw)
    else:
        raise DeployError(f"{s.func}: call signature {s.sig!r} is not run by the program")
    return {s.out: _checked(out, y, s)}


def _checked(t, y, s):
    """The values a kernel gave for tensor `t`, which must have its planned format."""
    v = y.numpy()
    if v.dtype != t.dtype or v.size != t.size or y.frac_bits != t.frac:
        raise DeployError(f"step {s.layer}: {s.func} gave {v.dtype}{list(v.shape)} frac {y.frac_bits} for "
                          f"{t.name!r}, planned {t.dtype}{list(t.shape)} frac {t.frac}")
    return v.reshape(t.shape)
