"""The MLI 1.1 kernels, one Python function per C function (named as MLI
minus ``mli_krn_``), plus variant-picking forms (``basic_rnn_cell`` ...).

One module per kernel family, the families of ``csrc/src/kernels/``:
:mod:`~mli.kernels.rnn`, :mod:`~mli.kernels.lstm`,
:mod:`~mli.kernels.fully_connected`, :mod:`~mli.kernels.transform` (tanh,
sigm, relu), :mod:`~mli.kernels.eltwise`, and :mod:`~mli.kernels.helpers`
(``mli_hlp_*``); :mod:`~mli.kernels.config` holds the configuration structs
and :mod:`~mli.kernels.prepared` the prepared calls (beyond MLI).

Every function takes :class:`mli.Tensor` arguments, never modifies them,
and returns new tensors unless ``out=`` (or ``cell_out=``) is given.  A
non-OK status raises the :class:`mli.MliError` subclass of that status, naming
the argument and field the C checker rejected."""
from . import eltwise, helpers, lstm, prepared, rnn, transform
from . import fully_connected as _fc_family  # the name fully_connected is the function below
from ._base import OWN as _OWN, kind_of
from .config import RnnCellConfig
from .eltwise import *  # noqa: F401,F403
from .fully_connected import *  # noqa: F401,F403
from .helpers import *  # noqa: F401,F403
from .lstm import *  # noqa: F401,F403
from .prepared import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .transform import *  # noqa: F401,F403

__all__ = (["RnnCellConfig", "kind_of"] + rnn.__all__ + lstm.__all__ + _fc_family.__all__
           + transform.__all__ + eltwise.__all__ + helpers.__all__ + prepared.__all__)
