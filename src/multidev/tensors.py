"""``md.Tensor``: a thin wrapper around a native tensor that remembers backend, device and dtype.

This module holds the data and the host access only. The operators and the methods that
forward to functions (``x.to``, ``x.sum``, ``x[key]``, ``x.backward`` …) are attached in one
place, ``multidev.methods``, from the dispatch layer (``multidev.dispatch``) and the function
modules standing on it; their signatures are declared here for type checkers.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from . import dtypes as _dt
from .device import Device

__all__ = ["Tensor"]

_T = TypeVar("_T", bound="Tensor")

_SCALARS = (int, float, bool)
_ARITH, _DIV, _CMP, _LOGIC = 0, 1, 2, 3


class Tensor:
    """A native tensor with its backend, device and dtype. Create one with ``md.asarray``."""

    __slots__ = ("__weakref__", "_bk", "_dev", "_dtype", "_native")

    def __init__(self, native: Any, bk: Any, dev: Device, dtype: _dt.DType) -> None:
        self._native = native
        self._bk = bk
        self._dev = dev
        self._dtype = dtype

    # ---------------------------------------------------------------- properties
    @property
    def native(self) -> Any:
        """The framework's own tensor (no copy)."""
        return self._native

    @property
    def backend(self) -> str:
        return self._bk.name

    @property
    def device(self) -> Device:
        return self._dev

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._bk.shape_of(self._native)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def numel(self) -> int:
        return self.size

    # ---------------------------------------------------------------- host access
    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (shares memory where the framework allows it)."""
        return self._bk.to_numpy(self._native)

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def item(self) -> Any:
        """The single value of a one-element tensor, as a Python scalar."""
        if self.size != 1:
            raise ValueError(
                f"Expected a tensor with exactly one element for item(). "
                f"Received: shape {self.shape}. Index it or reduce it first (e.g. md.sum)."
            )
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self._dtype}")
        return int(self.item())

    def __format__(self, format_spec: str) -> str:
        """As PyTorch's: a one-element 0-d tensor formats as its Python number
        (``f"{loss:.3f}"``); any other tensor only with an empty spec (its repr)."""
        if self.ndim == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __repr__(self) -> str:
        try:
            body = np.array2string(
                np.asarray(self.numpy()), separator=", ", prefix="tensor(", threshold=100
            )
        except Exception as e:  # a tensor whose values cannot be read still gets a repr
            body = f"<unreadable: {e}>"
        return (
            f"tensor({body}, dtype={self._dtype.name}, device={self._dev}, backend={self._bk.name})"
        )

    # __eq__ is elementwise and hashing is by identity, as in PyTorch: object's own __hash__,
    # inherited (no __hash__ here; __eq__ is attached after the class is made, which keeps
    # it), so that torch.compile hashes Tensors and Parameters (optimiser state keys) too.

    def __pos__(self) -> Tensor:
        return self

    if TYPE_CHECKING:  # attached by multidev.methods

        @property
        def T(self) -> Tensor: ...
        def to(self, device: Any = None, dtype: Any = None, *, copy: bool = False) -> Tensor: ...
        def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor: ...
        def to_backend(self, name: str) -> Tensor: ...
        def __getitem__(self, key: Any) -> Tensor: ...
        def __setitem__(self, key: Any, value: Any) -> None: ...
        def astype(self, dtype: Any) -> Tensor: ...
        def reshape(self, *shape: Any) -> Tensor: ...
        def sum(
            self,
            dim: Any = None,
            keepdim: bool = False,
            *,
            axis: Any = None,
            keepdims: bool | None = None,
        ) -> Tensor: ...
        def mean(
            self,
            dim: Any = None,
            keepdim: bool = False,
            *,
            axis: Any = None,
            keepdims: bool | None = None,
        ) -> Tensor: ...
        def prod(
            self,
            dim: Any = None,
            keepdim: bool = False,
            *,
            axis: Any = None,
            keepdims: bool | None = None,
        ) -> Tensor: ...
        def argmax(
            self,
            dim: Any = None,
            keepdim: bool = False,
            *,
            axis: Any = None,
            keepdims: bool | None = None,
        ) -> Tensor: ...
        def argmin(
            self,
            dim: Any = None,
            keepdim: bool = False,
            *,
            axis: Any = None,
            keepdims: bool | None = None,
        ) -> Tensor: ...
        def max(self, axis: Any = None, keepdims: bool = False) -> Tensor: ...
        def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor: ...
        def cpu(self) -> Tensor: ...
        def t(self) -> Tensor: ...
        def view(self, *shape: Any) -> Tensor: ...
        def detach(self) -> Tensor: ...
        def clone(self) -> Tensor: ...
        def float(self) -> Tensor: ...
        def double(self) -> Tensor: ...
        def long(self) -> Tensor: ...
        def int(self) -> Tensor: ...

        # PyTorch's tensor methods, attached by multidev.torch_names
        add_: Callable[..., Any]
        bmm: Callable[..., Any]
        bool: Callable[..., Any]
        chunk: Callable[..., Any]
        clamp: Callable[..., Any]
        clamp_: Callable[..., Any]
        clip: Callable[..., Any]
        contiguous: Callable[..., Any]
        copy_: Callable[..., Any]
        cumsum: Callable[..., Any]
        div_: Callable[..., Any]
        expand: Callable[..., Any]
        fill_: Callable[..., Any]
        flatten: Callable[..., Any]
        gather: Callable[..., Any]
        half: Callable[..., Any]
        index_select: Callable[..., Any]
        log: Callable[..., Any]
        log_softmax: Callable[..., Any]
        masked_fill: Callable[..., Any]
        masked_fill_: Callable[..., Any]
        matmul: Callable[..., Any]
        min: Callable[..., Any]
        mul_: Callable[..., Any]
        multinomial: Callable[..., Any]
        norm: Callable[..., Any]
        permute: Callable[..., Any]
        pow: Callable[..., Any]
        relu: Callable[..., Any]
        repeat: Callable[..., Any]
        repeat_interleave: Callable[..., Any]
        scatter: Callable[..., Any]
        scatter_: Callable[..., Any]
        sigmoid: Callable[..., Any]
        softmax: Callable[..., Any]
        split: Callable[..., Any]
        sqrt: Callable[..., Any]
        squeeze: Callable[..., Any]
        std: Callable[..., Any]
        sub_: Callable[..., Any]
        swapaxes: Callable[..., Any]
        tanh: Callable[..., Any]
        topk: Callable[..., Any]
        transpose: Callable[..., Any]
        tril: Callable[..., Any]
        triu: Callable[..., Any]
        type: Callable[..., Any]
        unsqueeze: Callable[..., Any]
        var: Callable[..., Any]
        zero_: Callable[..., Any]

        requires_grad: builtins.bool

        @property
        def data(self) -> Tensor: ...
        def abs(self) -> Tensor: ...
        def exp(self) -> Tensor: ...
        def backward(self, gradient: Any = None, retain_graph: builtins.bool = False) -> None: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __eq__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __iadd__(self: _T, other: Any) -> _T: ...
        def __isub__(self: _T, other: Any) -> _T: ...
        def __imul__(self: _T, other: Any) -> _T: ...
        def __itruediv__(self: _T, other: Any) -> _T: ...
        def __ifloordiv__(self: _T, other: Any) -> _T: ...
        def __imod__(self: _T, other: Any) -> _T: ...
        def __ipow__(self: _T, other: Any) -> _T: ...

    if TYPE_CHECKING:  # attached by multidev.array_api.install

        def __array_namespace__(self, /, *, api_version: str | None = None) -> Any: ...
        def __dlpack__(
            self,
            *,
            stream: Any = None,
            max_version: Any = None,
            dl_device: Any = None,
            copy: Any = None,
        ) -> Any: ...
        def __dlpack_device__(self) -> tuple[builtins.int, builtins.int]: ...
        def __pos__(self) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __lshift__(self, other: Any) -> Tensor: ...
        def __rlshift__(self, other: Any) -> Tensor: ...
        def __rshift__(self, other: Any) -> Tensor: ...
        def __rrshift__(self, other: Any) -> Tensor: ...
        @property
        def mT(self) -> Tensor: ...
