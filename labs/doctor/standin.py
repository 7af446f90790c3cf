"""The stand-in `torch.cuda` of the doctor's ranks (labs/doctor/cuda.py installs it): a
machine with LOCAL_WORLD_SIZE devices whose memory is the CPU's.

Streams and events are objects that remember their name and when they were recorded;
nothing runs on them (every op already ran on the CPU when it returned), so `synchronize`,
`wait_stream`, `Event.wait` return at once and `query()` is True. The stream current when
an op is posted is what the record writes on the op (Event.stream). A name the stand-in does
not define is looked up in the real torch.cuda, and a call of it that fails for want of a GPU
raises NotMapped naming the call and the script's line; CUDA graphs, the jiterator, the
in-process NCCL bindings and the like raise NotMapped at once.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
import types
from types import SimpleNamespace

import torch

from labs.harness.grading import callers


class NotMapped(RuntimeError):
    """A CUDA call the doctor cannot run on the CPU: the run stops here (exit 2)."""

    def __init__(self, call: str, why: str = "it needs a GPU"):
        # where: the script's line (the report shows it beside the message)
        self.call, self.where = call, callers.caller()[0]
        super().__init__(f"{call} cannot run on the CPU ({why}); the doctor maps CUDA onto "
                         f"the CPU and NCCL onto gloo, not this")


# Names that are CUDA itself, not a device to map: the run stops at them.
UNMAPPABLE = {
    "graph": "a CUDA graph replays recorded GPU kernels",
    "graphs": "a CUDA graph replays recorded GPU kernels",
    "CUDAGraph": "a CUDA graph replays recorded GPU kernels",
    "make_graphed_callables": "a CUDA graph replays recorded GPU kernels",
    "graph_pool_handle": "a CUDA graph replays recorded GPU kernels",
    "jiterator": "the jiterator compiles CUDA kernels",
    "nccl": "torch.cuda.nccl calls NCCL inside one process",
    "comm": "torch.cuda.comm copies between GPUs of one process",
    "ExternalStream": "a stream made by other CUDA code",
    "MemPool": "a CUDA memory pool",
    "use_mem_pool": "a CUDA memory pool",
    "caching_allocator_alloc": "the CUDA caching allocator",
    "cudart": "the CUDA runtime itself",
}


class State:
    """What the script did with the stand-in on this rank."""

    def __init__(self, devices: int):
        self.devices, self.device = devices, 0
        self.named = set()                # CUDA device indices the script named (cuda:1, .to(1))
        self.streams = 0                  # side streams made so far
        self.used_streams = False         # any stream API: ops carry a stream name from then
        self.used = False                 # any CUDA use: the report's header says it was mapped
        self.on_use = lambda: None        # called when `used` turns True
        self.differences: dict = {}       # what the script was told unlike the CPU (gpu_view.py)
        self.order = None                 # the buffer watch's StreamOrder, while watched
        self.default = Stream.__new__(Stream)
        self.default.name, self.default.device_index = "default", 0
        self.current = self.default

    def use(self) -> None:
        if not self.used:
            self.used = True
            self.on_use()

    def stream_name(self) -> str:
        return self.current.name if self.used_streams else ""


def _touch_streams() -> None:
    STATE.used_streams = True
    STATE.use()


def _index(device) -> int:
    if device is None:
        return STATE.device
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return device.index if device.index is not None else STATE.device


class Stream:
    """torch.cuda.Stream(): 'side 1', 'side 2', ... in creation order."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        _touch_streams()
        STATE.streams += 1
        self.name, self.priority = f"side {STATE.streams}", priority
        self.device_index = _index(device)

    device = property(lambda self: torch.device("cuda", self.device_index))
    cuda_stream = property(lambda self: id(self))
    stream_id = cuda_stream

    def wait_stream(self, stream) -> None:
        if STATE.order is not None:       # nothing waits here; the order is recorded
            STATE.order.wait_stream(self.name, stream.name)

    def wait_event(self, event) -> None:
        event.wait(self)

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def synchronize(self) -> None:
        if STATE.order is not None:
            STATE.order.settle(STATE.order.snapshot(self.name))

    def query(self) -> bool:
        return True

    def __enter__(self):
        self._outer, STATE.current = STATE.current, self
        _touch_streams()
        return self

    def __exit__(self, *exc):
        STATE.current = self._outer

    def __repr__(self):
        return f"<torch.cuda.Stream {self.name!r}, mapped onto the CPU by the doctor>"


