"""The backends, one per MLI library, chosen by name (:func:`get_backend`): ``"mli1"``
(:mod:`.mli1`, MLI 1.1) and ``"mli2"`` (:mod:`.mli2`, MLI 2.0.2), both behind the
interface of :class:`.base.Backend`."""

from . import mli1, mli2  # noqa: F401  (registers the backends)
from .base import Backend, QuantizedCell, backend_names, get_backend

__all__ = ["Backend", "QuantizedCell", "get_backend", "backend_names"]
