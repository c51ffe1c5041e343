"""A model's program with the steps of the converted layers replaced: by recording
float steps for calibration, by the fixed-point steps for the converted model."""

from __future__ import annotations

import copy
import dataclasses

from .. import ir
from .registry import converter_for

__all__ = ["compile_program", "with_program"]


def _converts(graph):
    return any(converter_for(l.type) is not None for _, l in graph.walk())


def compile_program(graph, make_step):
    """``graph``'s program with the step of every layer a converter takes replaced by
    ``make_step(layer, graph, fn)`` (recursing into TensorIterator / Loop bodies; the
    float model is untouched)."""
    prog = ir._Program(graph)
    for k, (fn, ins, outs, dtypes, layer) in enumerate(prog.steps):
        if converter_for(layer.type) is not None:
            new = make_step(layer, graph, fn)
        elif layer.body is not None and _converts(layer.body):
            sub = copy.copy(layer.body)
            sub._program = compile_program(layer.body, make_step)
            try:
                new = ir._build(dataclasses.replace(layer, body=sub), graph)
            except (ir.IRError, ir.GraphError) as e:
                raise ir._wrap(e, layer) from None
        else:
            continue
        prog.replace_step(k, new)
    return prog


def with_program(model, program):
    """A copy of ``model`` running ``program``, with its own ReadValue/Assign state."""
    m = copy.copy(model)
    m._program = program
    m._variables = ir.program.Variables()
    return m
