"""Compilers and interpreters (d2l): hybridize a Sequential, time eager vs compiled, export it.

Run it with ``MULTIDEV_BACKEND=torch python examples/compilers.py`` (torch, tensorflow,
paddle, mxnet). The code is in ``src/multidev/examples/compilers.py`` (shipped in the
package). It exits non-zero unless the compiled output equals the eager one.
"""

from multidev.examples.compilers import main

if __name__ == "__main__":
    raise SystemExit(main())
