"""``python -m mli``: the ``mli`` command."""
import sys

from .tools.cli import main

sys.exit(main())
