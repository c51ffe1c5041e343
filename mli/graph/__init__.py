"""Drivers for OpenVINO-style TensorIterator-1 and Loop-5 operations.

A driver runs a *body* (anything with ``run(list_of_arrays) -> outputs``, see
:mod:`mli.graph.body`) once per iteration, feeding it according to a port map
of :mod:`mli.graph.ports` entries.  Indices are positions: ``external`` is the
position of the operation's input/output, ``internal`` the position of the
body input/output.

Examples
--------
Running sum over axis 1 with a back edge:

>>> import numpy as np
>>> from mli.graph import (TensorIterator, CallableBody, SlicedInput, MergedInput,
...                        ConcatOutput, LastIterationOutput, BackEdge)
>>> body = CallableBody(lambda x, acc: (acc + x,), num_inputs=2, num_outputs=1)
>>> ti = TensorIterator(body,
...                     inputs=[SlicedInput(0, 0, axis=1), MergedInput(1, 1)],
...                     outputs=[ConcatOutput(0, 0, axis=1), LastIterationOutput(0, 1)],
...                     back_edges=[BackEdge(0, 1)])
>>> seq, last = ti(np.ones((2, 3, 1)), np.zeros((2, 1, 1)))
>>> seq[0, :, 0].tolist(), float(last[0, 0, 0])
([1.0, 2.0, 3.0], 3.0)
"""

from .body import Body, BodyProtocol, CallableBody, IRBody
from .kernel_body import KernelBody
from .limits import LoopLimitError
from .loop import Loop
from .ports import (BackEdge, ConcatOutput, CurrentIteration, GraphError, InvariantInput,
                    LastIterationOutput, MergedInput, SlicedInput)
from .tensor_iterator import TensorIterator

__all__ = [
    "TensorIterator", "Loop",
    "SlicedInput", "InvariantInput", "MergedInput", "ConcatOutput", "LastIterationOutput",
    "BackEdge", "CurrentIteration", "GraphError", "LoopLimitError",
    "Body", "BodyProtocol", "CallableBody", "IRBody", "KernelBody",
]
