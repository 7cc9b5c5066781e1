"""Deferred initialisation, from the d2l "deep learning computation" chapter, on the active backend.

Run it with ``MULTIDEV_BACKEND=torch python examples/deferred_init.py``. The code is in
``src/multidev/examples/deferred_init.py`` (shipped in the package, so that ``multidev demo``
runs it from an installed wheel).
"""

from multidev.examples.deferred_init import main

if __name__ == "__main__":
    main()
