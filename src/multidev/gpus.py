"""Counting CUDA GPUs without initialising CUDA: NVML's device list, read through
``CUDA_VISIBLE_DEVICES`` the way the CUDA runtime reads it.

NVML is a separate library from CUDA: asking it leaves the CUDA driver uninitialised in this
process, so a child made later by ``fork`` can still use the GPU. Adapters whose framework
offers no such count call :func:`nvml_visible_gpu_count`.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

__all__ = ["nvml_visible_gpu_count", "visible_gpu_count"]

_UUID_PREFIXES = ("GPU-", "MIG-")
_UUID_BUFFER = 96  # NVML_DEVICE_UUID_V2_BUFFER_SIZE


def _leading_int(text: str) -> int:
    """The integer ``text`` starts with, as C's ``strtoul`` reads it ("1gpu" is 1), or -1."""
    text = text.strip()
    end = 1 if text[:1] in ("+", "-") else 0
    while end < len(text) and text[end].isdigit():
        end += 1
    digits = text[:end]
    return int(digits) if digits.lstrip("+-") else -1


def _uuid_ordinal(prefix: str, uuids: Sequence[str]) -> int:
    """The index of the one UUID starting with ``prefix``; -1 when none or several do."""
    found = [i for i, uuid in enumerate(uuids) if uuid.startswith(prefix)]
    return found[0] if len(found) == 1 else -1


def visible_gpu_count(
    physical: int, visible: str | None, uuids: Sequence[str] | None = None
) -> int:
    """How many of ``physical`` GPUs CUDA shows under ``CUDA_VISIBLE_DEVICES=visible``.

    CUDA's rule: unset shows all; entries are read up to the first invalid one (an index that is
    negative, not a number or not below ``physical``, or a UUID that matches no GPU or several);
    a GPU named twice hides every GPU ("1,1" shows none). A list that starts with indices stops
    at its first UUID ("0,GPU-…" shows one) and a list of UUIDs at its first index. UUIDs
    (``GPU-…``, matched by prefix) are checked against ``uuids`` where given, else only counted;
    ``MIG-`` entries are counted.
    """
    if visible is None:
        return physical
    entries = visible.split(",")
    first = entries[0].strip()
    if first.startswith(_UUID_PREFIXES):
        keys: list[object] = []
        prefix = first[:4]
        for entry in entries:
            entry = entry.strip()
            if not entry.startswith(prefix):
                break
            key: object = entry
            if uuids is not None and prefix == "GPU-":
                key = _uuid_ordinal(entry, uuids)
                if key == -1:
                    break
            if key in keys:
                return 0
            keys.append(key)
        return min(len(keys), physical)
    kept: list[int] = []
    for entry in entries:
        index = _leading_int(entry)
        if index < 0:
            break
        if index in kept:
            return 0
        kept.append(index)
    for n, index in enumerate(kept):
        if index >= physical:
            return n
    return len(kept)


def _nvml_devices() -> list[str] | None:
    """The UUIDs of the physical GPUs, in NVML's order, or None where NVML is unavailable."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    if nvml.nvmlInit_v2() != 0:
        return None
    try:
        count = ctypes.c_uint(0)
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return None
        uuids = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            buf = ctypes.create_string_buffer(_UUID_BUFFER)
            if (
                nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0
                or nvml.nvmlDeviceGetUUID(handle, buf, _UUID_BUFFER) != 0
            ):
                return None
            uuids.append(buf.value.decode("ascii", "replace"))
        return uuids
    finally:
        nvml.nvmlShutdown()


def nvml_visible_gpu_count() -> int | None:
    """GPUs CUDA would show this process (NVML plus ``CUDA_VISIBLE_DEVICES``), counted
    without initialising CUDA; None where NVML cannot be loaded or answers with an error."""
    uuids = _nvml_devices()
    if uuids is None:
        return None
    return visible_gpu_count(len(uuids), os.environ.get("CUDA_VISIBLE_DEVICES"), uuids)
