"""The build's one hook (everything else is in pyproject.toml): the C extension records
the digest of the sources it is built from, which the import checks in a checkout
(autosave/format/sources.py, docs/speedups.md)."""

import runpy

from setuptools import setup
from setuptools.command.build_ext import build_ext

sources_digest = runpy.run_path("autosave/format/sources.py")["sources_digest"]


class BuildExt(build_ext):
    def build_extension(self, ext):
        ext.define_macros = [*ext.define_macros, ("AUTOSAVE_SOURCES", f'"{sources_digest(".")}"')]
        super().build_extension(ext)


setup(cmdclass={"build_ext": BuildExt})
