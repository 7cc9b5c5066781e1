"""Stop a training run on one backend and resume it on another, exactly.

    MULTIDEV_BACKEND=torch python examples/resume_training.py --stop-after 2 --save run.ckpt
    MULTIDEV_BACKEND=paddle python examples/resume_training.py --resume run.ckpt

The code is in ``src/multidev/examples/resume_training.py`` (shipped in the package): the MLP
classifier trained from a ``DataLoader`` with Adam, ``OneCycleLR`` and gradient clipping, and
a training checkpoint (model, optimiser, scheduler, random state, loader position, epoch) in
one ``md.save`` file. ``--progress`` shows tqdm progress bars if tqdm is installed.
"""

from multidev.examples.resume_training import main

if __name__ == "__main__":
    raise SystemExit(main())
