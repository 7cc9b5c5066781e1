"""PyTorch's ``torch.utils`` spelling: ``from multidev.utils import data`` gives ``md.data``."""

from .. import data

__all__ = ["data"]
