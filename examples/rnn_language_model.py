"""A character-level RNN/GRU/LSTM language model on a short bundled public-domain text.

Run it with ``MULTIDEV_BACKEND=torch python examples/rnn_language_model.py``. The code is in
``src/multidev/examples/rnn_language_model.py`` (shipped in the package). It exits non-zero unless the
final loss is below the threshold it states.
"""

from multidev.examples.rnn_language_model import main

if __name__ == "__main__":
    raise SystemExit(main())
