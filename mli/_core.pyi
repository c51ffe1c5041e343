# The compiled bridge (mli/_core.pyx): private, typed loosely; the public
# types are in the stubs of the modules built on it (tensor.pyi, kernels.pyi).
from typing import Any

def __getattr__(name: str) -> Any: ...
