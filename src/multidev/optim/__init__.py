"""Optimisers and learning-rate schedules with PyTorch's rules and state-dict layout:
``md.optim.SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad`` and ``md.optim.lr_scheduler``."""

from . import lr_scheduler
from .optimizer import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
