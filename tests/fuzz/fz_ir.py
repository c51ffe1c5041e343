"""Fuzz target `ir`: mli.ir.read_model on mutated OpenVINO IR (.xml + .bin)
from shared/vectors/ov_ti_loop (and tests/data/ir), then running the model
on the case's inputs or on random inputs of the declared types.

A spec names the seed model and lists mutations, each a tuple of small ints
that the executor maps onto the parsed tree (indices taken modulo the number
of candidates), so a spec is a plain literal that replays exactly:
  xml_ops  : ("attr", i, j, v) ("dim", i, v) ("text", i, v) ("delete", i) ("dup", i)
             ("edge", i, field, v) ("cycle", i) ("type", i, t) ("move", i, j) ("ids", i, j)
  byte_ops : ("truncate", frac) ("flip", pos, byte) ("insert", pos, k) ("doctype", k)
  bin_ops  : ("truncate", frac) ("flip", pos, byte) ("missing",) ("empty",) ("i64", pos, v)
"""
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from mli import ir

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = Path(os.environ.get("MLI_SHARED") or ROOT.parent / "shared")
OV = SHARED / "vectors" / "ov_ti_loop"


def _seeds():
    out = sorted(OV.glob("*.xml")) if OV.is_dir() else []
    out += sorted((ROOT / "tests" / "data" / "ir").glob("*.xml"))
    return out


SEEDS = _seeds()
SEED_NAMES = tuple(str(p) for p in SEEDS)
_CACHE = {}

VALUES = ("-1", "0", "1", "2", "3", "-2", "7", "999999", "4294967296", "9223372036854775807",
          "-9223372036854775808", "18446744073709551616", "abc", "", " ", "1.5", "nan", "?", "1..3", "-1..-1",
          "f32", "i64", "i32", "boolean", "u1", "bf16", "f16", "u64", "string", "numpy", "none", "pdpd",
          "opset1", "opset5", "opset99", "0,-1", "1,2,3", "2,2,2,2,2,2,2,2,2", "[]", "[2,3]", "0,0",
          "current_iteration", "execution_condition", "FP32", "I64", "BOOL", "U8",
          "100000000", "-100000000", "1e3", "0x10", "\u00e9", "&amp;", "Parameter", "Result", "Const")
TYPES = ("Parameter", "Const", "Result", "Add", "Subtract", "Multiply", "MatMul", "Reshape", "Squeeze",
         "Unsqueeze", "Concat", "Gather", "Range", "ShapeOf", "Convert", "Select", "LSTMCell", "GRUCell",
         "RNNCell", "TensorIterator", "Loop", "Sigmoid", "Tanh", "Relu", "ReduceSum", "Less", "Greater",
         "LogicalAnd", "LogicalNot", "Broadcast", "Tile", "NoSuchOp", "")
DOCTYPES = (b'<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>',
            b'<!DOCTYPE net SYSTEM "file:///etc/passwd">',
            b'<!ENTITY x SYSTEM "file:///etc/hostname">',
            b'<!doctype net>',
            b'<?xml-stylesheet href="x"?>',
            b'<!-- comment -->',
            b'<![CDATA[<layer/>]]>')


def seed_files(name):
    if name not in _CACHE:
        p = Path(name)
        b = p.with_suffix(".bin")
        inputs = {}
        npz = p.with_suffix(".npz")
        if npz.is_file():
            with np.load(npz, allow_pickle=False) as z:
                inputs = {k[4:]: z[k] for k in z.files if k.startswith("in__")}
        _CACHE[name] = (p.read_bytes(), b.read_bytes() if b.is_file() else None, inputs)
    return _CACHE[name]


small = st.integers(0, 10**6)


