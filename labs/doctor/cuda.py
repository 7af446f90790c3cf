"""CUDA onto the CPU inside the doctor's ranks (agent.py enters `mapping()` around the
script, nowhere else): a GPU script runs unmodified on a CPU-only machine.

Two mechanisms cover the whole class, not a list of names:
- `OnTheCpu`, a TorchFunctionMode, sees every torch function and Tensor method the script
  calls: a CUDA device anywhere in its arguments (`device="cuda"`, `"cuda:1"`,
  `torch.device("cuda", i)`, `.to(device)`, `.to(0)`) becomes the CPU, as does a CUDA default
  device (it sits below this mode), `.cuda()` of a CPU tensor and `.cpu()` of a CUDA one
  copy (as on a GPU), `pin_memory()` returns the tensor, `pin_memory=True` is dropped,
  `record_stream` notes the stream; a kernel with no CPU implementation (a custom CUDA op) raises NotMapped.
- `torch.cuda` is replaced by the stand-in namespace of standin.py (a machine with
  LOCAL_WORLD_SIZE devices, streams and events recorded, not run).
`torch.Generator`, DDP's `device_ids` and the script's threads, which no mode sees, are
mapped at their own doors. Imports of GPU kernel libraries (Triton, flash-attention, ...)
by the script raise NotMapped, an ImportError too, so a script's own `except ImportError:`
fallback still runs.

Tensors stay CPU tensors (gloo needs them), but the script is told what a GPU run would
tell it, so it takes its GPU path (gpu_view.py): a tensor it put on CUDA answers `is_cuda`,
`is_cpu`, `device` and `get_device()` as on a GPU, `set_default_device("cuda")` makes CPU
tensors told cuda:N, `torch.autocast("cuda")` runs as CPU autocast with its dtype, and
`dist.get_backend()` answers the backend asked for. torch's own code gets the truth. The
report's header lists each such answer the script used.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import sys
import threading

import torch
import torch.utils._device
from torch.overrides import TorchFunctionMode

from labs.doctor import gpu_view, standin
from labs.doctor.standin import GPU_ERRORS, STATE, NotMapped

_CPU = torch.device("cpu")

# GPU kernel libraries: importing one is asking for CUDA kernels.
KERNELS = {"triton": "Triton compiles GPU kernels",
           "flash_attn": "flash-attention's kernels are CUDA kernels",
           "flash_attn_2_cuda": "flash-attention's kernels are CUDA kernels",
           "flash_attn_interface": "flash-attention's kernels are CUDA kernels",
           "xformers": "xformers' kernels are CUDA kernels",
           "apex": "apex's fused kernels are CUDA kernels",
           "transformer_engine": "Transformer Engine's kernels are CUDA kernels",
           "cupy": "CuPy runs on a GPU", "pycuda": "PyCUDA runs on a GPU",
           "numba.cuda": "numba.cuda compiles GPU kernels"}

# Raised where an import of such a library is; an ImportError too (see the docstring).
NotMappedImport = type("NotMapped", (NotMapped, ImportError), {})


def _is_cuda(device) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.split(":")[0] == "cuda"


def _cpu(value, positional_int: bool = False):
    """The CPU for a CUDA device (or, where it can only be a device, a bare index)."""
    if _is_cuda(value) or (positional_int and type(value) is int):
        STATE.use()
        index = value if type(value) is int else torch.device(value).index
        if index is not None:             # which GPU NCCL would use: the device rule
            STATE.named.add(index)
        return _CPU
    return value


def _index(device) -> int:
    """The CUDA device index a device argument names ("cuda": the current device)."""
    if type(device) is int or torch.device(device).index is not None:
        index = device if type(device) is int else torch.device(device).index
        STATE.named.add(index)            # which GPU NCCL would use: the device rule
        return index
    return STATE.device


def _target(func, args, kwargs):
    """Where the script asked the result to be: ("cuda", index), ("cpu", None) or None."""
    device = kwargs.get("device")
    if device is None and func in _DEVICE_FIRST and len(args) > 1:
        device = args[1]
    if device is None:
        device = next((a for a in args[1:] if _is_cuda(a)), None)
    if _is_cuda(device) or type(device) is int:
        return "cuda", _index(device)
    if isinstance(device, (str, torch.device)) and str(device).split(":")[0] == "cpu":
        return "cpu", None
    index = gpu_view.default_cuda()
    if index is not None and device is None and func in _constructors():
        gpu_view.differs(gpu_view.DEFAULT)
        kwargs["device"] = _CPU        # not the default device's CUDA (its mode is below)
        return "cuda", index
    return None


def _placed(func, args, kwargs, out, target):
    """The result, on the device the script asked for (gpu_view.py's bookkeeping)."""
    own = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if target is None:
        index = gpu_view.marked_input(args, kwargs)
        if index is None or out is own or getattr(func, "__name__", "") == "__get__":
            return out
        return gpu_view.mark(out, index)
    if target[0] == "cuda":
        return gpu_view.to_gpu(out, target[1]) if out is own else gpu_view.mark(out, target[1])
    return gpu_view.to_cpu(own, out) if own is not None else out


def _same(tensor, device=None, *args, **kwargs):
    STATE.use()
    if device is not None:                # t.cuda(1): a named device
        _cpu(device, True)
    return tensor


def _to_gpu(tensor, device=None, non_blocking=False, **kwargs):
    """`.cuda()`: a CPU tensor's copy on the device (the tensor itself if already there)."""
    STATE.use()
    return gpu_view.to_gpu(tensor, STATE.device if device is None else _index(device))


def _record_stream(tensor, stream):
    standin.STATE.used_streams = True
    STATE.use()


def _type(tensor, dtype=None, non_blocking=False, **kwargs):
    if isinstance(dtype, str) and dtype.startswith("torch.cuda."):
        STATE.use()
        out = tensor.type("torch." + dtype[len("torch.cuda."):], non_blocking, **kwargs)
        return gpu_view.to_gpu(out, STATE.device)
    if dtype is not None:
        return tensor.type(dtype, non_blocking, **kwargs)
    name = tensor.type()            # "torch.cuda.FloatTensor" for a CUDA tensor, on a GPU
    if gpu_view.device_of(tensor) is None or not gpu_view.by_the_script(1):
        return name
    gpu_view.differs(gpu_view.TOLD_DEVICE)
    return name.replace("torch.", "torch.cuda.", 1)


_INSTEAD = {torch.Tensor.cuda: _to_gpu, torch.Tensor.pin_memory: _same,
            torch.Tensor.cpu: lambda tensor, *a, **k: gpu_view.to_cpu(tensor, tensor),
            torch.Tensor.is_pinned: lambda tensor, *a, **k: False}
_DEVICE_FIRST = {torch.Tensor.to}          # where a bare int is a device (.to(0))
_constructors = torch.utils._device._device_constructors


class OnTheCpu(TorchFunctionMode):
    """Every torch call's CUDA device becomes the CPU (see the module's docstring)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False      # as the record's mode: no dynamo import at the first op

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.device:        # torch.device("cuda", i) itself stays what it says
            return func(*args, **kwargs)
        told = gpu_view.told(func, args)
        if told is not gpu_view.NOT:
            return told
        instead = _INSTEAD.get(func)
        if instead is not None:
            return instead(*args, **kwargs)
        if func is torch.Tensor.type:
            return _type(*args, **kwargs)
        target = _target(func, args, kwargs)
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"], True)    # device=0: cuda:0
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        if args and func in _DEVICE_FIRST:
            args = (args[0], _cpu(args[1], True), *args[2:]) if len(args) > 1 else args
        args = tuple(_cpu(a) if isinstance(a, (torch.device, str)) else a for a in args)
        return _placed(func, args, kwargs, _run(func, args, kwargs), target)


def _run(func, args, kwargs):
    try:
        return func(*args, **kwargs)
    except (RuntimeError, NotImplementedError, AssertionError) as error:
        if isinstance(error, NotMapped) or not any(w in str(error) for w in GPU_ERRORS):
            raise
        why = "an op with no CPU kernel, e.g. a custom CUDA kernel" \
            if "'CPU' backend" in str(error) else str(error).splitlines()[0][:120]
        raise NotMapped(_name(func), why) from error


def _name(func) -> str:
    qualified = getattr(func, "__qualname__", "") or getattr(func, "__name__", "")
    module = getattr(func, "__module__", "") or ""
    if isinstance(func, torch._ops.OpOverloadPacket | torch._ops.OpOverload):
        return f"torch.ops.{func}"
    return f"{module}.{qualified}".strip(".") if qualified else str(func)


class Generator(torch.Generator):
    """torch.Generator(device="cuda"): a class, so no mode sees its construction."""

    def __new__(cls, device="cpu"):
        return super().__new__(cls, device=_cpu(device, True))


def _ddp_init(original):
    """DistributedDataParallel(module, device_ids=[local_rank]): GPU-only arguments, which
    DDP refuses for a module on the CPU (where the mapping put it)."""
    def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
        if device_ids is not None or output_device is not None:
            STATE.use()
        original(self, module, None, None, *args, **kwargs)
    return __init__


def _in_threads(original_start):
    """A mode is per thread: a thread the script starts maps CUDA too."""
    def start(thread, *args, **kwargs):
        run = thread.run

        def mapped_run():
            with OnTheCpu():
                run()
        thread.run = mapped_run
        return original_start(thread, *args, **kwargs)
    return start


class _Kernels(importlib.abc.MetaPathFinder):
    """`import triton` (flash_attn, ...) by the script, not by torch's optional imports."""

    def find_spec(self, name, path=None, target=None):
        why = KERNELS.get(name) or KERNELS.get(name.partition(".")[0])
        if why and not _imported_by_torch():
            raise NotMappedImport(f"import {name}", why)
        return None


def _imported_by_torch() -> bool:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(("<frozen", "<")):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(
        torch.__path__[0] + "/")


@contextlib.contextmanager
def mapping(devices: int, on_use=lambda: None):
    """Inside: torch.cuda is the stand-in, CUDA devices are the CPU, GPU kernel libraries
    cannot be imported. Everything is put back on the way out."""
    standin.configure(devices)
    STATE.on_use = on_use
    real = sys.modules["torch.cuda"]
    stand_in = standin.StandIn(real)
    finder = _Kernels()
    sys.modules["torch.cuda"], torch.cuda = stand_in, stand_in
    sys.meta_path.insert(0, finder)
    # The one method whose argument parser refuses a stand-in stream before a mode sees it
    record_stream, torch.Tensor.record_stream = torch.Tensor.record_stream, _record_stream
    # Classes no mode sees built, and threads no mode is in: the few doors left
    generator, torch.Generator = torch.Generator, Generator
    ddp = torch.nn.parallel.DistributedDataParallel
    ddp_init, ddp.__init__ = ddp.__init__, _ddp_init(ddp.__init__)
    start, threading.Thread.start = threading.Thread.start, _in_threads(threading.Thread.start)
    told = gpu_view.install()       # what the script is told, as on a GPU
    try:
        with OnTheCpu():
            yield STATE
    finally:
        gpu_view.uninstall(told)
        sys.meta_path.remove(finder)
        torch.Tensor.record_stream, torch.Generator = record_stream, generator
        ddp.__init__, threading.Thread.start = ddp_init, start
        sys.modules["torch.cuda"], torch.cuda = real, real
        STATE.on_use = lambda: None


def header(asked: str, device_id: bool, used: bool, differences=()) -> str:
    """The report's header for what was mapped ("" when nothing was): one line, then one
    line per behaviour the script used whose answer differs from the CPU's (gpu_view.py)."""
    mapped = "CUDA mapped onto the CPU (streams and events recorded, not run)"
    if "nccl" in asked and used:
        line = f"the script asked for {asked} and CUDA: run on gloo, {mapped}"
    elif used:
        line = f"the script used CUDA: {mapped}"
    elif "nccl" in asked or device_id:
        line = f"the script asked for {asked or 'a device'}; run on gloo"
    else:
        return ""
    return "\n".join([line, *(f"  differs from a GPU run: {d}" for d in differences)])
