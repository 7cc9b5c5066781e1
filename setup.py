"""The optional C accelerator ``multidev._speedups`` (everything else is in pyproject.toml).

``optional=True``: where no C compiler is available the build of the extension is skipped
with a warning, and multidev installs and runs with its Python operators.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("multidev._speedups", ["src/multidev/_speedups.c"], optional=True),
    ]
)