def xml_op():
    return st.one_of(
        st.tuples(st.just("attr"), small, small, st.sampled_from(VALUES)),
        st.tuples(st.just("dim"), small, st.sampled_from(VALUES)),
        st.tuples(st.just("delete"), small),
        st.tuples(st.just("dup"), small),
        st.tuples(st.just("edge"), small, st.sampled_from(("from-layer", "from-port", "to-layer", "to-port")),
                  st.integers(-2, 40)),
        st.tuples(st.just("cycle"), small),
        st.tuples(st.just("type"), small, st.sampled_from(TYPES)),
        st.tuples(st.just("move"), small, small),
        st.tuples(st.just("ids"), small, small),
        st.tuples(st.just("text"), small, st.sampled_from(VALUES)),
    )


def byte_op():
    return st.one_of(
        st.tuples(st.just("truncate"), st.integers(0, 999)),
        st.tuples(st.just("flip"), small, st.integers(0, 255)),
        st.tuples(st.just("insert"), small, st.integers(0, len(DOCTYPES) - 1)),
        st.tuples(st.just("doctype"), st.integers(0, len(DOCTYPES) - 1)),
    )


def bin_op():
    return st.one_of(
        st.tuples(st.just("truncate"), st.integers(0, 999)),
        st.tuples(st.just("flip"), small, st.integers(0, 255)),
        st.tuples(st.just("i64"), small, st.sampled_from((0, 1, -1, 2, 5, 100, 2**31, -2**63, 2**62))),
        st.tuples(st.just("missing")),
        st.tuples(st.just("empty")),
    )


def ir_spec():
    if not SEEDS:
        raise SystemExit(f"no IR seed files under {OV} (set MLI_SHARED)")
    return st.fixed_dictionaries({
        "case": st.sampled_from(SEED_NAMES),
        "xml_ops": st.lists(xml_op(), max_size=4).map(tuple),
        "byte_ops": st.lists(byte_op(), max_size=2).map(tuple) | st.just(()),
        "bin_ops": st.lists(bin_op(), max_size=2).map(tuple) | st.just(()),
        "inputs": st.sampled_from(("case", "case", "random", "wrong", "none")),
        "run": st.booleans() | st.just(True),
    })


# ------------------------------------------------------------------ mutation
def _all(root):
    return [e for e in root.iter() if e is not root]


def _parents(root):
    return {c: p for p in root.iter() for c in p}


def apply_xml_op(root, op):
    kind = op[0]
    els = _all(root)
    if not els:
        return
    if kind == "attr":
        cands = [e for e in els if e.attrib]
        if cands:
            e = cands[op[1] % len(cands)]
            keys = sorted(e.attrib)
            e.set(keys[op[2] % len(keys)], op[3])
    elif kind == "dim":
        dims = [e for e in els if e.tag == "dim"]
        if dims:
            dims[op[1] % len(dims)].text = op[2]
    elif kind == "text":
        e = els[op[1] % len(els)]
        e.text = op[2]
    elif kind == "delete":
        par = _parents(root)
        e = els[op[1] % len(els)]
        par[e].remove(e)
    elif kind == "dup":
        par = _parents(root)
        e = els[op[1] % len(els)]
        import copy
        par[e].append(copy.deepcopy(e))
    elif kind == "edge":
        edges = [e for e in els if e.tag == "edge"]
        if edges:
            edges[op[1] % len(edges)].set(op[2], str(op[3]))
    elif kind == "cycle":
        # an edge from a layer's output back into an earlier layer of the same graph
        graphs = [e for e in [root] + els if e.find("layers") is not None and e.find("edges") is not None]
        if graphs:
            g = graphs[op[1] % len(graphs)]
            layers = g.find("layers").findall("layer")
            edges = g.find("edges").findall("edge")
            if edges and layers:
                e = edges[op[1] % len(edges)]
                # reverse the edge: to-layer now feeds from-layer
                fl, fp, tl, tp = (e.get(k) for k in ("from-layer", "from-port", "to-layer", "to-port"))
                ET.SubElement(g.find("edges"), "edge", {"from-layer": tl or "0", "from-port": fp or "0",
                                                        "to-layer": fl or "0", "to-port": tp or "0"})
    elif kind == "type":
        layers = [e for e in els if e.tag == "layer"]
        if layers:
            layers[op[1] % len(layers)].set("type", op[2])
    elif kind == "move":
        par = _parents(root)
        e = els[op[1] % len(els)]
        dst_c = [x for x in [root] + els if x is not e and e not in x.iter() and x not in e.iter()]
        if dst_c:
            dst = dst_c[op[2] % len(dst_c)]
            par[e].remove(e)
            dst.append(e)
    elif kind == "ids":
        layers = [e for e in els if e.tag == "layer"]
        if len(layers) >= 2:
            a, b = layers[op[1] % len(layers)], layers[op[2] % len(layers)]
            ia, ib = a.get("id"), b.get("id")
            a.set("id", ib or "0")
            b.set("id", ia or "0")


