"""The op registry: every op's type, versions, attributes and ports in one place.

An op family module registers a *builder* per op::

    @register("Transpose", {"opset1"})
    @ports(2)
    def _transpose(layer, attrs, graph):
        return lambda data, order: ...

``register(types, versions, **attributes)`` records, for each type, the opset
versions it accepts and its ``<data>`` attributes as ``name=(parse, default)``
(``REQUIRED`` for mandatory ones; ``_spec=fn(layer)`` when they depend on the
version).  ``ports(n_inputs, n_outputs)`` declares the accepted port counts.
:func:`build` parses and checks a layer's attributes and ports and calls the
builder, which returns the step ``fn(*input_arrays) -> array or tuple``.
:func:`check_supported` lists every layer of a graph (bodies included) whose
op or version is not registered, all at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ELEMENT_TYPES, IRError, IRUnsupportedError, _expect_ports

__all__ = ["register", "ports", "build", "check_supported", "supported_ops", "REQUIRED", "OpSpec"]

REQUIRED = object()

#: layer types handled by the reader itself (no builder)
STRUCTURAL = {"Parameter": ("opset1",), "Const": ("opset1",), "Result": ("opset1",)}


@dataclass(frozen=True)
class OpSpec:
    """One registered op: type, accepted versions, attribute spec, builder, family."""

    type: str
    versions: frozenset
    attributes: dict
    builder: object
    family: str


_OPS: dict = {}          # type -> OpSpec


def register(types, versions, **attributes):
    """Register a builder ``fn(layer, attrs, graph) -> step`` for one or more op types."""
    def deco(builder):
        family = builder.__module__.rsplit(".", 1)[-1]
        for t in (types,) if isinstance(types, str) else types:
            if t in _OPS:
                raise RuntimeError(f"op {t} registered twice")
            _OPS[t] = OpSpec(t, frozenset(versions), attributes, builder, family)
        return builder
    return deco


def ports(n_inputs, n_outputs=1):
    """Declare a builder's accepted input count(s) and output count(s) (None: any)."""
    def deco(builder):
        builder.n_inputs, builder.n_outputs = n_inputs, n_outputs
        return builder
    return deco


def unsupported_reason(layer_type, version):
    """Why (type, version) is not supported, or None when it is."""
    if layer_type in STRUCTURAL:
        return None
    spec = _OPS.get(layer_type)
    if spec is None:
        return f"op type {layer_type!r} is not supported (version {version!r})"
    if version not in spec.versions:
        return (f"{layer_type} version {version!r} is not supported "
                f"(supported: {', '.join(sorted(spec.versions))})")
    return None


def check_supported(graph):
    """Raise IRUnsupportedError listing every layer (bodies included) whose op type or
    version is not registered."""
    bad = []
    for _, layer in graph.walk():
        why = unsupported_reason(layer.type, layer.version)
        if why:
            bad.append(f"{layer}: {why}")
    if bad:
        head = "" if len(bad) == 1 else f"{len(bad)} layers use unsupported ops: "
        err = IRUnsupportedError(head + "; ".join(bad))
        err.located = True
        raise err


def build(layer, graph):
    """Parse ``layer``'s attributes and ports and return its compiled step."""
    why = unsupported_reason(layer.type, layer.version)
    if why:
        raise IRUnsupportedError(why)
    spec = _OPS[layer.type]
    attr_spec = spec.attributes
    if "_spec" in attr_spec:
        attr_spec = attr_spec["_spec"](layer)
    attrs = {}
    unknown = set(layer.attrs) - set(attr_spec)
    if unknown:
        raise IRUnsupportedError(f"unsupported attribute(s) {sorted(unknown)}")
    for key, (parse, default) in attr_spec.items():
        if key in layer.attrs:
            try:
                attrs[key] = parse(layer.attrs[key])
            except (ValueError, KeyError, TypeError, IRError):
                raise IRError(f"attribute {key}={layer.attrs[key]!r} is invalid") from None
        elif default is REQUIRED:
            raise IRError(f"missing required attribute {key!r}")
        else:
            attrs[key] = default
    b = spec.builder
    _expect_ports(layer, getattr(b, "n_inputs", None), getattr(b, "n_outputs", 1))
    return b(layer, attrs, graph)


def supported_ops():
    """``{op type: (versions...)}`` of every supported op, structural layers included."""
    out = {t: tuple(sorted(s.versions)) for t, s in _OPS.items()}
    out.update(STRUCTURAL)
    return dict(sorted(out.items()))


def ops_by_family():
    """``{family: ["Type-opsetN", ...]}`` (for documentation)."""
    fam = {}
    for t, s in sorted(_OPS.items()):
        fam.setdefault(s.family, []).extend(f"{t}-{v}" for v in sorted(s.versions))
    return fam


# ---------------------------------------------------------------------------- attribute parsers
def parse_bool(text):
    t = text.strip().lower()
    if t not in ("true", "false", "1", "0"):
        raise ValueError(text)
    return t in ("true", "1")


def parse_strlist(text):
    return [s.strip() for s in text.split(",") if s.strip()]


def parse_floats(text):
    return [float(s) for s in parse_strlist(text)]


def parse_ints(text):
    return [int(s) for s in parse_strlist(text.strip().strip("[]"))]


def choice(*options):
    def parse(text):
        if text not in options:
            raise ValueError(text)
        return text
    return parse


def element_type(text):
    if text not in ELEMENT_TYPES:
        raise IRUnsupportedError(f"element type {text!r} is not supported "
                                 f"(supported: {', '.join(ELEMENT_TYPES)})")
    return text


BROADCAST = {"auto_broadcast": (choice("numpy", "none"), "numpy")}


# ---------------------------------------------------------------------------- run-time helpers
def arr(r):
    return r if type(r) is np.ndarray else np.asarray(r)


def ints(x, what):
    """Integer scalar or 1-D tensor -> list of int."""
    x = np.asarray(x)
    if x.dtype.kind not in "iu" or x.ndim > 1:
        raise IRError(f"{what} must be an integer scalar or 1-D tensor, "
                      f"got {x.dtype}{list(x.shape)}")
    return x.reshape(-1).tolist()


def axis(a, rank, what="axis"):
    """Normalise a possibly negative axis for ``rank``."""
    if not -rank <= a < max(rank, 1):
        raise IRError(f"{what} {a} out of range for rank {rank}")
    return a + rank if a < 0 else a
