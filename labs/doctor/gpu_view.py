"""What a GPU script is told inside the doctor's ranks: what it would see on a GPU.

cuda.py runs every CUDA tensor on the CPU. Left at that, a script would see the CPU and take
its CPU path: `t.is_cpu` True, `t.device.type` "cpu", `dist.get_backend()` "gloo",
`torch.autocast("cuda")` switched off (torch/amp/autocast_mode.py disables it when CUDA is not
available), `torch.set_default_device("cuda")` failing at the first tensor. So, for the
script's own code (torch and the course get the truth, so their CPU paths run):

- device bookkeeping: each storage the script put on CUDA (a CUDA device mapped, a CUDA default
  device, or an op on such a tensor) is marked with its device index; `is_cuda`, `is_cpu`,
  `device`, `get_device()` and `type()` answer as on a GPU. `.cuda()` of a CPU tensor and `.cpu()` of a
  CUDA one copy, as they do on a GPU.
- `dist.get_backend(group)` answers the backend the script asked for that group,
  `dist.is_nccl_available()` True.
- `torch.autocast("cuda", dtype)` runs as CPU autocast with that dtype (CUDA's default, float16,
  when none is given): CPU autocast's op list, not CUDA's, decides which ops it lowers;
  `GradScaler("cuda")`, which torch disables without a GPU, runs as `GradScaler("cpu")`.

Every answer that differs from the CPU's is recorded once per rank (`STATE.differences`); the
report's header lists them.
"""
from __future__ import annotations

import sys

import torch
import torch.distributed.distributed_c10d as c10d
import torch.utils._device as default_device
from torch.multiprocessing.reductions import StorageWeakRef

from labs.doctor.standin import STATE
from labs.harness.grading import callers

_MARKS: dict[int, tuple] = {}       # storage's address -> (weak reference, CUDA device index)
_ASKED: dict[int, str] = {}         # id(process group) -> the backend the script asked for
NOT = object()                      # "no answer of mine": the call runs as it is

TOLD_DEVICE = ("t.is_cuda, t.is_cpu, t.device, t.get_device(), t.type() answered as on a GPU "
               "(cuda:N) for tensors the script put on CUDA; their data is on the CPU")
DEFAULT = ("torch.set_default_device('cuda') / `with torch.device('cuda')`: tensors made without "
           "a device are made on the CPU, and told cuda:N")
AUTOCAST = ("torch.autocast('cuda', {dtype}) ran as CPU autocast with {dtype}: CPU autocast's op "
            "list, not CUDA's, decides which ops run in {dtype}")
SCALER = ("GradScaler('cuda') ran as GradScaler('cpu'): it scales and skips steps as on a GPU "
          "(without a GPU, torch disables a CUDA GradScaler: torch/amp/grad_scaler.py)")
BACKEND = "dist.get_backend() answered {asked!r}, as the script asked; the group runs gloo"
NCCL_AVAILABLE = "dist.is_nccl_available() answered True; this torch has no NCCL"


def differs(what: str) -> None:
    """Note that the script used `what` (the report's header lists it once)."""
    if what not in STATE.differences:
        STATE.differences[what] = None
        STATE.use()
        STATE.on_use()        # the header line changes: the agent writes it again


def by_the_script(depth: int) -> bool:
    """Is the code `depth` frames up (past the course's and the standard library's) the
    script's own, not torch's?"""
    frame = sys._getframe(depth + 1)
    while frame is not None and frame.f_code.co_filename.startswith(callers._NOT_CALLERS[1:]):
        frame = frame.f_back
    name = frame.f_code.co_filename if frame is not None else "<"
    return not name.startswith(callers._NOT_CALLERS[0]) and not name.startswith("<")


# --- device bookkeeping ---------------------------------------------------------------

def _address(t) -> int | None:
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError, AttributeError):
        return None


def device_of(t) -> int | None:
    """The CUDA device index the script put `t`'s data on; None: it is a CPU tensor."""
    if not _MARKS or not isinstance(t, torch.Tensor):
        return None
    key = _address(t)
    entry = _MARKS.get(key)
    if entry is None:
        return None
    if entry[0].expired():          # freed: the address may be another storage's now
        del _MARKS[key]
        return None
    return entry[1]


def mark(out, index: int):
    """Put the tensors of `out` (a tensor, or a list or tuple of them) on CUDA device `index`."""
    for t in _flat(out):
        key = _address(t)
        if key is not None and device_of(t) is None:
            _MARKS[key] = (StorageWeakRef(t.untyped_storage()), index)
    return out


