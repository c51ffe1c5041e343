"""Errors, element types and the guards that make every failure name its layer."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Dict

import numpy as np

from ..graph import GraphError

#: deepest nesting of TensorIterator/Loop bodies (each level costs Python stack
#: frames when parsing, compiling and running; real models nest 1 or 2 deep)
MAX_BODY_DEPTH = 32


class IRError(ValueError):
    """Malformed or inconsistent OpenVINO IR, or invalid data for it."""


class IRUnsupportedError(IRError, NotImplementedError):
    """Valid IR that uses an op, version, attribute or type this reader does not support."""


_SCALAR_TYPES: Dict[str, type] = {
    "boolean": np.bool_, "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
}
#: IR element type -> numpy dtype
ELEMENT_TYPES: Dict[str, np.dtype] = {k: np.dtype(v) for k, v in _SCALAR_TYPES.items()}
_PRECISIONS = {"BOOL": "boolean", "FP16": "f16", "FP32": "f32", "FP64": "f64", "I8": "i8",
               "I16": "i16", "I32": "i32", "I64": "i64", "U8": "u8", "U16": "u16", "U32": "u32",
               "U64": "u64"}
_FORBIDDEN = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)



def _ctx(where):
    return f"{where}: " if where else ""


def _located(layer, msg):
    """An IRError whose message starts with the layer's id, name and type;
    ``located`` tells the guards not to prefix it again."""
    err = IRError(f"{layer}: {msg}")
    err.located = True
    return err


# What malformed structure can make reader or builder code raise besides IRError.
_FOREIGN = (IndexError, KeyError, AttributeError, TypeError, ValueError, ArithmeticError)


@contextmanager
def _about(layer, prefix_ir_errors=True):
    """Guard the parsing or compiling of one layer: an error escaping the
    block names `layer` (id, name, type).  IRError/GraphError messages get
    the layer prefixed unless already located (or ``prefix_ir_errors`` is
    false, for parse code whose messages start with the layer); any other
    failure on malformed structure becomes an IRError naming the layer
    (the original exception chained)."""
    try:
        yield
    except (IRError, GraphError) as e:
        if not prefix_ir_errors or getattr(e, "located", False):
            raise
        raise _wrap(e, layer) from None
    except _FOREIGN as e:
        raise _located(layer, f"malformed or inconsistent layer ({type(e).__name__}: {e})") from e


def _count_text(n, kind):
    if n is None:
        return f"any number of {kind} ports"
    n = n if isinstance(n, tuple) else (n,)
    return f"{' or '.join(map(str, n))} {kind} port{'' if n == (1,) else 's'}"


def _expect_ports(layer, n_in, n_out):
    """IRError naming `layer` unless it has `n_in` input and `n_out` output
    ports (an int, a tuple of accepted counts, or None for any number)."""
    def ok(n, have):
        return n is None or have in (n if isinstance(n, tuple) else (n,))
    if not ok(n_in, len(layer.inputs)) or not ok(n_out, len(layer.outputs)):
        raise _located(layer, f"a layer of type {layer.type} has {_count_text(n_in, 'input')} and "
                              f"{_count_text(n_out, 'output')}; this one has {len(layer.inputs)} and "
                              f"{len(layer.outputs)}")



def _wrap(e: Exception, layer) -> Exception:
    """Same error class (IRError for foreign ones) with the layer named first."""
    cls = type(e) if isinstance(e, (IRError, GraphError)) else IRError
    err = cls(f"{layer}: {e}")
    setattr(err, "located", True)     # checked with getattr where errors are re-raised
    return err
