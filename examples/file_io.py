"""File I/O, from the d2l "deep learning computation" chapter, on the active backend.

Run it with ``MULTIDEV_BACKEND=torch python examples/file_io.py``. The code is in
``src/multidev/examples/file_io.py`` (shipped in the package, so that ``multidev demo``
runs it from an installed wheel).
"""

from multidev.examples.file_io import main

if __name__ == "__main__":
    main()
