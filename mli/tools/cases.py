"""What a reference-case runner reports for one case: shared by
``mli vectors`` (MLI cases), the HAR model cases and the OpenVINO
TensorIterator/Loop manifests, so that none of them imports another for it."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CaseResult"]


@dataclass(frozen=True)
class CaseResult:
    """Outcome of one case.

    Attributes
    ----------
    name : str
        The case's name (its file name without ``.npz``, or the manifest entry's name).
    passed : bool
    message : str
        What went wrong (empty or ``"ok ..."`` when it passed).
    category : str
        The OpenVINO manifest's category of the case (``""`` for MLI cases).
    """

    name: str
    passed: bool
    message: str = ""
    category: str = ""
