"""What a graded call leaves behind besides its result: the caller's memory, the gradients it
writes, the modules' hooks, the random generator. Helpers of graded.py (GradedBody)."""
from __future__ import annotations

import copy
import random

import numpy
import torch
import torch.distributed as dist

from labs.harness.grading.buffers import same_bytes


def copy_args(x, shift=0):
    """A copy of the arguments: tensors cloned (keeping their subclass), plus `shift` (other
    values, the same shapes), containers rebuilt, modules deep-copied (gradients too),
    anything else shared."""
    if isinstance(x, torch.Tensor):
        return x.clone() + shift if shift and x.dtype != torch.bool else x.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(copy_args(item, shift) for item in x)
    if isinstance(x, dict):
        return {key: copy_args(value, shift) for key, value in x.items()}
    if isinstance(x, torch.nn.Module):
        twin = copy.deepcopy(x)
        for mine, theirs in zip(twin.parameters(), x.parameters()):
            mine.grad = None if theirs.grad is None else copy_args(theirs.grad.detach(), shift)
        return twin
    return x


def tensors(x) -> list[torch.Tensor]:
    """Every tensor in x: a tensor, a (nested) list, tuple or dict of them, or a module's
    parameters (their values: gradients are what a module argument may change)."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in tensors(item)]
    if isinstance(x, dict):
        return [t for item in x.values() for t in tensors(item)]
    if isinstance(x, torch.nn.Module):
        return [p.data for p in x.parameters()]
    return []


def snapshot(x) -> list[torch.Tensor]:
    return [t.detach().clone() for t in tensors(x)]


def unchanged(x, snapshot) -> bool:
    now = tensors(x)
    return len(now) == len(snapshot) and all(
        same_bytes(a.detach(), b) for a, b in zip(now, snapshot))


def places(x) -> list[tuple]:
    """Where each tensor of x lives, and its version counter (bumped by every write)."""
    return [(t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride(),
             t._version) for t in tensors(x)]


def memory_problems(args, where, before, method, names) -> list[str]:
    """The caller's memory is the contract's: an argument keeps its memory (no `.data =`,
    `set_()`, `resize_()`, no other tensor put in a list it was given), and one the
    contract only reads is never written, not even for a moment (its version counter)."""
    rank, problems = dist.get_rank(), []
    for i, (arg, then) in enumerate(zip(args, where)):
        now = places(arg)
        if [p[:4] for p in now] != [p[:4] for p in then]:
            problems.append(
                f"rank {rank} replaced the memory of its argument `{names[i]}` (`.data =`, "
                f"`set_()`, `resize_()`, or another tensor put in its place): work in the "
                f"memory the caller gave you; a view of it, or a tensor sharing it, never sees "
                f"a result put anywhere else")
        elif i not in method.writes and [p[4] for p in now] != [p[4] for p in then] and \
                unchanged(arg, before[i]):
            problems.append(
                f"rank {rank} wrote into its argument `{names[i]}` and put its values back; "
                f"the contract lets it only read it (another thread, or the caller, may read "
                f"it meanwhile): work on a copy")
    return problems


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(a.numel() and b.numel()) and \
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def written(x) -> list[torch.Tensor]:
    """What a call may write in x: a tensor's values, a module's gradients."""
    if isinstance(x, torch.nn.Module):
        return [p.grad for p in x.parameters() if p.grad is not None]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in written(item)]
    return tensors(x)


def grads_problems(args, writes, names, overlap) -> list[str]:
    """Gradients a call wrote are each a tensor of their own: two parameters' .grad never
    share memory (one would hold the other's mean), nor does a .grad with a parameter."""
    rank = dist.get_rank()
    for i in writes:
        if i >= len(args) or not isinstance(args[i], torch.nn.Module):
            continue
        named = [(n, p) for n, p in args[i].named_parameters() if p.grad is not None]
        for k, (name, p) in enumerate(named):
            for other, q in named[k + 1:]:
                if overlap(p.grad, q.grad):
                    return [f"rank {rank} left the .grad of `{name}` and of `{other}` in the "
                            f"same memory: each parameter's gradient is a tensor of its own "
                            f"(one of them now holds the other's)"]
            if any(overlap(p.grad, q.data) for _, q in named):
                return [f"rank {rank} put the .grad of `{name}` in a parameter's memory"]
    return []


def switches() -> dict:
    """torch's process-wide settings a call could leave changed for the caller's training,
    and Python's and numpy's random generators."""
    hooks = torch.nn.modules.module
    return {"random (Python's generator)": random.getstate(),
            "numpy.random": numpy.random.get_state()[1].tobytes(),
            "torch.autocast": (torch.is_autocast_enabled("cpu"),
                               torch.get_autocast_dtype("cpu")),
            "a global module hook (torch.nn.modules.module.register_module_*)": [len(d) for d in (
                hooks._global_forward_hooks, hooks._global_forward_pre_hooks,
                hooks._global_backward_hooks, hooks._global_backward_pre_hooks)],
            "torch.use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "torch.set_default_dtype": torch.get_default_dtype(),
            "torch.set_grad_enabled": torch.is_grad_enabled(),
            "torch.set_num_threads": torch.get_num_threads(),
            "torch.set_float32_matmul_precision": torch.get_float32_matmul_precision(),
            "torch.autograd.set_detect_anomaly": torch.is_anomaly_enabled()}


def state(args) -> tuple:
    """What a call must leave as it found it: the global random generator, torch's global
    switches, and, of every module and parameter among the arguments, the hooks, the
    training mode and which parameters require gradients."""
    hooks, flags = [], []
    for module in (a for a in args if isinstance(a, torch.nn.Module)):
        for m in module.modules():
            hooks += [len(getattr(m, kind, None) or {}) for kind in (
                "_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                "_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks")]
            flags.append(m.training)
        for p in module.parameters():
            hooks += [len(p._backward_hooks or {}),
                      len(getattr(p, "_post_accumulate_grad_hooks", None) or {})]
            flags.append(p.requires_grad)
    return torch.get_rng_state(), hooks, flags, switches()


def state_problems(before, after, reference_drew, rank) -> list[str]:
    """`before`, `after`: state() around the body; reference_drew: the reference's own call
    changed the random generator (then the body may too)."""
    problems = []
    if not reference_drew and not torch.equal(before[0], after[0]):
        problems.append(f"rank {rank} changed the global random generator (a seed set, or "
                        f"numbers drawn from it): the caller's training draws from it next; "
                        f"this method needs no random numbers")
    if before[1] != after[1]:
        problems.append(f"rank {rank} left a hook on a module or parameter it was given: the "
                        f"call must leave the model as it found it, except its .grad")
    if before[2] != after[2]:
        problems.append(f"rank {rank} changed a module's training mode or a parameter's "
                        f"requires_grad: the call must leave the model as it found it, "
                        f"except its .grad")
    changed = [name for name, value in before[3].items() if after[3][name] != value]
    if changed:
        problems.append(f"rank {rank} left torch's global settings changed ({', '.join(changed)}):"
                        f" the caller's training runs with them next; set them back before "
                        f"returning, or do without")
    return problems


def _modules(x) -> list[torch.nn.Module]:
    if isinstance(x, torch.nn.Module):
        return [x]
    if isinstance(x, (list, tuple)):
        return [m for item in x for m in _modules(item)]
    return []


def _parameters(x) -> list[torch.nn.Parameter]:
    return [p for m in _modules(x) for p in m.parameters()]