class Event:
    """torch.cuda.Event(): record() notes the time and stream; everything else returns."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        _touch_streams()
        self.t, self.stream, self.carried = None, None, []

    def record(self, stream=None) -> None:
        self.t, self.stream = time.perf_counter(), stream or STATE.current
        if STATE.order is not None:       # what a stream waiting for it will be ordered after
            self.carried = STATE.order.snapshot(self.stream.name)

    def wait(self, stream=None) -> None:
        if STATE.order is not None:
            STATE.order.join((stream or STATE.current).name, self.carried)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        if STATE.order is not None:
            STATE.order.settle(self.carried)

    def elapsed_time(self, end) -> float:
        """Milliseconds between the two records: host time, as every op ran when called."""
        return 1e3 * (end.t - self.t)

    def ipc_handle(self):
        raise NotMapped("torch.cuda.Event.ipc_handle", "an event shared between processes")


STATE = State(1)


@contextlib.contextmanager
def stream(s):
    """`with torch.cuda.stream(s):` s is the current stream inside."""
    if s is None:
        yield
        return
    with s:
        yield


class device:
    """`with torch.cuda.device(i):` the current device inside."""

    def __init__(self, index):
        self.index = _index(index)

    def __enter__(self):
        self._outer, STATE.device = STATE.device, self.index

    def __exit__(self, *exc):
        STATE.device = self._outer


def set_device(d) -> None:
    STATE.use()
    index = _index(d)
    if not 0 <= index < STATE.devices:
        raise RuntimeError(f"CUDA error: invalid device ordinal {index} (the doctor maps "
                           f"{STATE.devices} devices: --nproc-per-node)")
    STATE.device = index


def current_stream(device=None):
    _touch_streams()
    return STATE.current


def default_stream(device=None):
    _touch_streams()
    return STATE.default


def set_stream(s) -> None:
    _touch_streams()
    STATE.current = s


def synchronize(device=None) -> None:
    STATE.use()
    if STATE.order is not None:
        STATE.order.settle()


def manual_seed(seed: int) -> None:
    # CUDA tensors are CPU tensors here: the CPU's generator makes them, so a script's
    # cuda seed must seed it (ranks that seed alike draw alike, as on GPUs). Not through
    # torch.manual_seed: that calls torch.cuda.manual_seed_all, this function.
    torch.default_generator.manual_seed(int(seed))


def get_device_properties(d=None):
    return SimpleNamespace(name="CUDA mapped onto the CPU by the doctor", major=8, minor=0,
                           total_memory=80 * 2**30, multi_processor_count=1,
                           is_integrated=False, is_multi_gpu_board=False)


def _zero(*args, **kwargs) -> int:
    return 0


def _nothing(*args, **kwargs) -> None:
    return None


_nvtx = types.SimpleNamespace(range_push=_zero, range_pop=_zero, mark=_nothing,
                              range=lambda *a, **k: contextlib.nullcontext())

NAMES = dict(
    is_available=lambda: True, is_initialized=lambda: True, init=_nothing,
    _lazy_init=_nothing, is_bf16_supported=lambda *a, **k: True,
    device_count=lambda: STATE.devices, set_device=set_device,
    current_device=lambda: STATE.device, device=device, device_of=lambda t: device(STATE.device),
    get_device_name=lambda d=None: "CUDA mapped onto the CPU by the doctor",
    get_device_capability=lambda d=None: (8, 0), get_device_properties=get_device_properties,
    get_arch_list=lambda: [], Stream=Stream, Event=Event, stream=stream, StreamContext=stream,
    current_stream=current_stream, default_stream=default_stream, set_stream=set_stream,
    synchronize=synchronize, manual_seed=manual_seed, manual_seed_all=manual_seed,
    seed=lambda: torch.seed(), seed_all=lambda: torch.seed(),
    initial_seed=lambda: torch.initial_seed(), get_rng_state=lambda d="cuda": torch.get_rng_state(),
    set_rng_state=lambda s, d="cuda": torch.set_rng_state(s),
    get_rng_state_all=lambda: [torch.get_rng_state()] * STATE.devices,
    set_rng_state_all=lambda states: torch.set_rng_state(states[0]),
    empty_cache=_nothing, ipc_collect=_nothing, memory_allocated=_zero,
    max_memory_allocated=_zero, memory_reserved=_zero, max_memory_reserved=_zero,
    memory_cached=_zero, max_memory_cached=_zero, reset_peak_memory_stats=_nothing,
    reset_max_memory_allocated=_nothing, reset_accumulated_memory_stats=_nothing,
    memory_stats=lambda *a, **k: {}, memory_summary=lambda *a, **k: "",
    mem_get_info=lambda d=None: (80 * 2**30, 80 * 2**30),
    set_per_process_memory_fraction=_nothing, nvtx=_nvtx, set_sync_debug_mode=_nothing,
    get_sync_debug_mode=_zero,
)
# Only asked, never a use of CUDA: a CPU script asking is_available() is not "mapped".
QUESTIONS = {"is_available", "is_initialized", "device_count", "_lazy_init", "init",
             "is_bf16_supported", "get_arch_list"}
# torch's own code asking these gets the truth (this build has no CUDA): its internals then
# take their CPU paths instead of reaching for CUDA kernels the stand-in does not have.
TRUTHFUL = {"is_available", "is_initialized"}


class StandIn(types.ModuleType):
    """What `torch.cuda` is inside the doctor's ranks."""

    def __init__(self, real: types.ModuleType):
        super().__init__("torch.cuda", __doc__)
        self.__dict__["_real"] = real
        self.__path__ = getattr(real, "__path__", [])      # submodules still import
        for name, value in NAMES.items():
            if name in TRUTHFUL:
                value = _to_the_script(value, getattr(real, name))
            self.__dict__[name] = value if name in QUESTIONS or not callable(value) \
                else _using(value)

    def __getattr__(self, name):
        if name in UNMAPPABLE and not _from_torch(1):    # torch's own imports: the real one
            raise NotMapped(f"torch.cuda.{name}", UNMAPPABLE[name])
        value = getattr(self._real, name)
        if callable(value) and not isinstance(value, type) and not name.startswith("__"):
            return _guarded(f"torch.cuda.{name}", value)
        return value


