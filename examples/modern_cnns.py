"""LeNet, VGG, NiN, an Inception block, ResNet-18 and a DenseNet block, the same code on every
backend with autograd.

Run it with ``MULTIDEV_BACKEND=torch python examples/modern_cnns.py``. The code is in
``src/multidev/examples/modern_cnns.py`` (shipped in the package). It exits non-zero unless
ResNet-18's loss after 20 steps is below its loss at step 0.
"""

from multidev.examples.modern_cnns import main

if __name__ == "__main__":
    raise SystemExit(main())
