# The compiled bridge (mli/_core.pyx): private, typed loosely; the public
# types are in the stubs of the modules built on it (tensor.pyi, kernels.pyi).
from typing import Any

def __getattr__(name: str) -> Any: ...

# float32 recurrent sequences (beyond MLI): csrc/src/kernels/mlipy_float_rnn.c
FRNN_CELLS: dict
FRNN_ACTS: dict
def float_rnn_sequence(cell: str, act: str, lbr: bool, clip: float, directions: Any, x: Any,
                       h0: Any, c0: Any, lengths: Any, w: Any, r: Any, b: Any, y: Any,
                       h_out: Any, c_out: Any) -> None: ...
