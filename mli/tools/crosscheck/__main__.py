"""``python -m mli.tools.crosscheck``: the same as ``mli crosscheck``."""
import sys

from .cli import main

sys.exit(main())
