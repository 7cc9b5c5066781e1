"""Custom layers, from the d2l "deep learning computation" chapter, on the active backend.

Run it with ``MULTIDEV_BACKEND=torch python examples/custom_layers.py``. The code is in
``src/multidev/examples/custom_layers.py`` (shipped in the package, so that ``multidev demo``
runs it from an installed wheel).
"""

from multidev.examples.custom_layers import main

if __name__ == "__main__":
    main()
