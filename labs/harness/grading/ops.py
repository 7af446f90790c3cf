"""What one dispatcher call is: the `Op` a record holds, from the call's name and arguments
(the schemas of torch 2.13's `c10d` and `_c10d_functional` ops)."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch._C._distributed_c10d as c10d_C
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from labs.harness.grading.buffers import _tensors

# Ops that move no data: recorded, never counted as a collective that replaces the sends.
SYNC_ONLY = frozenset({"barrier", "monitored_barrier_"})
SENDS = frozenset({"send", "isend"})                       # c10d / _c10d_functional names
RECVS = frozenset({"recv_", "recv_any_source_", "irecv"})
NOT_COMMUNICATION = frozenset({"check_for_nan", "wait_tensor", "_wrap_tensor_autograd"})
# What readers call each collective (the dispatcher's names are the process group's).
PUBLIC_NAMES = {"allreduce_": "all_reduce", "allreduce_coalesced_": "all_reduce_coalesced",
                "allgather_": "all_gather", "_allgather_base_": "all_gather_into_tensor",
                "allgather_coalesced_": "all_gather_coalesced",
                "allgather_into_tensor_coalesced_": "all_gather_into_tensor (coalesced)",
                "reduce_scatter_": "reduce_scatter",
                "_reduce_scatter_base_": "reduce_scatter_tensor",
                "reduce_scatter_tensor_coalesced_": "reduce_scatter_tensor (coalesced)",
                "broadcast_": "broadcast", "reduce_": "reduce", "gather_": "gather",
                "scatter_": "scatter", "alltoall_": "all_to_all",
                "alltoall_base_": "all_to_all_single", "monitored_barrier_": "monitored_barrier"}


@dataclass
class Op:
    """One op that reached the process group, on this rank."""

    kind: str            # "send", "recv", "sync" (barrier) or "collective"
    name: str            # what readers call it: "send", "all_reduce", "all_gather", ...
    peer: int | None     # global rank of the other side (p2p); None: any source, collective
    numel: int           # elements this rank sends (send, collective) or can receive (recv)
    dtype: str           # of the (first) tensor
    tag: int = 0
    seq: int = 0
    returned_work: bool = False   # it handed back a Work the caller must wait for
    waited: bool = False
    waited_at: int | None = None  # how many ops the record held when it was waited
    changed_in_flight: str = ""   # how a buffer changed between post and wait, if it did
    work_id: int | None = None    # id() of the Work it handed back, if any
    where: str = ""               # file:line of the code that made the call
    api: str = ""                 # the torch function it called: "isend", "batch_isend_irecv"
    borrowed: str = ""            # file:line (function) of forbidden code it came through
    digest: str = ""              # a send's bytes at post, hashed (while `digests` is on)
    into: str = ""                # a receive into memory the caller only lent: whose
    source: int | None = None     # a receive from any source: the rank it came from
    lent_changed: str = ""        # posted while memory the caller lent held other values
    values: tuple = ()            # a send's distinct values at post (on a sums probe)
    descents: int = 0             # on the positional probe: elements out of the tensor's order
    encoded: int = 0              # on the positional probe: elements that add up no rank
    pieces: int = 1               # on the positional probe: the model's gradients it holds
    group: str = ""               # the process group's name ("0": the default group)
    group_ranks: tuple = ()       # its members' global ranks, in group-rank order

    def describe(self) -> str:
        size = f"{self.numel} x {self.dtype}"
        if self.kind == "send":
            return f"a send of {size} to rank {self.peer}"
        if self.kind == "recv":
            source = "any source" if self.peer is None else f"rank {self.peer}"
            return f"a receive of {size} from {source}"
        return f"{self.name}({size})"


def _global(pg_obj, group_rank):
    """The global rank of `group_rank` in the process group the dispatcher was given."""
    try:
        pg = c10d_C.ProcessGroup.unbox(pg_obj)
        return dist.get_global_rank(pg, group_rank)
    except Exception:  # noqa: BLE001 - the default group, or a name: the rank is global
        return group_rank


def _group(args) -> tuple[str, tuple]:
    """(name, global ranks) of the process group a dispatcher call was given: the c10d ops
    pass it boxed (a ScriptObject), the functional ones by name (their last argument).
    Every group has its own gloo context / NCCL communicator: messages match per group."""
    for arg in (a for a in args if isinstance(a, (str, torch._C.ScriptObject))):
        try:
            pg = (c10d._resolve_process_group(arg) if isinstance(arg, str)
                  else c10d_C.ProcessGroup.unbox(arg))
            return pg.group_name, tuple(dist.get_process_group_ranks(pg))
        except Exception:  # noqa: BLE001 - a ReduceOp, a tag, an unregistered name
            continue
    return "", ()


def _classify(name, args) -> Op | list[Op] | None:
    """The Op(s) a dispatcher call is, from its name and arguments (schemas of torch 2.13),
    each with the process group it was posted on."""
    found = _classify_op(name, args)
    for op in found if isinstance(found, list) else [found] if found else []:
        op.group, op.group_ranks = _group(args)
    return found


def _classify_op(name, args) -> Op | list[Op] | None:
    if name in NOT_COMMUNICATION:
        return None
    tensors = _tensors(args[0]) if args else []
    first = tensors[0] if tensors else None
    dtype = str(first.dtype).removeprefix("torch.") if first is not None else ""
    numel = sum(t.numel() for t in tensors)
    if name == "send":                            # (tensors, pg, dst, tag)
        return Op("send", "send", _global(args[1], args[2]), numel, dtype, tag=args[3])
    if name == "recv_":                           # (tensors, pg, src, tag)
        return Op("recv", "recv", _global(args[1], args[2]), numel, dtype, tag=args[3])
    if name == "recv_any_source_":                # (tensors, pg, tag)
        return Op("recv", "recv", None, numel, dtype, tag=args[2])
    if name in ("isend", "irecv"):                # functional: (tensor, peer, tag, group)
        kind = "send" if name == "isend" else "recv"
        return Op(kind, f"{name} (functional)", args[1], numel, dtype, tag=args[2])
    if name == "batch_p2p_ops":                   # functional: (ops, peers, tags, tensors, group)
        return [Op("send" if kind == "isend" else "recv", f"{kind} (functional)", peer, t.numel(),
                   str(t.dtype).removeprefix("torch."), tag=tag)
                for kind, peer, tag, t in zip(args[0], args[1], args[2], args[3])]
    if name in SYNC_ONLY:
        return Op("sync", PUBLIC_NAMES.get(name, name), None, 0, "")
    sent = _tensors(args[1]) if name in _INPUT_SECOND and len(args) > 1 else tensors
    numel = sum(t.numel() for t in sent)
    dtype = str(sent[0].dtype).removeprefix("torch.") if sent else dtype
    return Op("collective", PUBLIC_NAMES.get(name, name), None, numel, dtype)


# Collectives whose first argument is the output: the data this rank sends is the second.
_INPUT_SECOND = {"allgather_", "_allgather_base_", "allgather_coalesced_",
                 "allgather_into_tensor_coalesced_", "reduce_scatter_", "_reduce_scatter_base_",
                 "reduce_scatter_tensor_coalesced_", "gather_", "scatter_", "alltoall_",
                 "alltoall_base_"}
