"""mli-py: bit-exact host emulation of the embARC MLI 1.1 fixed-point
recurrent kernels, with OpenVINO-style TensorIterator / Loop drivers."""
__version__ = "0.1.0"

from ._status import *  # noqa: F401,F403
from ._status import MliError, Status, raise_for_status  # noqa: F401
from .enums import *  # noqa: F401,F403
from .rounding import get_rounding, rounding, set_rounding  # noqa: F401
from .tensor import Tensor, element_type, frac_bits_for  # noqa: F401
from .kernels import *  # noqa: F401,F403
from .kernels import RnnCellConfig, kind_of  # noqa: F401
from .dispatch import isa, set_isa, supported_isas, use_isa  # noqa: F401
