"""The version of mli-py, written once: pyproject.toml reads it at build time
(``[tool.setuptools.dynamic]``) and ``mli.__version__`` / ``mli --version``
report it."""
__version__ = "0.1.0"
