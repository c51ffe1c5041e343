"""A whole-model fixed-point model (:class:`mli.fixed_point.whole.WholeModel`)
as a deployable :class:`~mli.deploy.program.Program`: ``mli deploy MODEL.xml``.

The outer graph is walked in order; every IR value becomes a *symbol*: bytes
of one program tensor (an offset, a shape and the value's planned format).
Each layer becomes the MLI calls the whole-model run makes for it:

* views (Reshape, Squeeze, Unsqueeze) and copies that keep elements in order
  (a Gather, Split or Slice of contiguous rows, a Transpose moving only axes of
  one element) are new symbols on the same bytes, no call;
* other copies (Concat, Gather, Slice and Split of non-contiguous parts,
  Broadcast, Select on a constant condition) are ``mli_hlp_convert_tensor``
  calls over the runs of consecutive elements, found by running the IR op on
  element indices;
* ``fully_connected`` on every row of its input (row views), ``conv2d`` and
  ``depthwise_conv2d`` (CHW) on every batch item, eltwise, ReLU, sigmoid, tanh,
  softmax (per row), permute, each with the ``mli_hlp_convert_tensor`` calls
  the whole-model run makes where a kernel takes another format;
* LSTMSequence / RNNSequence: per direction and batch row, one batch-to-batch
  cell call over the row's sequence (a reverse direction: one one-to-one call
  per step, last step first), the cell state in place, final states copied.

What the lowering does not cover is refused naming the layer (GRU cells,
TensorIterator / Loop bodies, sequence lengths shorter than the sequence,
ops kept in float).  :func:`lower` then checks the program: run on the
package's kernels, every tensor of the outer graph must equal the whole-model
run's trace, bit for bit, on every sample.
"""
from typing import Dict, List, NamedTuple, Tuple

import numpy as np

import mli

from ..fixed_point.analysis import tensor_key
from ..fixed_point.formats import DATA_EL, quantize
from ..tensor import Tensor
from .emit import c_ident
from .program import DeployError, Program

__all__ = ["lower", "LoweredModel"]

_ITEM = {"fx8": 1, "fx16": 2}
_MAX_COPIES = 256       # copy calls one layer may take before it is refused


class _Sym(NamedTuple):
    """An IR value in the program: ``base`` tensor's bytes from ``offset``,
    read as ``shape`` in format ``fmt``."""

    base: str
    offset: int
    shape: Tuple[int, ...]
    fmt: Tuple[str, int]

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


class LoweredModel(NamedTuple):
    """The program, its input samples (program input name -> integers) and the
    IR tensor key of each program input and output."""

    program: Program
    samples: List[Dict[str, np.ndarray]]
    inputs: Dict[str, str]
    outputs: Dict[str, str]


