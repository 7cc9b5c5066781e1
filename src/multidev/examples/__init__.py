"""The d2l "deep learning computation" chapter, written once: each module is one section and
its ``main()`` prints what the book prints, on the active backend.

Run one section with ``python -m multidev.examples.parameters`` and all of them with
``multidev demo``.
"""

SECTIONS = (
    "layers_and_blocks",
    "parameters",
    "deferred_init",
    "custom_layers",
    "file_io",
    "gpu",
)

__all__ = ["SECTIONS"]
