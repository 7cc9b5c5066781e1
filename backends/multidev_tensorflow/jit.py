"""Compilation on TensorFlow: ``tf.function`` (XLA with ``MULTIDEV_TF_XLA=1``), SavedModel.

``tf.function`` runs the Python function once per input signature and replays the graph,
so ``md.jit`` passes gradients and optimiser state in and out of it (``jit_traces_once``).
AutoGraph is off: multidev's Python branches on Python values only, and is traced as it is.
A step with ``DistributedDataParallel`` compiles too: its gradient all-reduces become
collective ops of the traced graph (``multidev_tensorflow.distributed.TFGroup``).
The traced graphs keep convolutions NCHW on the CPU too and run with Grappler's CPU layout
conversion to NHWC (``multidev_tensorflow.cnn.graph_nchw``, ``_nhwc_on_cpu``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
from tensorflow.python.eager import context, record

from multidev.contract import ExportHooks, JitHooks
from multidev.device import Device
from multidev.errors import UnsupportedOperationError

from .cnn import graph_nchw

__all__ = ["XLA_ENV", "Jit"]

XLA_ENV = "MULTIDEV_TF_XLA"


class Jit(JitHooks, ExportHooks):
    """The compilation hooks of the TensorFlow adapter."""

    jit_traces_once = True
    ops: Any  # the adapter's op table (backend.py)

    def jit_compile(self, body: Any) -> Any:
        """``body`` as a ``tf.function``; the collectives it holds (``md.distributed``) fail
        with the process group's DistributedError when a worker stopped.

        Once traced for some input shapes and dtypes, calls with those run the concrete
        function directly: ``tf.function``'s own dispatch matches every argument against
        its signatures again at each call, which on a training step that passes gradients
        and optimiser state in costs about as much as running the small graph. The captured
        inputs are read at each call (they hold each collective's instance key)."""
        xla = os.environ.get(XLA_ENV, "").strip() == "1"

        def traced(*args: Any) -> Any:
            with graph_nchw():
                return body(*args)

        # by whether it runs with the CPU layout conversion (NCHW lowerings): not under a
        # caller's tape (a hybridized forward differentiated eagerly), whose gradient function
        # TensorFlow calls itself, without these call options
        compiled = {
            nchw: tf.function(traced if nchw else body, jit_compile=xla or None, autograph=False)
            for nchw in (True, False)
        }
        concrete: dict[tuple, Any] = {}

        def run(*args: Any) -> Any:
            nchw = not record.could_possibly_record()
            key = (nchw, *((a.dtype, tuple(a.shape)) for a in args))
            fn = concrete.get(key)
            if fn is None and all(isinstance(a, tf.Tensor) for a in args):
                # traced before the call options are set: a trace may change the context's
                # config (soft placement), which resets them
                fn = concrete[key] = compiled[nchw].get_concrete_function(*args)
            ctx = context.context()
            before = ctx.function_call_options
            ours = ctx.function_call_options = _nhwc_on_cpu(before) if nchw else before
            try:
                if fn is not None:
                    return fn._call_flat(list(args), fn.captured_inputs)
                return compiled[nchw](*args)
            except (tf.errors.UnavailableError, tf.errors.DeadlineExceededError) as e:
                from .distributed import stopped_error

                raise stopped_error(e) from e
            finally:
                if ctx.function_call_options is ours:
                    ctx.function_call_options = before

        return run

    def synchronize(self, dev: Device | None) -> None:
        tf.test.experimental.sync_devices()

    def export(self, block: Any, path: Path, inputs: tuple) -> Path:
        """A SavedModel folder whose ``serve`` function (also the serving signature) runs the
        block's forward on tensors of the example inputs' shapes and dtypes."""
        native = block.native
        specs = [tf.TensorSpec(x.shape, x.dtype) for x in inputs]
        module = tf.Module()
        module.net = native
        module.serve = tf.function(lambda *xs: native(*xs), input_signature=specs, autograph=False)
        tf.saved_model.save(module, str(path), signatures=module.serve)
        return path

    def export_onnx(
        self, block: Any, path: Path, inputs: tuple, opset: int, dynamic_batch: bool
    ) -> Path:
        """An ONNX file from ``tf2onnx`` of the frozen graph of a ``tf.function`` of the
        block's forward."""
        from tensorflow.python.framework.convert_to_constants import (
            convert_variables_to_constants_v2,
        )

        try:
            import tf2onnx
        except ImportError:
            raise ImportError(
                "md.export(..., format='onnx') on TensorFlow needs tf2onnx: "
                "pip install 'multidev[onnx-tensorflow]'"
            ) from None
        native = block.native
        specs = tuple(
            tf.TensorSpec(
                (None if dynamic_batch else x.shape[0], *x.shape[1:]), x.dtype, name=f"input{i}"
            )
            for i, x in enumerate(inputs)
        )
        fn = tf.function(lambda *xs: native(*xs), input_signature=specs, autograph=False)
        ops = self.ops
        gelu = ops.gelu
        # tf.nn.gelu's exact form is 0.5 x erfc(-x / sqrt 2), and ONNX has no Erfc: the same
        # function through Erf, which ONNX has, while the graph is traced
        ops.gelu = lambda x, tanh: (
            tf.nn.gelu(x, approximate=True)
            if tanh
            else 0.5 * x * (1.0 + tf.math.erf(x * tf.cast(0.7071067811865476, x.dtype)))
        )
        try:
            concrete = fn.get_concrete_function()
        except (TypeError, ValueError) as e:
            if not dynamic_batch:
                raise
            raise UnsupportedOperationError(
                f"Expected a forward that traces with a free batch size. Received: {e} "
                f"({type(block).__name__} reads the batch size as a number). Export with "
                "dynamic_batch=False (one file per batch size)."
            ) from e
        finally:
            ops.gelu = gelu
        # the tensors the forward reads (parameters, BatchNorm statistics) become constants:
        # tf2onnx would keep captured eager tensors as extra graph inputs
        frozen = convert_variables_to_constants_v2(concrete)
        model, _ = tf2onnx.convert.from_graph_def(
            frozen.graph.as_graph_def(),
            input_names=[t.name for t in frozen.inputs],
            output_names=[t.name for t in frozen.outputs],
            opset=opset,
        )
        renamed = {t.name: f"input{i}" for i, t in enumerate(frozen.inputs)}  # "input0:0"
        for value in model.graph.input:
            value.name = renamed.get(value.name, value.name)
        for node in model.graph.node:
            node.input[:] = [renamed.get(n, n) for n in node.input]
        path.write_bytes(model.SerializeToString())
        return path


#: the call options of compiled functions, by the serialized config of the caller's options
_CALL_OPTIONS: dict[bytes | None, Any] = {}


def _nhwc_on_cpu(options: Any) -> Any:
    """``options`` (``context.FunctionCallOptions``) with Grappler's CPU layout conversion
    NCHW_TO_NHWC: the graphs ``md.jit`` traces hold NCHW convolutions, poolings and batch
    norms (``cnn.graph_nchw``), which TensorFlow's CPU kernels take in NHWC only; Grappler
    rewrites them and cancels the transposes between them. The functions are instantiated,
    and so optimised, with the config of the call."""
    key = options.config_proto_serialized
    out = _CALL_OPTIONS.get(key)
    if out is None:
        config = config_pb2.ConfigProto()
        if key:
            config.ParseFromString(key)
        rewrite = config.graph_options.rewrite_options
        rewrite.cpu_layout_conversion = rewriter_config_pb2.RewriterConfig.NCHW_TO_NHWC
        out = _CALL_OPTIONS[key] = context.FunctionCallOptions(
            executor_type=options.executor_type, config_proto=config
        )
    return out
