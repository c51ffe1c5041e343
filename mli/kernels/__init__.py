"""The MLI 1.1 kernels, one Python function per C function (named as MLI
minus ``mli_krn_``), plus variant-picking forms (``basic_rnn_cell`` ...).

One module per kernel family, the families of ``csrc/src/kernels/``:
:mod:`~mli.kernels.rnn`, :mod:`~mli.kernels.lstm`,
:mod:`~mli.kernels.fully_connected`, :mod:`~mli.kernels.transform` (tanh,
sigm, relu, leaky_relu, softmax), :mod:`~mli.kernels.eltwise`,
:mod:`~mli.kernels.conv2d`, :mod:`~mli.kernels.depthwise_conv2d`,
:mod:`~mli.kernels.pool`, :mod:`~mli.kernels.data` (permute, concat,
padding2d), and :mod:`~mli.kernels.helpers` (``mli_hlp_*``);
:mod:`~mli.kernels.config` holds the configuration structs and
:mod:`~mli.kernels.prepared` the prepared calls (beyond MLI).  The functions
of the rest of MLI 1.1 (convolutions, pools, data movement, leaky ReLU,
softmax, the sa8 kernels: every shape-specialised entry point included) are
made from the table of ``mli/_variants_api.py``;
:func:`dispatched_variant` names the variant a dispatcher would call.

Every function takes :class:`mli.Tensor` arguments, never modifies them,
and returns new tensors unless ``out=`` (or ``cell_out=``) is given.  A
non-OK status raises the :class:`mli.MliError` subclass of that status, naming
the argument and field the C checker rejected."""
from . import conv2d, data, depthwise_conv2d, eltwise, helpers, lstm, pool, prepared, rnn, transform
from . import fully_connected as _fc_family  # the name fully_connected is the function below
from ._base import OWN as _OWN, kind_of
from ._more import dispatched_variant
from .config import ConcatConfig, Conv2dConfig, Padding2dConfig, PermuteConfig, PoolConfig, RnnCellConfig
from .conv2d import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .depthwise_conv2d import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .eltwise import *  # noqa: F401,F403
from .fully_connected import *  # noqa: F401,F403
from .helpers import *  # noqa: F401,F403
from .lstm import *  # noqa: F401,F403
from .prepared import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .transform import *  # noqa: F401,F403

__all__ = (["RnnCellConfig", "kind_of"] + rnn.__all__ + lstm.__all__ + _fc_family.__all__
           + transform.__all__ + eltwise.__all__ + helpers.__all__ + prepared.__all__
           + ["Conv2dConfig", "PoolConfig", "PermuteConfig", "ConcatConfig", "Padding2dConfig", "dispatched_variant"]
           + conv2d.__all__ + depthwise_conv2d.__all__ + pool.__all__ + data.__all__)
