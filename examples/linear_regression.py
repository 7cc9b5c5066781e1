"""Linear regression trained with minibatch SGD, the same code on every backend with autograd.

Run it with ``MULTIDEV_BACKEND=torch python examples/linear_regression.py``. The code is in
``src/multidev/examples/linear_regression.py`` (shipped in the package). It exits non-zero unless the
final loss is below the threshold it states.
"""

from multidev.examples.linear_regression import main

if __name__ == "__main__":
    raise SystemExit(main())