def _flat(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def marked_input(args, kwargs) -> int | None:
    """The CUDA device of the first input tensor the script put on CUDA, if any."""
    if not _MARKS:
        return None
    for value in (*args, *kwargs.values()):
        for t in _flat(value):
            index = device_of(t)
            if index is not None:
                return index
    return None


def default_cuda() -> int | None:
    """The default device's index when the script made CUDA the default, else None."""
    device = default_device.CURRENT_DEVICE
    if device is None or device.type != "cuda":
        return None
    return device.index if device.index is not None else STATE.device


def to_gpu(tensor, index: int):
    """`.cuda()` / `.to("cuda")`: the tensor itself if already there, else a copy there."""
    if device_of(tensor) == index:
        return tensor
    return mark(tensor.clone(), index)


def to_cpu(tensor, result):
    """`.cpu()` / `.to("cpu")` of a tensor the script put on CUDA: a copy, as on a GPU."""
    return result.clone() if result is tensor and device_of(tensor) is not None else result


def _device(t):
    index = device_of(t)
    return NOT if index is None else torch.device("cuda", index)


_TOLD = {torch.Tensor.is_cuda.__get__: lambda t: NOT if device_of(t) is None else True,
         torch.Tensor.is_cpu.__get__: lambda t: NOT if device_of(t) is None else False,
         torch.Tensor.device.__get__: _device,
         torch.Tensor.get_device: lambda t: NOT if device_of(t) is None else device_of(t)}


def told(func, args):
    """What the script is told for a tensor's device (NOT: the truth, or not asked)."""
    answer = _TOLD.get(func)
    if answer is None or not args or not _MARKS or not by_the_script(1):
        return NOT
    value = answer(args[0])
    if value is not NOT:
        differs(TOLD_DEVICE)
    return value


# --- backends and autocast ------------------------------------------------------------

def asked_for(group, backend: str) -> None:
    """The agent tells which backend the script asked for `group` (ids: no reference kept)."""
    if group is not None and backend:
        _ASKED[id(group)] = backend


def _get_backend(original):
    def get_backend(group=None):
        truth = original(group)
        asked = _ASKED.get(id(group or c10d._get_default_group()), "")
        if not asked or asked == truth or not by_the_script(1):
            return truth
        differs(BACKEND.format(asked=asked))
        return c10d.Backend(asked)
    return get_backend


def _is_nccl_available(original):
    def is_nccl_available():
        if original() or not by_the_script(1):
            return original()
        differs(NCCL_AVAILABLE)
        return True
    return is_nccl_available


def _autocast_init(original):
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type == "cuda":
            dtype = dtype or torch.get_autocast_dtype("cuda")
            differs(AUTOCAST.format(dtype=dtype))
            device_type = "cpu"
        original(self, device_type, dtype, enabled, cache_enabled)
    return __init__


def _scaler_init(original):
    def __init__(self, device="cuda", *args, **kwargs):
        enabled = kwargs.get("enabled", args[4] if len(args) > 4 else True)
        if device == "cuda" and enabled:
            differs(SCALER)
            device = "cpu"
        original(self, device, *args, **kwargs)
    return __init__


def install() -> list:
    """Put the answers in place; returns what `uninstall` puts back."""
    autocast, scaler = torch.amp.autocast_mode.autocast, torch.amp.grad_scaler.GradScaler
    saved = [(autocast, "__init__", autocast.__init__), (scaler, "__init__", scaler.__init__),
             (torch, "get_default_device", torch.get_default_device)]
    for module in (torch.distributed, c10d):
        saved += [(module, "get_backend", module.get_backend),
                  (module, "is_nccl_available", module.is_nccl_available)]
        module.get_backend = _get_backend(c10d.get_backend)
        module.is_nccl_available = _is_nccl_available(c10d.is_nccl_available)
    autocast.__init__ = _autocast_init(autocast.__init__)
    scaler.__init__ = _scaler_init(scaler.__init__)
    real_default = torch.get_default_device

    def get_default_device():
        index = default_cuda()
        return real_default() if index is None else torch.device("cuda", index)
    torch.get_default_device = get_default_device
    return saved


def uninstall(saved: list) -> None:
    for owner, name, value in saved:
        setattr(owner, name, value)
    if default_cuda() is not None:      # the doctor's own code after the script: the CPU
        torch.set_default_device(None)
    _MARKS.clear()
    _ASKED.clear()
