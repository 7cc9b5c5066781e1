"""A Transformer encoder classifier trained on synthetic token sequences.

Run it with ``MULTIDEV_BACKEND=torch python examples/transformer_classifier.py``. The code is in
``src/multidev/examples/transformer_classifier.py`` (shipped in the package). It exits non-zero unless the
final loss is below the threshold it states.
"""

from multidev.examples.transformer_classifier import main

if __name__ == "__main__":
    raise SystemExit(main())