def apply_byte_op(data, op):
    kind = op[0]
    if kind == "truncate":
        return data[: len(data) * op[1] // 1000]
    if kind == "flip":
        if not data:
            return data
        i = op[1] % len(data)
        return data[:i] + bytes([op[2]]) + data[i + 1:]
    if kind == "insert":
        i = op[1] % (len(data) + 1)
        return data[:i] + DOCTYPES[op[2]] + data[i:]
    if kind == "doctype":
        decl_end = data.find(b"?>") + 2 if data.startswith(b"<?xml") else 0
        return data[:decl_end] + DOCTYPES[op[1]] + data[decl_end:]
    raise AssertionError(op)


def apply_bin_op(data, op):
    kind = op[0]
    if data is None:
        return None
    if kind == "missing":
        return None
    if kind == "empty":
        return b""
    if kind == "i64":
        if len(data) < 8:
            return data
        i = (op[1] % (len(data) // 8)) * 8
        return data[:i] + int(op[2]).to_bytes(8, "little", signed=True) + data[i + 8:]
    return apply_byte_op(data, op)


# ------------------------------------------------------------------ running
def _random_input(t, rng, wrong=False):
    dims = [2 if d is None else d for d in t.dims]
    dt = t.dtype if t.dtype is not None else np.dtype(np.float32)
    if wrong:
        choice = rng.integers(0, 4)
        if choice == 0:
            dt = np.dtype(np.float64) if dt != np.float64 else np.dtype(np.int32)
        elif choice == 1:
            dims = dims + [1]
        elif choice == 2:
            dims = [d + 1 for d in dims]
        else:
            return "not an array"
    if dt.kind == "b":
        return rng.integers(0, 2, dims).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0, 5, dims).astype(dt)
    return rng.uniform(-2, 2, dims).astype(dt)


def run_ir_spec(spec, workdir=None):
    xml0, bin0, case_inputs = seed_files(spec["case"])
    data = xml0
    if spec["xml_ops"]:
        try:
            root = ET.fromstring(xml0)
        except ET.ParseError:
            root = None
        if root is not None:
            for op in spec["xml_ops"]:
                apply_xml_op(root, op)
            data = ET.tostring(root)
    for op in spec["byte_ops"]:
        data = apply_byte_op(data, op)
    b = bin0
    for op in spec["bin_ops"]:
        b = apply_bin_op(b, op)
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        xp = Path(d) / "model.xml"
        xp.write_bytes(data)
        if b is not None:
            (Path(d) / "model.bin").write_bytes(b)
        model = ir.read_model(xp)
        repr(model)
        if not spec["run"] or spec["inputs"] == "none":
            return
        rng = np.random.default_rng(len(data))
        if spec["inputs"] == "case" and case_inputs:
            inputs = dict(case_inputs)
        else:
            inputs = {t.name: _random_input(t, rng, spec["inputs"] == "wrong") for t in model.inputs}
        before = {k: (v.tobytes(), v.dtype, v.shape) for k, v in inputs.items() if isinstance(v, np.ndarray)}
        try:
            out = model(inputs)
        finally:
            for k, (bb, dt, sh) in before.items():
                v = inputs[k]
                if v.tobytes() != bb or v.dtype != dt or v.shape != sh:
                    from common import Finding
                    raise Finding(f"model run modified input {k!r}")
        for v in out.values():
            np.asarray(v).sum()
