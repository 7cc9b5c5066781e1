"""Parameter management, from the d2l "deep learning computation" chapter, on the active backend.

Run it with ``MULTIDEV_BACKEND=torch python examples/parameters.py``. The code is in
``src/multidev/examples/parameters.py`` (shipped in the package, so that ``multidev demo``
runs it from an installed wheel).
"""

from multidev.examples.parameters import main

if __name__ == "__main__":
    main()