def _to_the_script(answer, truth):
    def asked(*args, **kwargs):
        return (truth if _from_torch() else answer)(*args, **kwargs)
    asked.__name__ = getattr(truth, "__name__", "asked")
    return asked


def _using(function):
    def used(*args, **kwargs):
        if not _from_torch():          # torch.manual_seed calls torch.cuda's on any script
            STATE.use()
        return function(*args, **kwargs)
    used.__name__ = getattr(function, "__name__", "call")
    used.__wrapped__ = function
    return used


def _from_torch(depth: int = 2) -> bool:
    """Whether the code `depth` frames up (past the import machinery) is torch's own."""
    frame = sys._getframe(depth + 1)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_TORCH)


_TORCH = os.path.dirname(torch.__file__) + os.sep
GPU_ERRORS = ("CUDA", "cuda", "accelerator", "'CPU' backend", "_cuda_", "_cudart")


def _guarded(name: str, function):
    """A real torch.cuda function: if it fails for want of a GPU, NotMapped says which."""
    def guarded(*args, **kwargs):
        if not _from_torch():
            STATE.use()
        try:
            return function(*args, **kwargs)
        except (RuntimeError, AssertionError, AttributeError) as error:
            if any(word in str(error) for word in GPU_ERRORS):
                raise NotMapped(name, str(error).splitlines()[0][:120]) from error
            raise
    guarded.__name__ = getattr(function, "__name__", name)
    return guarded


def configure(devices: int) -> None:
    STATE.__init__(devices)


def local_devices() -> int:
    return int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