class _Lowering:
    """The walk over a whole-model fixed-point model's graph (see the module's text)."""

    def __init__(self, wm, name):
        self.wm = wm
        self.plan = wm.planner
        self.p = Program(name)
        self.syms = {}          # (id(layer), output port id) -> _Sym
        self.keys = {}          # outer IR tensor key -> _Sym
        self.body_keys = {}     # (body tensor key, iteration) -> (_Sym, iterations)
        self.names = set()
        self.aliases = {}       # views and parts of constants made so far; cells' weights by layer
        self.variables = {}     # ReadValue/Assign variable id -> its state _Sym (None: read as a constant)
        self.args, self.shapes = {}, {}     # id(layer) -> per call: arguments, output shapes (capture)
        self.graph = wm.float_model.graph
        self.path = ()          # the TensorIterator/Loop being unrolled
        self.iter = 0           # its iteration
        self.n_iter = 1         # and their number
        self.at = self.label = ""       # the layer lowered now: for messages, and as the steps' layer name

    # ------------------------------------------------------------------ tensors
    def fresh(self, stem):
        base = c_ident(stem)[:48]
        name, k = base, 1
        while name in self.names or name in self.p.tensors:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def new(self, stem, fmt, shape, role="activation", values=None):
        shape = tuple(int(d) for d in shape)
        name = self.fresh(stem)
        store = shape if len(shape) <= 4 else (int(np.prod(shape)),)
        self.p.add(name, fmt[0], fmt[1], store, role,
                   None if values is None else np.asarray(values).reshape(store))
        return _Sym(name, 0, shape, fmt)

    def const(self, stem, fmt, values):
        v = np.asarray(values)
        return self.new(stem, fmt, v.shape if v.ndim else (1,), "const", v.reshape(v.shape if v.ndim else (1,)))

    def tensor(self, sym, shape=None):
        """A program tensor holding `sym`'s bytes, seen as `shape` (default its own)."""
        shape = tuple(int(d) for d in (sym.shape if shape is None else shape))
        if int(np.prod(shape, dtype=np.int64)) != sym.size:
            raise DeployError(f"internal: {sym} seen as {list(shape)}")
        if len(shape) > 4:
            raise DeployError(f"{self.at}: a tensor of rank {len(shape)} {list(shape)}; MLI 1.1 tensors have rank <= 4")
        t = self.p.tensors[sym.base]
        if sym.offset == 0 and t.shape == shape:
            return sym.base
        if t.role == "const":       # part of a constant: a constant of its own
            key = (sym.base, sym.offset, shape)
            if key not in self.aliases:
                first = sym.offset // t.dtype.itemsize
                vals = t.values.reshape(-1)[first:first + sym.size].reshape(shape)
                self.aliases[key] = self.p.add(self.fresh(sym.base + "_as"), t.el, t.frac, shape, "const",
                                               vals).name
            return self.aliases[key]
        key = (sym.base, sym.offset, shape)
        if key not in self.aliases:
            self.aliases[key] = self.p.add_alias(self.fresh(f"{sym.base}_at{sym.offset}"), sym.base, shape,
                                                 sym.offset).name
        return self.aliases[key]

    def flat(self, sym):
        return self.tensor(sym, (sym.size,))

    def sub(self, sym, start, shape):
        """Elements ``start...`` of `sym` (in its order) as a symbol of `shape`."""
        return _Sym(sym.base, sym.offset + start * _ITEM[sym.fmt[0]], tuple(shape), sym.fmt)

    def convert(self, sym, fmt, stem):
        """`sym` in format `fmt`: ``mli_hlp_convert_tensor`` where they differ."""
        if sym.fmt == tuple(fmt):
            return sym
        out = self.new(stem, fmt, sym.shape)
        self.p.call("mli_hlp_convert_tensor", "unary", (self.flat(sym),), self.flat(out), layer=self.label)
        return out

    def copy_into(self, src, dst):
        """Copy (and convert) `src` into the bytes of `dst` (equal sizes)."""
        self.p.call("mli_hlp_convert_tensor", "unary", (self.flat(src),), self.flat(dst), layer=self.label)

    # ------------------------------------------------------------------ graph
    def input_sym(self, layer, i):
        src, sport = self.graph.producer(layer.id, layer.inputs[i].id)
        s = self.syms.get((id(src), sport.id))
        if s is None:
            raise DeployError(f"{self.at}: input {i} comes from {src.name!r} ({src.type}), which is not data "
                              "the program holds")
        return s

    def static(self, info, i):
        """The value of a non-data input (the same for every input sample), as
        the float model's run on the first sample gave it."""
        calls = self.args.get(id(info.layer))
        if not calls:
            raise DeployError(f"{self.at}: never ran in the float model")
        # a body layer: its arguments of this iteration (one call only where they were hoisted)
        return np.asarray(calls[min(self.iter, len(calls) - 1)][i])

    def capture(self, sample):
        """Every outer layer's arguments in one float run."""
        from ..fixed_point.program import with_program
        from ..fixed_point.whole import compile_all
        self.args, self.shapes = {}, {}

        def make(layer, path, fn):
            if len(path) > 1:
                return fn

            def step(*args):
                out = fn(*args)
                self.args.setdefault(id(layer), []).append(args)
                outs = out if len(layer.outputs) != 1 else (out,)
                self.shapes.setdefault(id(layer), []).append(tuple(np.shape(o) for o in outs))
                return out
            return step
        from ..ir.ops.subgraph import stepped_bodies
        with stepped_bodies():
            with_program(self.wm.float_model, compile_all(self.wm.float_model.graph, make))(sample)

    def out_fmt(self, layer, k):
        f = self.plan.fmt.get(tensor_key(self.path, layer, k))
        if f is None:
            raise DeployError(f"{self.at}: output {k} has no format in the plan")
        return f

    def shape_of(self, layer, k):
        calls = self.shapes.get(id(layer))
        if calls:                   # this iteration's (a body's shapes may change)
            return tuple(int(d) for d in calls[min(self.iter, len(calls) - 1)][k])
        s = self.wm.tap.shape.get(tensor_key(self.path, layer, k))
        if s is None:
            raise DeployError(f"{self.at}: output {k} was never computed in calibration")
        return tuple(int(d) for d in s)

    def bind(self, layer, k, sym):
        self.syms[(id(layer), layer.outputs[k].id)] = sym
        if self.path:
            self.body_keys[(tensor_key(self.path, layer, k), self.iter)] = (sym, self.n_iter)
        else:
            self.keys[tensor_key((), layer, k)] = sym

    def need(self, info, i, el):
        f = self.plan._need(info, i, el)
        return f

    def run(self, params):
        g = self.wm.float_model.graph
        a = self.wm.analysis
        inputs, outputs = {}, {}
        in_names = dict(zip([p.id for p in g.parameters], self.wm.input_names))
        out_names = dict(zip([r.id for r in g.results], self.wm.output_names))
        assigns, self.variables = [], {}
        for layer in g.order:
            self.at, self.label = f"layer {layer.name!r} ({layer.type})", layer.name
            if layer.type == "Parameter":
                if not a.data.get(id(layer), (False,))[0]:
                    continue
                fmt = self.plan.fmt.get(tensor_key((), layer, 0))
                if fmt is None:
                    raise DeployError(f"{self.at}: a model input with no format in the plan")
                s = self.new(layer.name, fmt, self.shape_of(layer, 0), "input")
                inputs[s.base] = in_names.get(layer.id, layer.name)
                self.bind(layer, 0, s)
                continue
            info = a.info(layer)
            if layer.type == "ReadValue":
                self.read_value(layer, info)
                continue
            if info is None:
                continue
            if layer.type == "Assign":      # the variable's next value, stored at the end of the run
                var = layer.attrs.get("variable_id")
                if var in self.variables and self.variables[var] is None:
                    self.constant_variable(layer, var)
                    continue
                assigns.append((layer, self.input_sym(layer, 0)))
                continue
            if info.role == "output":
                src = self.input_sym(layer, 0)
                outputs[self.output(layer, src)] = out_names.get(layer.id, layer.name)
                continue
            self.layer(info)
        for layer, src in assigns:
            var = layer.attrs.get("variable_id")
            state = self.variables.get(var)
            self.at, self.label = f"layer {layer.name!r} (Assign)", layer.name
            if state is None:
                raise DeployError(f"{self.at}: no ReadValue of variable {var!r}")
            if src != state:
                self.copy_into(src, state)
        return inputs, outputs

    def constant_variable(self, layer, var):
        """A variable that is not data (a counter, a length): the program reads
        its initial value at every run, so its Assign must store that value."""
        reader = next(l for l in self.graph.order if l.type == "ReadValue" and l.attrs.get("variable_id") == var)
        got, init = self.args.get(id(layer)), self.shapes.get(id(reader)) and self.args.get(id(reader))
        before = np.asarray(self._read_value_out(reader)) if init is not None else None
        if not got or before is None or not np.array_equal(np.asarray(got[0][0]), before):
            raise DeployError(f"layer {layer.name!r} (Assign): variable {var!r} changes from run to run, but the "
                              "whole-model plan reads it as a constant (its initial value): a program cannot carry "
                              "it from one run to the next")

    def _read_value_out(self, reader):
        from .. import ir
        return ir._build(reader, self.graph)(*self.args[id(reader)][0]) if reader.inputs else None

    def read_value(self, layer, info):
        """A ReadValue: a state tensor kept between runs (model_reset_state sets
        it to the initial value, constant here)."""
        self.at = f"layer {layer.name!r} (ReadValue)"
        if self.plan.fmt.get(tensor_key((), layer, 0)) is None:      # not data: read as a constant
            self.variables[layer.attrs.get("variable_id")] = None
            return
        fmt = self.out_fmt(layer, 0)
        shape = self.shape_of(layer, 0)
        if info is not None and info.data_in and info.data_in[0]:
            init = self.input_sym(layer, 0)
            t = self.p.tensors[init.base]
            if t.role != "const" or init.offset or init.size != t.size or init.fmt != fmt:
                raise DeployError(f"{self.at}: the initial value of a variable must be a constant")
            q = t.values.reshape(shape)
        else:
            calls = self.args.get(id(layer))
            q = quantize(np.asarray(calls[0][0], np.float32), *fmt).reshape(shape) if layer.inputs and calls \
                else np.zeros(shape, np.int8 if fmt[0] == "fx8" else np.int16)
        var = layer.attrs.get("variable_id")
        if var in self.variables:
            raise DeployError(f"{self.at}: variable {var!r} is read twice")
        s = self.new(layer.name, fmt, shape, "state", values=q)
        self.variables[var] = s
        self.bind(layer, 0, s)

    def layer(self, info):
        getattr(self, "l_" + info.role, self.refuse)(info)

    def refuse(self, info):
        what = {"float": "kept in float (float_ops)"}
        raise DeployError(f"{self.at}: {what.get(info.role, f'role {info.role!r} is not lowered to MLI calls yet')}")

    def output(self, layer, src):
        """A model output: the producing tensor itself where it is a whole
        activation, else a copy."""
        t = self.p.tensors[src.base]
        if t.role == "activation" and src.offset == 0 and t.size == src.size and len(src.shape) <= 4:
            t.role = "output"
            if t.shape != src.shape:
                t.shape = src.shape
            return src.base
        out = self.new(layer.name, src.fmt, src.shape, "output")
        self.copy_into(src, out)
        return out.base

    # ------------------------------------------------------------------ roles
    def l_view(self, info):
        s = self.input_sym(info.layer, 0)
        shape = self.shape_of(info.layer, 0)
        self.bind(info.layer, 0, _Sym(s.base, s.offset, shape, s.fmt))

    def l_bias(self, info):
        j = list(info.data_in).index(True)
        self.bind(info.layer, 0, self.input_sym(info.layer, j))

    def _index_map(self, info, fmt_of_out):
        """For a copy layer: per output, (source symbol per element, source element)."""
        from .. import ir
        layer = info.layer
        g = self.wm.float_model.graph
        fn = ir._build(layer, g)
        args, srcs, base = [], [], 0
        for i, d in enumerate(info.data_in):
            if d:
                s = self.input_sym(layer, i)
                args.append(np.arange(base, base + s.size, dtype=np.float64).reshape(s.shape))
                srcs.append((base, s))
                base += s.size
            else:
                args.append(self.static(info, i))
        if base >= 2 ** 24:
            raise DeployError(f"{self.at}: too large to map its copies")
        try:
            out = fn(*[a.astype(np.float32) if a.dtype == np.float64 else a for a in args])
        except Exception as e:      # the op on indices: any failure means it is not a plain copy
            raise DeployError(f"{self.at}: not a copy of its inputs' elements ({e})") from None
        return out if isinstance(out, tuple) else (out,), srcs

    def l_slice(self, info):
        self._copy(info)

    def l_select(self, info):
        self._copy(info)

    def l_concat(self, info):
        self._copy(info)

    def _copy(self, info):
        layer = info.layer
        outs, srcs = self._index_map(info, None)
        for k, o in enumerate(outs):
            if not info.data_out[k]:
                continue
            fmt = self.out_fmt(layer, k)
            idx = np.asarray(o).reshape(-1)
            if not np.all(np.isfinite(idx)) or np.any(idx != np.round(idx)):
                raise DeployError(f"{self.at}: output {k} is not a copy of its inputs' elements")
            idx = idx.astype(np.int64)
            shape = self.shape_of(layer, k)
            # runs of consecutive elements of one source
            breaks = np.nonzero(np.diff(idx) != 1)[0] + 1
            starts = np.concatenate([[0], breaks])
            ends = np.concatenate([breaks, [len(idx)]])
            pieces = []
            for a, b in zip(starts, ends):
                while a < b:        # a run may cross from one source into the next
                    first = int(idx[a])
                    j = max(j for j, (base, s) in enumerate(srcs) if base <= first)
                    base, s = srcs[j]
                    cut = min(b, a + (base + s.size - first))
                    pieces.append((a, cut, j, first - base))
                    a = cut
            if all(self.p.tensors[srcs[j][1].base].role == "const" for _, _, j, _ in pieces):
                vals = np.empty(len(idx), self.p.tensors[srcs[0][1].base].dtype)     # constants only: a constant
                for a, b, j, off in pieces:
                    s = srcs[j][1]
                    if s.fmt != tuple(fmt):
                        break
                    first = s.offset // _ITEM[s.fmt[0]] + off
                    vals[a:b] = self.p.tensors[s.base].values.reshape(-1)[first:first + b - a]
                else:
                    self.bind(layer, k, self.const(f"{layer.name}_{k}", fmt, vals.reshape(shape)))
                    continue
            if len(pieces) == 1 and srcs[pieces[0][2]][1].fmt == tuple(fmt):
                a, b, j, off = pieces[0]
                self.bind(layer, k, self.sub(srcs[j][1], off, shape))        # same bytes
                continue
            if len(pieces) > _MAX_COPIES:
                raise DeployError(f"{self.at}: output {k} takes {len(pieces)} separate copies "
                                  f"(more than {_MAX_COPIES})")
            out = self.new(f"{layer.name}_{k}", fmt, shape)
            for a, b, j, off in pieces:
                s = srcs[j][1]
                self.copy_into(self.sub(s, off, (b - a,)), self.sub(out, a, (b - a,)))
            self.bind(layer, k, out)

    # ------------------------------------------------------------------ TensorIterator / Loop
    def slice_sym(self, s, axis, begin, size, stem):
        """`size` entries of `s` from `begin` along `axis`: the same bytes where
        they are contiguous, else copies of the runs into a new tensor."""
        outer = int(np.prod(s.shape[:axis], dtype=np.int64))
        inner = int(np.prod(s.shape[axis + 1:], dtype=np.int64))
        shape = s.shape[:axis] + (size,) + s.shape[axis + 1:]
        if outer == 1:
            return self.sub(s, begin * inner, shape)
        if outer > _MAX_COPIES:
            raise DeployError(f"{self.at}: a slice of {outer} separate runs")
        out = self.new(stem, s.fmt, shape)
        for o in range(outer):
            self.copy_into(self.sub(s, (o * s.shape[axis] + begin) * inner, (size * inner,)),
                           self.sub(out, o * size * inner, (size * inner,)))
        return out

    def l_loop(self, info):
        from ..graph.ports import ConcatOutput, MergedInput, SlicedInput
        from ..ir.ops.subgraph import _subgraph_ports
        layer, body = info.layer, info.layer.body
        if self.path:
            raise DeployError(f"{self.at}: a TensorIterator/Loop inside another is not lowered")
        is_loop = layer.type == "Loop"
        ins, outs, edges, _, cond = _subgraph_ports(layer, is_loop)
        if is_loop:
            if info.data_in[0] or info.data_in[1]:
                raise DeployError(f"{self.at}: its trip count or condition depends on the data")
            if cond is not None:
                res = body.results[cond]
                src, sport = body.producer(res.id, res.inputs[0].id)
                k = [q.id for q in src.outputs].index(sport.id)
                if self.wm.analysis.data.get(id(src), (False,) * (k + 1))[k]:
                    raise DeployError(f"{self.at}: its body's execution condition depends on the data "
                                      "(an early exit: the number of iterations is not known before the run)")
        n = max((len(self.args[id(lay)]) for lay in body.order if id(lay) in self.args), default=0)
        if n == 0:
            raise DeployError(f"{self.at}: its body never ran in calibration")
        ext = {}
        for p in ins:
            src, sport = self.graph.producer(layer.id, layer.inputs[p.external].id)
            ext[p.external] = self.syms.get((id(src), sport.id))
        back = {e.to_parameter: e.from_result for e in edges}
        stacked = {}
        for o in outs:
            if isinstance(o, ConcatOutput):
                shape = self.shape_of(layer, o.external)
                ax = o.normalized_axis(len(shape))
                stacked[o.external] = (self.new(f"{layer.name}_{o.external}", self.out_fmt(layer, o.external),
                                                shape), ax, o.plan(shape[ax]))
        outer_at, results = self.at, {}
        self.path, self.graph, self.n_iter = (layer,), body, n
        try:
            for k in range(n):
                self.iter = k
                prev, results = results, {}
                for p in ins:
                    param = body.parameters[p.internal]
                    s = ext[p.external]
                    if isinstance(p, MergedInput) and k > 0:
                        s = prev.get(back[p.internal])
                    self.at = f"{outer_at}, body parameter {param.name!r}"
                    self.label = f"{layer.name}[{k}]/{param.name}"
                    if s is None:
                        if not self.wm.analysis.data.get(id(param), (False,))[0]:
                            continue            # a constant: its consumers read it as one
                        # data fed first by a constant (an initial state): that constant at the
                        # parameter's format, as the whole-model run quantizes it
                        if isinstance(p, SlicedInput):
                            raise DeployError(f"{self.at}: a sliced constant input")
                        fmt = self.out_fmt(param, 0)
                        s = self.const(f"{param.name}_init", fmt,
                                       quantize(np.asarray(self.static(info, p.external), np.float32), *fmt))
                    if isinstance(p, SlicedInput):
                        ax = p.normalized_axis(len(s.shape))
                        _, first, step = p.plan(s.shape[ax])
                        s = self.slice_sym(s, ax, first + k * step, p.part_size, f"{param.name}_{k}")
                    fmt = self.out_fmt(param, 0)
                    s = self.convert(s, fmt, f"{param.name}_{k}_in")
                    self.bind(param, 0, s)
                for lay in body.order:
                    if lay.type in ("Parameter", "Const", "Result"):
                        continue
                    linfo = self.wm.analysis.info(lay)
                    if linfo is None or linfo.role == "output":
                        continue
                    self.at = f"{outer_at}, iteration {k}, body layer {lay.name!r} ({lay.type})"
                    self.label = f"{layer.name}[{k}]/{lay.name}"
                    self.layer(linfo)
                for j, res in enumerate(body.results):
                    src, sport = body.producer(res.id, res.inputs[0].id)
                    s = self.syms.get((id(src), sport.id))
                    if s is not None:
                        results[j] = s
                for o in outs:
                    if o.external in stacked:
                        out, ax, (_, first, step) = stacked[o.external]
                        self.at = f"{outer_at}, iteration {k}, output {o.external}"
                        self.label = f"{layer.name}[{k}]:{o.external}"
                        self._place(results.get(o.internal), out, ax, first + k * step, o.part_size)
        finally:
            self.path, self.graph, self.at, self.iter, self.n_iter = (), self.wm.float_model.graph, outer_at, 0, 1
            self.label = layer.name
        for o in outs:
            if o.external in stacked:
                self.bind(layer, o.external, stacked[o.external][0])
            elif o.internal in results:
                s = results[o.internal]
                s = self.convert(s, self.out_fmt(layer, o.external), f"{layer.name}_{o.external}")
                self.bind(layer, o.external, _Sym(s.base, s.offset, self.shape_of(layer, o.external), s.fmt))

    def _place(self, s, out, axis, begin, size):
        """Copy body result `s` into entries ``begin...`` of `out` along `axis`."""
        if s is None:
            raise DeployError(f"{self.at}: the body result is not data the program holds")
        outer = int(np.prod(out.shape[:axis], dtype=np.int64))
        inner = int(np.prod(out.shape[axis + 1:], dtype=np.int64))
        if s.size != outer * size * inner:
            raise DeployError(f"{self.at}: a body result of {s.size} elements for a slot of {outer * size * inner}")
        if outer > _MAX_COPIES:
            raise DeployError(f"{self.at}: a result placed in {outer} separate runs")
        for o in range(outer):
            self.copy_into(self.sub(s, o * size * inner, (size * inner,)),
                           self.sub(out, (o * out.shape[axis] + begin) * inner, (size * inner,)))

    def l_permute(self, info):
        layer = info.layer
        s = self.input_sym(layer, 0)
        perm = [int(p) % len(s.shape) for p in self.static(info, 1).reshape(-1)] or list(range(len(s.shape)))[::-1]
        moved = [ax for ax in perm if s.shape[ax] != 1]
        shape = self.shape_of(layer, 0)
        if moved == sorted(moved) and self.out_fmt(layer, 0) == s.fmt:
            self.bind(layer, 0, _Sym(s.base, s.offset, shape, s.fmt))       # only axes of one element move
            return
        el = DATA_EL[self.plan.layers[info.key].kind]
        x = self.convert(s, self.need(info, 0, el), layer.name + "_in")
        if len(s.shape) > 4:
            raise DeployError(f"{self.at}: mli_krn_permute takes rank <= 4, got {len(s.shape)}")
        out = self.new(layer.name, self.out_fmt(layer, 0), shape)
        self.p.call(f"mli_krn_permute_{x.fmt[0]}", "permute", (self.tensor(x),), self.tensor(out),
                    mli.PermuteConfig(perm_dim=tuple(perm)), layer=self.label)
        self.bind(layer, 0, out)

    def _weights(self, info, w, bias_val):
        lp = self.plan.layers[info.key]
        wf = lp.static[1]
        qw = quantize(np.asarray(w, np.float32), *wf)
        bf = lp.static.get(-1)
        if bias_val is not None:
            qb = quantize(np.asarray(bias_val, np.float32).reshape(-1), *bf)
            bfmt = bf
        else:
            qb, bfmt = np.zeros(qw.shape[0], qw.dtype), (wf[0], 0)
        return self.const(info.layer.name + "_w", wf, qw), self.const(info.layer.name + "_b", bfmt, qb)

    def _fused_bias(self, info):
        bi = info.bias
        if bi is None:
            return None
        j = 1 - [bool(d) for d in bi.data_in].index(True)
        return self.wm.tap.static[f"{bi.key}#{j}"].reshape(-1)

    def l_fully_connected(self, info):
        layer = info.layer
        lp = self.plan.layers[info.key]
        el = DATA_EL[lp.kind]
        if not info.data_in[0] or info.data_in[1]:
            raise DeployError(f"{self.at}: a MatMul of data by constant weights is lowered, not this one")
        w = self.static(info, 1)
        W = w if layer.attrs.get("transpose_b", "false") == "true" else w.T
        tw, tb = self._weights(info, np.ascontiguousarray(W), self._fused_bias(info))
        M, K = self.p.tensors[tw.base].shape
        x = self.convert(self.input_sym(layer, 0), self.need(info, 0, el), layer.name + "_in")
        rows = x.size // K
        out = self.new(layer.name, self.out_fmt(layer, 0), x.shape[:-1] + (M,))
        for r in range(rows):
            self.p.call(f"mli_krn_fully_connected_{lp.kind}", "fc",
                        (self.tensor(self.sub(x, r * K, (K,))), tw.base, tb.base),
                        self.tensor(self.sub(out, r * M, (M,))), layer=self.label)
        self.bind(layer, 0, out)

    def _conv(self, info, depthwise):
        from ..fixed_point.whole import _pads
        layer = info.layer
        lp = self.plan.layers[info.key]
        el = DATA_EL[lp.kind]
        w = self.static(info, 1)
        if depthwise:
            w = w.reshape((w.shape[0], 1) + w.shape[3:])
        if w.ndim != 4:
            raise DeployError(f"{self.at}: only 2-D convolutions are lowered")
        tw, tb = self._weights(info, w, self._fused_bias(info))
        x = self.convert(self.input_sym(layer, 0), self.need(info, 0, el), layer.name + "_in")
        strides = [int(v) for v in layer.attrs.get("strides", "1,1").split(",")]
        b, e = _pads(layer, x.shape[2:], w.shape[2:], strides)
        cfg = mli.Conv2dConfig(stride_height=strides[0], stride_width=strides[1], padding_top=b[0],
                               padding_bottom=e[0], padding_left=b[1], padding_right=e[1])
        shape = self.shape_of(layer, 0)
        out = self.new(layer.name, self.out_fmt(layer, 0), shape)
        role = "depthwise_conv2d" if depthwise else "conv2d"
        func = self._variant(f"{role}_chw_{lp.kind}", x, cfg, self.p.tensors[tw.base], self.p.tensors[tb.base])
        n_in, n_out = int(np.prod(x.shape[1:])), int(np.prod(shape[1:]))
        for n in range(x.shape[0]):
            self.p.call(func, "conv",
                        (self.tensor(self.sub(x, n * n_in, x.shape[1:])), tw.base, tb.base),
                        self.tensor(self.sub(out, n * n_out, shape[1:])), cfg, layer=self.label)
        self.bind(layer, 0, out)

    def _variant(self, name, x, cfg, *consts):
        """The specialised MLI function the dispatcher `name` would call for
        one batch item of `x` (what the examples' firmware names)."""
        item = Tensor(np.zeros(x.shape[1:], np.int8 if x.fmt[0] == "fx8" else np.int16), x.fmt[1])
        args = [Tensor(t.values, t.frac) for t in consts]
        return getattr(mli, "debug_" + name)(item, *args, cfg)

    def _pool(self, info, kind):
        from ..fixed_point.whole import _pads
        layer = info.layer
        el = DATA_EL[self.plan.layers[info.key].kind]
        x = self.convert(self.input_sym(layer, 0), self.need(info, 0, el), layer.name + "_in")
        kh, kw = (int(v) for v in layer.attrs["kernel"].split(","))
        sh, sw = (int(v) for v in layer.attrs.get("strides", "1,1").split(","))
        if len(x.shape) != 4:
            raise DeployError(f"{self.at}: a pool of NCHW data is lowered, got {list(x.shape)}")
        b, e = _pads(layer, x.shape[2:], (kh, kw), (sh, sw))
        cfg = mli.PoolConfig(kernel_height=kh, kernel_width=kw, stride_height=sh, stride_width=sw,
                             padding_top=b[0], padding_bottom=e[0], padding_left=b[1], padding_right=e[1])
        shape = self.shape_of(layer, 0)
        out = self.new(layer.name, self.out_fmt(layer, 0), shape)
        func = self._variant(f"{kind}_chw_{x.fmt[0]}", x, cfg)
        n_in, n_out = int(np.prod(x.shape[1:])), int(np.prod(shape[1:]))
        for n in range(x.shape[0]):
            self.p.call(func, "pool", (self.tensor(self.sub(x, n * n_in, x.shape[1:])),),
                        self.tensor(self.sub(out, n * n_out, shape[1:])), cfg, layer=self.label)
        self.bind(layer, 0, out)

    def l_maxpool(self, info):
        self._pool(info, "maxpool")

    def l_avepool(self, info):
        self._pool(info, "avepool")

    def l_leaky_relu(self, info):
        layer = info.layer
        lp = self.plan.layers[info.key]
        el = DATA_EL[lp.kind]
        x = self.convert(self.input_sym(layer, 0), self.need(info, 0, el), layer.name + "_in")
        sf = lp.static[1]
        slope = quantize(np.asarray(self.static(info, 1), np.float32).reshape(()), *sf)
        name = self.fresh(layer.name + "_slope")
        self.p.add(name, sf[0], sf[1], (), "const", np.asarray(slope).reshape(()))
        out = self.new(layer.name, self.out_fmt(layer, 0), x.shape)
        self.p.call(f"mli_krn_leaky_relu_{el}", "leaky_relu", (self.flat(x), name), self.flat(out),
                    layer=self.label)
        self.bind(layer, 0, out)

    def l_conv2d(self, info):
        self._conv(info, False)

    def l_depthwise_conv2d(self, info):
        self._conv(info, True)

    def _unary(self, info, func, sig, cfg=None, rows_axis=False):
        layer = info.layer
        lp = self.plan.layers[info.key]
        el = DATA_EL[lp.kind]
        x = self.convert(self.input_sym(layer, 0), self.need(info, 0, el), layer.name + "_in")
        out = self.new(layer.name, self.out_fmt(layer, 0), x.shape)
        if not rows_axis:
            self.p.call(func, sig, (self.flat(x),), self.flat(out), cfg, layer=self.label)
        else:
            axis = int(layer.attrs.get("axis", "1")) % len(x.shape)
            if any(d != 1 for d in x.shape[axis + 1:]):
                raise DeployError(f"{self.at}: softmax over axis {axis} of {list(x.shape)} (not the last)")
            n = x.shape[axis]
            for r in range(x.size // n):
                self.p.call(func, sig, (self.tensor(self.sub(x, r * n, (n,))),),
                            self.tensor(self.sub(out, r * n, (n,))), cfg, layer=self.label)
        self.bind(layer, 0, out)

    def l_relu(self, info):
        layer = info.layer
        hi = float(layer.attrs.get("max", "inf")) if layer.type == "Clamp" else None
        rt = mli.ReluType.RELU_6 if hi == 6.0 else mli.ReluType.RELU_1 if hi == 1.0 else mli.ReluType.GEN
        el = DATA_EL[self.plan.layers[info.key].kind]
        self._unary(info, f"mli_krn_relu_{el}", "relu", rt)

    def l_sigm(self, info):
        self._unary(info, f"mli_krn_sigm_{DATA_EL[self.plan.layers[info.key].kind]}", "unary")

    def l_tanh(self, info):
        self._unary(info, f"mli_krn_tanh_{DATA_EL[self.plan.layers[info.key].kind]}", "unary")

    def l_softmax(self, info):
        self._unary(info, f"mli_krn_softmax_{DATA_EL[self.plan.layers[info.key].kind]}", "unary", rows_axis=True)

    def l_eltwise_add(self, info):
        self._eltwise(info)

    l_eltwise_sub = l_eltwise_mul = l_eltwise_max = l_eltwise_min = l_eltwise_add

    def _eltwise(self, info):
        layer = info.layer
        lp = self.plan.layers[info.key]
        el = DATA_EL[lp.kind]
        op = info.role.split("_")[1]
        of = self.out_fmt(layer, 0)
        shape = self.shape_of(layer, 0)
        size = int(np.prod(shape))
        names = []
        for i, d in enumerate(info.data_in):
            need = of if op in ("add", "sub", "max", "min") else (self.need(info, i, el) if d else lp.static[i])
            if d:
                s = self.convert(self.input_sym(layer, i), need, f"{layer.name}_in{i}")
                if s.size not in (1, size):
                    raise DeployError(f"{self.at}: input {i} {list(s.shape)} is broadcast to {list(shape)}")
                names.append(self.flat(s))
            else:
                v = np.asarray(self.static(info, i), np.float32)
                fmt = lp.static.get(i, need)
                q = quantize(v, *fmt)
                if q.size != 1 and q.shape != shape:
                    q = np.broadcast_to(q, shape)
                names.append(self.const(f"{layer.name}_c{i}", fmt, np.ascontiguousarray(q).reshape(-1)).base)
        out = self.new(layer.name, of, shape)
        self.p.call(f"mli_krn_eltwise_{op}_{el}", "eltwise", tuple(names), self.flat(out), layer=self.label)
        self.bind(layer, 0, out)

    def l_recurrent(self, info):
        from ..fixed_point.backends.mli1 import quantize as body_quantize
        from ..fixed_point.converters.recurrent import SequenceConverter
        from ..fixed_point.gru import GruCell
        from ..fixed_point.registry import converter_for
        layer = info.layer
        conv = converter_for(layer.type)
        cells = self.wm.cells[id(layer)]
        gru = any(isinstance(c.body, GruCell) for c in cells)
        lstm = conv.cell == "lstm"
        if not isinstance(conv, SequenceConverter):
            return self._cell(info, cells[0].body, lstm, gru)
        el = DATA_EL[self.plan.layers[info.key].kind]
        nstate = 2 if lstm else 1
        x = self.input_sym(layer, 0)
        B, T, N = x.shape
        lens = np.asarray(self.static(info, 1 + nstate)).reshape(-1) if not info.data_in[1 + nstate] else None
        if lens is None or lens.shape != (B,) or np.any(lens != T):
            raise DeployError(f"{self.at}: sequence lengths must be constants equal to the sequence's {T} steps")
        whats = [("x", 0), ("h", 1)] + ([("c", 2)] if lstm else [])
        ins = {}
        for what, i in whats:
            dst = (el, min(c.body.fracs[what] for c in cells))
            if info.data_in[i]:
                s = self.input_sym(layer, i)
                if s.fmt[0] != dst[0] or s.fmt[1] > dst[1]:
                    s = self.convert(s, dst, f"{layer.name}_{what}")
                ins[what] = s
            else:
                ins[what] = np.asarray(self.static(info, i), np.float32)
        dirs = conv.directions(layer)
        D = len(dirs)
        M = cells[0].body.state_size
        y = self.new(f"{layer.name}_y", self.out_fmt(layer, 0), (B, D, T, M))
        ho = self.new(f"{layer.name}_h", self.out_fmt(layer, 1), (B, D, M))
        co = self.new(f"{layer.name}_c", self.out_fmt(layer, 2), (B, D, M)) if lstm else None
        for d, reverse in enumerate(dirs):
            body = cells[d].body
            bf = {w: (el, body.fracs[w]) for w in body.fracs}
            per = {}
            for what, _ in whats:
                v = ins[what]
                if isinstance(v, _Sym):
                    per[what] = self.convert(v, bf[what], f"{layer.name}_{what}{d}")
                else:       # a constant initial state: each row's at the body's format
                    q = body_quantize(body, np.broadcast_to(v, (B, D, M))[:, d], what).reshape(B, M)
                    per[what] = [self.const(f"{layer.name}_{what}{d}_{b}", bf[what], q[b]) for b in range(B)]
            if gru:
                g = _GruLowering(self, body, f"{layer.name}_d{d}")
                for b in range(B):
                    prev = self._row(per["h"], b, d, D, M)
                    yrow = self.sub(y, (b * D + d) * T * M, (T, M))
                    for t in (range(T - 1, -1, -1) if reverse else range(T)):
                        yt = self.sub(yrow, t * M, (M,))
                        g.step(self.sub(per["x"], (b * T + t) * N, (N,)), prev, yt)
                        prev = yt
                    self.copy_into(prev, self.sub(ho, (b * D + d) * M, (M,)))
                continue
            wt = self.p.add_const(self.fresh(f"{layer.name}_w{d}"), body.weights).name
            bt = self.p.add_const(self.fresh(f"{layer.name}_b{d}"), body.bias).name
            ir = self.new(f"{layer.name}_ir{d}", (el, 0), (4 * M if lstm else M,), "scratch").base if lstm else None
            func = f"mli_krn_{'lstm_cell' if lstm else 'basic_rnn_cell'}_{body.kind}"
            cell = None
            if lstm:
                cell = self.new(f"{layer.name}_cell{d}", bf["c"], (B, M)) \
                    if bf["c"] != co.fmt else None
            for b in range(B):
                xs = self.sub(per["x"], b * T * N, (T, N))
                h0 = self._row(per["h"], b, d, D, M)
                yrow = self.sub(y, (b * D + d) * T * M, (T, M))
                c_row = None
                if lstm:
                    c_row = self.sub(cell, b * M, (M,)) if cell is not None else self.sub(co, (b * D + d) * M, (M,))
                    self.copy_into(self._row(per["c"], b, d, D, M), c_row)
                if not reverse:
                    self._cell_call(func, lstm, body, mli.RnnMode.BATCH_TO_BATCH, self.tensor(xs), self.tensor(h0),
                                    wt, bt, c_row, ir, self.tensor(yrow))
                    last = T - 1
                else:
                    prev = h0
                    for t in range(T - 1, -1, -1):
                        yt = self.sub(yrow, t * M, (M,))
                        self._cell_call(func, lstm, body, mli.RnnMode.ONE_TO_ONE,
                                        self.tensor(self.sub(xs, t * N, (N,))), self.tensor(prev), wt, bt, c_row,
                                        ir, self.tensor(yt))
                        prev = yt
                    last = 0
                self.copy_into(self.sub(yrow, last * M, (M,)), self.sub(ho, (b * D + d) * M, (M,)))
                if lstm and cell is not None:
                    self.copy_into(c_row, self.sub(co, (b * D + d) * M, (M,)))
        self.bind(layer, 0, y)
        self.bind(layer, 1, ho)
        if lstm:
            self.bind(layer, 2, co)

    def _cell(self, info, body, lstm, gru):
        """An LSTMCell / RNNCell / GRUCell (one step of B rows, one-to-one)."""
        from ..fixed_point.backends.mli1 import quantize as body_quantize
        layer = info.layer
        el = DATA_EL[self.plan.layers[info.key].kind]
        M = body.state_size
        whats = [("x", 0), ("h", 1)] + ([("c", 2)] if lstm else [])
        per = {}
        for what, i in whats:
            fmt = (el, body.fracs[what])
            if info.data_in[i]:
                s = self.input_sym(layer, i)
                if s.fmt[0] != fmt[0] or s.fmt[1] > fmt[1]:      # the whole-model run's conversion
                    s = self.convert(s, fmt, f"{layer.name}_{what}")
                per[what] = self.convert(s, fmt, f"{layer.name}_{what}q")
            else:
                q = body_quantize(body, np.asarray(self.static(info, i), np.float32), what)
                per[what] = self.const(f"{layer.name}_{what}", fmt, q.reshape(-1, M) if what != "x" else q)
        x, h = per["x"], per["h"]
        B = h.size // M
        N = x.size // B
        hout = self.new(f"{layer.name}_h", self.out_fmt(layer, 0), (B, M))
        key = ("cell", id(layer))
        if key not in self.aliases:
            if gru:
                self.aliases[key] = _GruLowering(self, body, layer.name)
            else:
                wt = self.p.add_const(self.fresh(f"{layer.name}_w"), body.weights).name
                bt = self.p.add_const(self.fresh(f"{layer.name}_b"), body.bias).name
                ir = self.new(f"{layer.name}_ir", (el, 0), (4 * M,), "scratch").base if lstm else None
                self.aliases[key] = (wt, bt, ir)
        impl = self.aliases[key]
        cout = self.new(f"{layer.name}_c", self.out_fmt(layer, 1), (B, M)) if lstm else None
        func = f"mli_krn_{'lstm_cell' if lstm else 'basic_rnn_cell'}_{body.kind}"
        for b in range(B):
            xb, hb, yb = (self.sub(x, b * N, (N,)), self._state_row(h, b, M), self.sub(hout, b * M, (M,)))
            if gru:
                impl.step(xb, hb, yb)
                continue
            wt, bt, ir = impl
            c_row = None
            if lstm:
                c_row = self.sub(cout, b * M, (M,))
                self.copy_into(self._state_row(per["c"], b, M), c_row)
            self._cell_call(func, lstm, body, mli.RnnMode.ONE_TO_ONE, self.tensor(xb), self.tensor(hb), wt, bt,
                            c_row, ir, self.tensor(yb))
        self.bind(layer, 0, _Sym(hout.base, 0, self.shape_of(layer, 0), hout.fmt))
        if lstm:
            self.bind(layer, 1, _Sym(cout.base, 0, self.shape_of(layer, 1), cout.fmt))

    def _state_row(self, s, b, M):
        """Row b of a state [B, M]; a constant of one row serves every row."""
        if self.p.tensors[s.base].role == "const":
            t = self.p.tensors[s.base]
            rows = t.values.reshape(-1, M)
            if len(rows) == 1:
                return self.const(f"{s.base}_r", s.fmt, rows[0]) if t.shape != (M,) else s
            return self.const(f"{s.base}_r{b}", s.fmt, rows[b])
        return self.sub(s, b * M, (M,))

    def _row(self, s, b, d, D, M):
        """Row b (direction d) of an initial state: a data symbol [B, D, M] or
        a list of per-row constants."""
        if isinstance(s, list):
            return s[b]
        return self.sub(s, (b * D + d) * M, (M,))

    def _cell_call(self, func, lstm, body, mode, x, h, wt, bt, c_row, ir, out):
        if lstm:
            self.p.call(func, "lstm", (x, h, wt, bt), out, (mode, body.act), state=(self.tensor(c_row),),
                        scratch=(ir,), layer=self.label)
        else:
            self.p.call(func, "rnn", (x, h, wt, bt), out, (mode, body.act), layer=self.label)


class _GruLowering:
    """The MLI calls of one step of a :class:`mli.fixed_point.gru.GruCell`
    (its module's table), on work tensors reused at every step."""

    def __init__(self, lw, body, stem):
        self.lw, self.b = lw, body
        M, d, q = body.state_size, body.data_el, body.state_frac
        self.d, self.q = d, q
        self.w = {k: lw.p.add_const(lw.fresh(f"{stem}_w{k}"), t).name for k, t in body.weights.items()}
        self.bias = {k: lw.p.add_const(lw.fresh(f"{stem}_b{k}"), t).name for k, t in body.biases.items()}
        self.lim = {}
        if body.clip > 0:
            for f in body._clip_hi:
                self.lim[f] = tuple(lw.p.add(lw.fresh(f"{stem}_{side}{f}"), d, f, (), "const",
                                             np.asarray(t.numpy(), body.dtype).reshape(())).name
                                    for side, t in (("hi", body._clip_hi[f]), ("lo", body._clip_lo[f])))
        self.gates = lw.new(f"{stem}_g", (d, body.gate_frac), (2, M))
        self.s = lw.new(f"{stem}_s", (d, q), (2, M))
        self.tmp = {}
        self.stem = stem

    def t(self, name, frac, shape):
        key = (name, frac, shape)
        if key not in self.tmp:
            self.tmp[key] = self.lw.new(f"{self.stem}_{name}", (self.d, frac), shape)
        return self.tmp[key]

    def call(self, func, sig, ins, out, cfg=None):
        lw = self.lw
        lw.p.call(func, sig, tuple(i if isinstance(i, str) else lw.tensor(i) for i in ins), lw.tensor(out), cfg,
                  layer=lw.at)

    def clamp(self, a):
        if self.b.clip <= 0:
            return a
        hi, lo = self.lim[a.fmt[1]]
        lo_out = self.t(f"clip{a.fmt[1]}", a.fmt[1], a.shape)
        self.call(f"mli_krn_eltwise_min_{self.d}", "eltwise", (a, hi), lo_out)
        out = self.t(f"clamped{a.fmt[1]}", a.fmt[1], a.shape)
        self.call(f"mli_krn_eltwise_max_{self.d}", "eltwise", (lo_out, lo), out)
        return out

    def step(self, x, h, out):
        """h' of one row into `out` from x [N] and h [M] (symbols)."""
        b, lw, d, q = self.b, self.lw, self.d, self.q
        M = b.state_size
        none = (mli.RnnMode.ONE_TO_ONE, mli.RnnActivation.NONE)
        rnn = f"mli_krn_basic_rnn_cell_{b.kind}"
        self.call(rnn, "rnn", (x, h, self.w["zr"], self.bias["zr"]), self.gates, none)
        g = self.clamp(self.gates)
        self.call(f"mli_krn_sigm_{d}", "unary", (g,), self.s)
        z, r = lw.sub(self.s, 0, (M,)), lw.sub(self.s, M, (M,))
        mul = f"mli_krn_eltwise_mul_{d}"
        if b.linear_before_reset:
            nf = b.n_frac
            xn, hn, rhn, a = (self.t(k, nf, (M,)) for k in ("xn", "hn", "rhn", "a"))
            self.call(f"mli_krn_fully_connected_{b.kind}", "fc", (x, self.w["xn"], self.bias["xn"]), xn)
            self.call(f"mli_krn_fully_connected_{b.kind}", "fc", (h, self.w["hn"], self.bias["hn"]), hn)
            self.call(mul, "eltwise", (r, hn), rhn)
            self.call(f"mli_krn_eltwise_add_{d}", "eltwise", (xn, rhn), a)
            n = self.t("n", q, (M,))
            self.call(f"mli_krn_tanh_{d}", "unary", (self.clamp(a),), n)
        else:
            rh, n = self.t("rh", q, (M,)), self.t("n", q, (M,))
            self.call(mul, "eltwise", (r, h), rh)
            if b.clip > 0:
                a = self.t("a", b.gate_frac, (M,))
                self.call(rnn, "rnn", (x, rh, self.w["n"], self.bias["n"]), a, none)
                self.call(f"mli_krn_tanh_{d}", "unary", (self.clamp(a),), n)
            else:
                self.call(rnn, "rnn", (x, rh, self.w["n"], self.bias["n"]), n,
                          (mli.RnnMode.ONE_TO_ONE, mli.RnnActivation.TANH))
        zh, zn, nz = (self.t(k, q, (M,)) for k in ("zh", "zn", "nz"))
        self.call(mul, "eltwise", (z, h), zh)
        self.call(mul, "eltwise", (z, n), zn)
        self.call(f"mli_krn_eltwise_sub_{d}", "eltwise", (n, zn), nz)
        self.call(f"mli_krn_eltwise_add_{d}", "eltwise", (nz, zh), out)


def fold_copies(prog):
    """Drop copies whose source tensor could have been written in place: a
    whole activation written by one step and copied, in its own format, into
    bytes of another tensor that nothing else writes becomes a view of those
    bytes (its writer writes there directly).  Returns how many went."""
    writers, written = {}, {}
    for k, st in enumerate(prog.steps):
        for n in st.writes():
            writers.setdefault(prog.base(n), []).append(k)
            written.setdefault(n, []).append(k)
    drop = set()
    for k, st in enumerate(prog.steps):
        if st.func != "mli_hlp_convert_tensor":
            continue
        src, dst = prog.tensors[st.ins[0]], prog.tensors[st.out]
        a = prog.base(src.name)
        A, B = prog.tensors[a], prog.tensors[prog.base(dst.name)]
        if A.role != "activation" or A.name == B.name or src.nbytes != A.nbytes or (src.el, src.frac) != \
                (dst.el, dst.frac) or len(writers.get(a, ())) != 1 or writers[a][0] >= k:
            continue
        if dst.role != "view" or B.role not in ("activation", "output") or written.get(dst.name) != [k]:
            continue
        lo = dst.byte_offset
        # nothing else writes the slot's bytes: only whole-tensor or disjoint views of B are written elsewhere
        if any(j != k for j in writers.get(B.name, ()) if _touches(prog, prog.steps[j], B.name, lo, dst.nbytes)):
            continue
        # A's bytes become the slot: A and its views as views of B
        for v in list(prog.tensors.values()):
            if v.role == "view" and v.parent == a:
                v.parent, v.byte_offset = B.name, lo + v.byte_offset
        A.role, A.parent, A.byte_offset = "view", B.name, lo
        drop.add(k)
        writers[B.name] = writers.get(B.name, []) + writers.pop(a)
    prog.steps = [st for k, st in enumerate(prog.steps) if k not in drop]
    return len(drop)


def _touches(prog, st, base, lo, n):
    for name in st.writes():
        t = prog.tensors[name]
        if prog.base(name) != base:
            continue
        off = t.byte_offset if t.role == "view" else 0
        if off < lo + n and lo < off + t.nbytes:
            return True
    return False


def lower(wm, samples, name="model"):
    """The :class:`LoweredModel` of a whole-model fixed-point model `wm`
    (:func:`mli.fixed_point.to_fixed_point` with ``scope="model"``) and its
    golden input `samples` (dicts of float arrays by model input name),
    checked against ``wm.run(trace=True)`` on every sample."""
    lw = _Lowering(wm, name)
    lw.capture(samples[0])
    inputs, outputs = lw.run(samples)
    prog = lw.p
    fold_copies(prog)
    used = {n for st in prog.steps for n in st.reads() + st.writes()}
    pruned = {}
    for t in list(prog.tensors.values()):        # constants only their parts were taken from
        if t.role == "const" and t.name not in used:
            pruned[t.name] = prog.tensors.pop(t.name)
    prog.check()
    ins = []
    for s in samples:
        d = {}
        for pname, iname in inputs.items():
            t = prog.tensors[pname]
            if iname not in s:
                raise DeployError(f"samples: input {iname!r} is missing")
            d[pname] = quantize(np.asarray(s[iname], np.float32), t.el, t.frac).reshape(t.shape)
        ins.append(d)
    for k, (s, d) in enumerate(zip(samples, ins)):
        wm.reset_state()        # as the program: each sample from the variables' initial values
        _, trace = wm.run(s, trace=True)
        vals, _ = prog.run(d)
        for (key, it), (sym, n) in lw.body_keys.items():     # body tensors: iteration by iteration
            want = trace.get(key)
            if want is None or np.asarray(want).size != sym.size * n:
                continue
            got = _sym_values(prog, vals, sym, pruned)
            if not np.array_equal(got, np.asarray(want).reshape(n, -1)[it]):
                raise DeployError(f"internal: the program's {key!r} (iteration {it}) differs from the "
                                  f"whole-model run on sample {k}")
        for key, sym in lw.keys.items():
            want = trace.get(key)
            if want is None:
                continue
            got = _sym_values(prog, vals, sym, pruned)
            want = np.asarray(want).reshape(-1)
            if got.shape != want.shape or not np.array_equal(got, want):
                bad = int(np.argmax(got != want)) if got.shape == want.shape else -1
                raise DeployError(f"internal: the program's {key!r} differs from the whole-model run on sample {k} "
                                  f"(element {bad}: {got[bad] if bad >= 0 else got.shape} vs "
                                  f"{want[bad] if bad >= 0 else want.shape})")
    named = {}
    for t, oname in list(outputs.items()):     # the outputs under the model's names where they are free
        want = c_ident(oname)
        if want != t and want not in prog.tensors and want not in named.values():
            prog.rename(t, want)
            named[t] = want
    outputs = {named.get(t, t): o for t, o in outputs.items()}
    return LoweredModel(prog, ins, inputs, outputs)


def _sym_values(prog, vals, sym, pruned):
    name, offset = sym.base, sym.offset
    t = prog.tensors.get(name) or pruned[name]
    if t.role == "view":            # folded into another tensor's bytes (fold_copies)
        name, offset = t.parent, offset + t.byte_offset
    sym = _Sym(name, offset, sym.shape, sym.fmt)
    t = prog.tensors.get(name) or pruned[name]
    raw = np.ascontiguousarray(vals[name] if name in vals else t.values).reshape(-1).view(np.uint8)
    n = sym.size * t.dtype.itemsize
    return raw[sym.offset:sym.offset + n].view(t.dtype)
