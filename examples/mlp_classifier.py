"""An MLP classifier trained with Adam, the same code on every backend with autograd.

Run it with ``MULTIDEV_BACKEND=torch python examples/mlp_classifier.py``. The code is in
``src/multidev/examples/mlp_classifier.py`` (shipped in the package). It exits non-zero unless the
final loss is below the threshold it states.
"""

from multidev.examples.mlp_classifier import main

if __name__ == "__main__":
    raise SystemExit(main())
