"""``python -m mli.fixed_point``: the command is :mod:`mli.tools.fixed_point` (``mli fixed-point``)."""
import sys

from ..tools.fixed_point import main

sys.exit(main())
