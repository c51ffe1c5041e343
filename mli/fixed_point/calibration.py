"""Calibration: the float model run on the calibration inputs, each converted layer
recording what its cells meet (value ranges, accumulator peaks, saturation) into one
:class:`Stats` per planned unit; the backends choose the formats from them.  How a
layer records is its converter's (:meth:`mli.fixed_point.registry.Converter.record`)."""

from __future__ import annotations

import math

import numpy as np

from .program import compile_program, with_program

__all__ = ["Stats", "samples", "calibrate"]


class Stats:
    """Running calibration statistics of one cell."""

    def __init__(self):
        self.lo, self.hi = {}, {}
        self.acc_in = self.acc = 0.0
        self.gates = self.saturated = 0
        self.peak = {}                    # GRU: largest |value| of each intermediate

    def add_peak(self, name, v):
        v = np.asarray(v, np.float64)
        self.peak[name] = max(self.peak.get(name, 0.0), float(np.abs(v).max(initial=0)))

    def add(self, name, v):
        v = np.asarray(v, np.float64)
        if v.size:
            self.lo[name] = min(self.lo.get(name, math.inf), float(v.min()))
            self.hi[name] = max(self.hi.get(name, -math.inf), float(v.max()))

    def range(self, *names):
        lo = min((self.lo[n] for n in names if n in self.lo), default=0.0)
        hi = max((self.hi[n] for n in names if n in self.hi), default=0.0)
        return lo, hi

    def as_dict(self, lstm):
        names = ("x", "h_in", "h_out") + (("c_in", "c_out") if lstm else ())
        d = {n: self.range(n) for n in names}
        d.update(acc_in=self.acc_in, acc=self.acc, gates=self.gates, saturated=self.saturated)
        d.update(self.peak)
        return d


def samples(calibration_inputs):
    """The calibration input sets: one input dict (or list of arrays in input order) or
    a non-empty list of input dicts."""
    if isinstance(calibration_inputs, dict):
        return [calibration_inputs]
    if isinstance(calibration_inputs, (list, tuple)) and calibration_inputs and all(
            isinstance(s, dict) for s in calibration_inputs):
        return list(calibration_inputs)
    if isinstance(calibration_inputs, (list, tuple)) and calibration_inputs:
        return [list(calibration_inputs)]
    raise ValueError("calibration_inputs: give one input dict (or list of arrays in input "
                     "order) or a non-empty list of input dicts")


def calibrate(model, layers, calibration_inputs):
    """Run the float ``model`` on every calibration input set, each layer of
    ``layers`` (``[(layer, converter, constants)]``) recording its statistics:
    ``{layer: [Stats, one per unit]}``."""
    stats = {layer: [Stats() for _ in range(conv.units(layer))] for layer, conv, _ in layers}
    how = {layer: (conv, constants) for layer, conv, constants in layers}

    def record(layer, g, fn):
        conv, constants = how[layer]
        return conv.record(layer, fn, constants, stats[layer])
    recorder = with_program(model, compile_program(model.graph, record))
    for sample in samples(calibration_inputs):
        recorder(sample)
    return stats
