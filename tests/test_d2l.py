"""multidev.d2l on the active backend: the book's helper classes, used as the book's PyTorch
code uses them (``torch`` replaced by ``md``): regression from scratch and concise, a
classifier, the board's points, the text pipeline and the encoder-decoder loss."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import d2l, nn

AUTOGRAD = md.get_backend() in md.autograd.autograd_backends()
needs_autograd = pytest.mark.skipif(not AUTOGRAD, reason=f"{md.get_backend()} has no autograd")


@needs_autograd
def test_linear_regression_from_scratch_recovers_w_and_b():
    md.manual_seed(0)
    model = d2l.LinearRegressionScratch(2, lr=0.03)
    data = d2l.SyntheticRegressionData(w=md.tensor([2, -3.4]), b=4.2)
    trainer = d2l.Trainer(max_epochs=8)
    trainer.fit(model, data)
    np.testing.assert_allclose(model.w.numpy().reshape(-1), [2, -3.4], atol=0.02)
    np.testing.assert_allclose(model.b.numpy(), [4.2], atol=0.02)
    # the board: two training points per epoch (averaged batches), one validation point
    assert [len(model.board.points[k]) for k in ("train_loss", "val_loss")] == [16, 8]
    xs = [x for x, _ in model.board.points["val_loss"]]
    assert xs == list(range(1, 9))
    losses = [y for _, y in model.board.points["train_loss"]]
    assert losses[-1] < losses[0] / 100


@needs_autograd
def test_concise_linear_regression_and_its_weights():
    md.manual_seed(0)
    model = d2l.LinearRegression(lr=0.03)
    data = d2l.SyntheticRegressionData(w=md.tensor([2, -3.4]), b=4.2)
    d2l.Trainer(max_epochs=6).fit(model, data)
    w, b = model.get_w_b()
    np.testing.assert_allclose(w.numpy(), [[2, -3.4]], atol=0.02)
    np.testing.assert_allclose(b.numpy(), [4.2], atol=0.02)


class Blobs(d2l.DataModule):
    """Three Gaussian blobs in 4 dimensions."""

    def __init__(self, batch_size=32, num_train=600, num_val=300):
        super().__init__()
        self.save_hyperparameters()
        rng = np.random.default_rng(0)
        n = num_train + num_val
        labels = rng.integers(0, 3, n)
        centres = np.eye(3, 4) * 4
        self.X = md.asarray((centres[labels] + rng.standard_normal((n, 4))).astype(np.float32))
        self.y = md.asarray(labels.astype(np.int64))

    def get_dataloader(self, train):
        i = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader((self.X, self.y), train, i)


class SoftmaxRegression(d2l.Classifier):
    def __init__(self, num_outputs, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Flatten(), nn.LazyLinear(num_outputs))

    def forward(self, X):
        return self.net(X)


@needs_autograd
def test_a_classifier_trains_and_plots_validation_accuracy():
    md.manual_seed(0)
    model = SoftmaxRegression(num_outputs=3, lr=0.1)
    data = Blobs()
    trainer = d2l.Trainer(max_epochs=5, gradient_clip_val=1.0)
    trainer.fit(model, data)
    acc = [y for _, y in model.board.points["val_acc"]]
    assert len(acc) == 5 and acc[-1] > 0.9
    X, y = data.X[600:], data.y[600:]
    assert d2l.accuracy(model(X), y) == pytest.approx(float(model.accuracy(model(X), y)) * 300)


@needs_autograd
def test_clip_gradients_scales_the_joint_norm_down_to_the_limit():
    net = nn.Linear(3, 2)
    with md.autograd.record():
        loss = (net(md.ones((4, 3))) * 100).sum()
    loss.backward()
    d2l.Trainer(max_epochs=1).clip_gradients(1.0, net)
    norm = np.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in net.parameters()))
    assert norm == pytest.approx(1.0, rel=1e-5)


def test_save_hyperparameters_keeps_the_arguments_but_the_ignored():
    class Model(d2l.HyperParameters):
        def __init__(self, a, b, c=3):
            self.save_hyperparameters(ignore=["c"])

    m = Model(1, b="x")
    assert (m.a, m.b, hasattr(m, "c")) == (1, "x", False)
    assert m.hparams == {"a": 1, "b": "x"}


def test_vocab_follows_the_book():
    vocab = d2l.Vocab([["b", "a"], ["b", "c", "b"]], min_freq=2, reserved_tokens=["<pad>"])
    assert vocab.idx_to_token == ["<pad>", "<unk>", "b"]
    assert vocab["b"] == 2 and vocab["a"] == vocab.unk == 1
    assert vocab[["b", "zzz"]] == [2, 1]
    assert vocab.to_tokens([2, 0]) == ["b", "<pad>"] and vocab.to_tokens(2) == "b"
    assert vocab.token_freqs[0] == ("b", 3) and len(vocab) == 3


def test_time_machine_reads_a_local_file_as_characters(tmp_path):
    (tmp_path / "timemachine.txt").write_text("The Time Machine, by H. G. Wells [1898]\n\nI\n")
    data = d2l.TimeMachine(batch_size=2, num_steps=5, num_train=10, num_val=5, root=tmp_path)
    text = "the time machine by h g wells i "
    assert data.vocab.idx_to_token == sorted(set(text) | {"<unk>"})
    X, Y = data.X.numpy(), data.Y.numpy()
    assert X.shape == (len(text) - 5, 5)
    np.testing.assert_array_equal(X[1:, :], Y[:-1, :])
    assert "".join(data.vocab.to_tokens(X[0].tolist())) == text[:5]
    batches = list(data.val_dataloader())
    assert sum(len(b[0]) for b in batches) == 5
    with pytest.raises(FileNotFoundError, match=r"timemachine\.txt"):
        d2l.TimeMachine(2, 5, root=tmp_path / "missing")


def test_seq2seq_loss_averages_over_the_non_padding_tokens():
    class Nothing(d2l.Encoder):
        pass

    model = d2l.Seq2Seq(Nothing(), d2l.Decoder(), tgt_pad=0, lr=0.01)
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 4, 5)).astype(np.float32)
    Y = np.array([[3, 1, 0, 0], [2, 4, 4, 0]])
    got = float(model.loss(md.asarray(logits), md.asarray(Y)))
    flat = logits.reshape(-1, 5)
    logp = flat - np.log(np.exp(flat).sum(1, keepdims=True))
    per = -logp[np.arange(8), Y.reshape(-1)]
    mask = Y.reshape(-1) != 0
    assert got == pytest.approx(per[mask].mean(), rel=1e-5)


def test_the_board_saves_a_picture(tmp_path):
    pytest.importorskip("matplotlib")
    board = d2l.ProgressBoard(display=False)
    for i in range(6):
        board.draw(i / 2, 1 / (i + 1), "train_loss", every_n=2)
    assert [round(y, 4) for _, y in board.points["train_loss"]] == [0.75, 0.2917, 0.1833]
    board.save(tmp_path / "board.png")
    assert (tmp_path / "board.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.skipif(AUTOGRAD, reason="the backend has autograd")
def test_training_without_autograd_says_so():
    model = d2l.LinearRegressionScratch(2, lr=0.03)
    data = d2l.SyntheticRegressionData(w=md.asarray([2.0, -3.4]), b=4.2)
    with pytest.raises(md.AutogradError):
        d2l.Trainer(max_epochs=1).fit(model, data)


@needs_autograd
def test_fashion_mnist_downloaded_from_a_local_server_trains_with_the_trainer(tmp_path):
    """d2l.FashionMNIST fetches its four IDX files over HTTP (a real server on 127.0.0.1),
    checks them, and d2l.Trainer fits a classifier on them: validation accuracy is recorded
    per epoch, and the classifier learns (each class lights up its own rows of pixels)."""
    import functools
    import gzip
    import hashlib
    import http.server
    import threading

    from multidev.data import datasets

    rng = np.random.default_rng(0)
    served = tmp_path / "served"
    served.mkdir()
    sums = {}
    for split, n in (("train", 200), ("t10k", 60)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
        for i, k in enumerate(labels):  # each class lights up its own rows
            images[i, 2 * k : 2 * k + 3] = 255
        for kind, a in (("images-idx3", images), ("labels-idx1", labels)):
            head = bytes([0, 0, 0x08, a.ndim]) + np.asarray(a.shape, ">u4").tobytes()
            data = gzip.compress(head + a.tobytes(), mtime=0)
            name = f"{split}-{kind}-ubyte.gz"
            (served / name).write_bytes(data)
            sums[name] = hashlib.sha256(data).hexdigest()

    class Served(datasets.FashionMNIST):
        SHA256 = sums

    class LocalFashionMNIST(d2l.FashionMNIST):
        dataset = Served

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/"
        data = LocalFashionMNIST(batch_size=32, root=str(tmp_path / "data"), download=True,
                                 base_url=url)  # fmt: skip
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert sorted(p.name for p in (tmp_path / "data" / "Served").iterdir()) == sorted(sums)
    X, y = next(iter(data.train_dataloader()))
    assert X.shape == (32, 1, 28, 28) and X.dtype == md.float32 and y.dtype == md.int64
    assert data.text_labels_of([0, 9]) == ["t-shirt", "ankle boot"]
    md.manual_seed(0)
    model = SoftmaxRegression(num_outputs=10, lr=0.5)
    d2l.Trainer(max_epochs=6).fit(model, data)
    acc = [a for _, a in model.board.points["val_acc"]]
    assert len(acc) == 6
    assert acc[-1] > 0.9  # chance is 0.1
    losses = [v for _, v in model.board.points["train_loss"]]
    assert losses[-1] < losses[0]


def test_the_book_s_plot_helpers_draw_multidev_tensors(tmp_path):
    """d2l.plot, show_heatmaps and show_list_len_pair_hist as the book's chapters call them,
    on md tensors; d2l.plt is pyplot."""
    pytest.importorskip("matplotlib")
    from matplotlib import pyplot

    assert d2l.plt is pyplot
    x = md.arange(0, 3, 0.5)
    d2l.plot(x, [x * 2, x - 1], "x", "f(x)", legend=["2x", "x-1"], figsize=(3, 2))
    ax = d2l.plt.gca()
    np.testing.assert_allclose(ax.lines[0].get_xdata(), x.numpy())
    np.testing.assert_allclose(ax.lines[1].get_ydata(), (x - 1).numpy())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["2x", "x-1"]
    assert tuple(d2l.plt.rcParams["figure.figsize"]) == (3, 2)
    d2l.plot(x * 3)  # one curve against its index
    assert len(d2l.plt.gca().lines) == 1
    np.testing.assert_allclose(d2l.plt.gca().lines[0].get_ydata(), (x * 3).numpy())

    weights = md.reshape(md.arange(24, dtype=md.float32), (2, 3, 2, 2))
    d2l.show_heatmaps(weights, "keys", "queries", titles=["a", "b", "c"])
    fig = d2l.plt.gcf()
    images = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert len(images) == 6  # and one colour bar
    np.testing.assert_allclose(images[5], weights.numpy()[1, 2])
    with pytest.raises(ValueError, match=r"\(rows, columns, height, width\).*\(2, 2\)"):
        d2l.show_heatmaps(weights[0, 0], "keys", "queries")

    d2l.show_list_len_pair_hist(["src", "tgt"], "# tokens", "count", [[1, 2], [3]], [[1], [2]])
    assert d2l.plt.gca().get_xlabel() == "# tokens"
    d2l.plt.savefig(tmp_path / "hist.png")
    assert (tmp_path / "hist.png").stat().st_size > 0
    d2l.plt.close("all")


@pytest.mark.parametrize("size", [(64, 96), (20, 12), 40])
def test_fashion_mnist_resize_as_torchvision_resize_and_to_tensor(tmp_path, size):
    """d2l.FashionMNIST(resize=...) (the modern-CNN chapters' 224 and 96 pixels) gives what
    torchvision's Resize then ToTensor give the book: PIL's bilinear resampling of the 8-bit
    image, within one grey level, in the loader's batches and by index alike."""
    Image = pytest.importorskip("PIL.Image")
    import gzip

    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (10, 28, 28)).astype(np.uint8)
    labels = rng.integers(0, 10, 10).astype(np.uint8)
    folder = tmp_path / "FashionMNIST"
    folder.mkdir()
    for split in ("train", "t10k"):
        for kind, a in (("images-idx3", images), ("labels-idx1", labels)):
            head = bytes([0, 0, 0x08, a.ndim]) + np.asarray(a.shape, ">u4").tobytes()
            (folder / f"{split}-{kind}-ubyte.gz").write_bytes(gzip.compress(head + a.tobytes()))
    data = d2l.FashionMNIST(batch_size=5, resize=size, root=str(tmp_path))
    h, w = (size, size) if isinstance(size, int) else size
    want = np.stack(
        [np.asarray(Image.fromarray(im).resize((w, h), Image.BILINEAR)) for im in images]
    )[:, None] / np.float32(255)
    X, y = next(iter(data.get_dataloader(train=False)))
    assert X.shape == (5, 1, h, w) and X.dtype == md.float32 and y.dtype == md.int64
    np.testing.assert_allclose(X.numpy(), want[:5], atol=1.01 / 255)
    np.testing.assert_allclose(data.val[7][0].numpy(), want[7], atol=1.01 / 255)
    assert len(data.train) == 10
    with pytest.raises(ValueError, match=r"resize=.*Received: \(0, 3\)"):
        d2l.FashionMNIST(resize=(0, 3), root=str(tmp_path))
