"""Train a LeNet-style CNN on scikit-learn's digits with ``md.Trainer`` on the active backend.

    MULTIDEV_BACKEND=torch python examples/train_digits.py      # or: multidev demo train
    multidev plot runs/digits-*                                  # overlay several backends

The code is in ``src/multidev/examples/train_digits.py`` (shipped in the package). Needs the
training extras: pip install 'multidev[train]'.
"""

from multidev.examples.train_digits import main

if __name__ == "__main__":
    raise SystemExit(main())
