# The compiled bridge of the MLI 2.0.2 library (mli/v2/_core2.pyx): private,
# typed loosely; the public types are those of mli/v2/__init__.py and tensor.py.
from typing import Any

class BridgeError(Exception): ...

def __getattr__(name: str) -> Any: ...
