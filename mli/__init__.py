"""mli-py: bit-exact host emulation of the embARC MLI 1.1 fixed-point
recurrent kernels, with OpenVINO-style TensorIterator / Loop drivers.

The API: :class:`Tensor`, the kernels (``basic_rnn_cell_fx16``, ...,
named as in MLI minus ``mli_krn_``), their configuration
(:class:`RnnCellConfig` and the enums), the status exceptions
(:class:`MliError` and one subclass per ``mli_status``), the rounding mode
and the instruction-set path.  Built on it, as libraries: ``mli.graph``
(TensorIterator / Loop), ``mli.ir`` (OpenVINO IR models), ``mli.fixed_point``
(IR models on the MLI kernels), ``mli.io`` (tensor files), ``mli.metrics``
(S/N and comparisons), ``mli.reference`` (numpy models of the kernels).  The
commands (``mli demo``, ``har``, ``crosscheck``, ``export-c``, ``vectors``,
``fixed-point``) live in ``mli.tools``."""
import os as _os

from ._version import __version__


def _check_extension():
    """Import the compiled core first: in the project's source tree without a
    built extension, Python would otherwise report a circular import."""
    try:
        from . import _core  # noqa: F401
    except ImportError as e:
        here = _os.path.dirname(_os.path.abspath(__file__))
        if _os.path.exists(_os.path.join(here, "_core.pyx")) and "_core" in str(e):
            raise ImportError(
                f"you are importing mli from its source tree ({here}) without a built extension; "
                "run `python setup.py build_ext --inplace` (or `pip install -e .`) there, "
                "or run from another folder to use the installed mli") from None
        raise


_check_extension()

from . import _status, enums, kernels  # noqa: E402
from ._status import *  # noqa: E402,F401,F403
from .enums import *  # noqa: E402,F401,F403
from .rounding import get_rounding, rounding, set_rounding  # noqa: E402
from .tensor import SaturationWarning, Tensor, element_type, frac_bits_for  # noqa: E402
from .kernels import *  # noqa: E402,F401,F403
from .dispatch import isa, set_isa, supported_isas, use_isa  # noqa: E402
from . import rows  # noqa: E402
from .rows import *  # noqa: E402,F401,F403  (batched rows, an mli-py extension)


def get_include():
    """The folder of MLI's C headers (``mli_api.h`` and what it includes), to
    compile the C that ``mli export-c`` writes: ``cc -I$(python -c "import
    mli; print(mli.get_include())") ...`` (``mli export-c --print-include``
    prints it too).  The numpy convention (``numpy.get_include()``)."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    installed = _os.path.join(here, "include")
    if _os.path.isfile(_os.path.join(installed, "mli_api.h")):
        return installed
    # the source tree (built in place or editable install): the headers stay in csrc/include
    return _os.path.join(_os.path.dirname(here), "csrc", "include")


def get_sources():
    """The folder of the C core's sources (``*.c`` and their private headers,
    compiled with ``-I`` :func:`get_include`): the C library behind the
    package, usable from C alone, which the host check of ``mli deploy``
    links against."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    installed = _os.path.join(here, "core_src")
    if _os.path.isdir(installed):
        return installed
    return _os.path.join(_os.path.dirname(here), "csrc", "src")


__all__ = (
    ["__version__", "get_include", "get_sources", "Tensor", "SaturationWarning", "element_type", "frac_bits_for",
     "get_rounding", "rounding", "set_rounding", "isa", "set_isa", "supported_isas", "use_isa"]
    + list(_status.__all__) + list(enums.__all__) + list(kernels.__all__) + list(rows.__all__))

