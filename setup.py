"""Build of mli-py: one extension, mli._core = the Cython bridge + the C core."""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
C_SOURCES = sorted(glob.glob(os.path.join("csrc", "src", "**", "*.c"), recursive=True))


class BuildExt(build_ext):
    """Per-compiler flags.  Never -march=native: the wheel must run on any
    x86-64; optional SIMD paths use per-function target attributes."""

    def build_extensions(self):
        if self.compiler.compiler_type == "msvc":
            flags = ["/O2"]
        else:
            flags = ["-std=c11", "-O3", "-fno-strict-aliasing", "-ffp-contract=off"]
            if os.environ.get("MLI_SANITIZE"):  # AddressSanitizer + UBSan build for CI (.ci/run)
                flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-wrapv",
                          "-fno-omit-frame-pointer", "-O1", "-g"]
                for ext in self.extensions:
                    ext.extra_link_args = ["-fsanitize=address,undefined"]
        for ext in self.extensions:
            ext.extra_compile_args = flags
        super().build_extensions()


ext = Extension(
    "mli._core",
    sources=["mli/_core.pyx"] + C_SOURCES,
    include_dirs=["csrc/include"],
    libraries=[] if os.name == "nt" else ["m"],
)

setup(
    ext_modules=cythonize([ext], language_level=3, compiler_directives={"embedsignature": True}),
    cmdclass={"build_ext": BuildExt},
)
