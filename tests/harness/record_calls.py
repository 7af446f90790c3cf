"""Every way torch 2.13 offers to communicate, one call each, for tests/harness/test_record.py.

CALLS maps "where.name" to (what the record must call it, a call on 2 ranks). NOT_CALLS names
the public callables that do not communicate (set-up, queries, autograd plumbing). The test
enumerates the public callables of each namespace and fails if one is in neither table: a
new torch with a new way to communicate must be added here before the graders trust it.
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc
import torch.distributed.nn.functional as dnn


def _pg():
    return dist.distributed_c10d._get_default_group()


def _peer():
    return 1 - dist.get_rank()


def _t(n=4):
    return torch.ones(n)


def _p2p_send_first(send, recv):
    """Rank 0 sends, rank 1 receives (the same for every p2p form)."""
    return send() if dist.get_rank() == 0 else recv()


def _wait(work):
    if isinstance(work, list):
        for w in work:
            w.wait()
    elif work is not None and hasattr(work, "wait"):
        work.wait()


CALLS = {
    "dist.send": ("send", lambda: _p2p_send_first(lambda: dist.send(_t(), 1),
                                                   lambda: dist.recv(_t(), 0))),
    "dist.recv": ("recv", lambda: _p2p_send_first(lambda: dist.send(_t(), 1),
                                                   lambda: dist.recv(_t(), 0))),
    "dist.isend": ("send", lambda: _p2p_send_first(lambda: dist.isend(_t(), 1).wait(),
                                                    lambda: dist.irecv(_t(), 0).wait())),
    "dist.irecv": ("recv", lambda: _p2p_send_first(lambda: dist.isend(_t(), 1).wait(),
                                                    lambda: dist.irecv(_t(), 0).wait())),
    "dist.batch_isend_irecv": ("send", lambda: _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, _t(), _peer()), dist.P2POp(dist.irecv, _t(), _peer())]))),
    "dist.send_object_list": ("send", lambda: _p2p_send_first(
        lambda: dist.send_object_list([1, "a"], 1), lambda: dist.recv_object_list([None] * 2, 0))),
    "dist.recv_object_list": ("recv", lambda: _p2p_send_first(
        lambda: dist.send_object_list([1, "a"], 1), lambda: dist.recv_object_list([None] * 2, 0))),
    "dist.broadcast": ("broadcast", lambda: dist.broadcast(_t(), 0)),
    "dist.broadcast_object_list": ("broadcast", lambda: dist.broadcast_object_list([1], 0)),
    "dist.all_reduce": ("all_reduce", lambda: dist.all_reduce(_t())),
    "dist.all_reduce_coalesced": ("all_reduce_coalesced",
                                  lambda: dist.all_reduce_coalesced([_t(), _t(2)])),
    "dist.reduce": ("reduce", lambda: dist.reduce(_t(), 0)),
    "dist.all_gather": ("all_gather", lambda: dist.all_gather([_t(), _t()], _t())),
    "dist.all_gather_into_tensor": ("all_gather_into_tensor",
                                    lambda: dist.all_gather_into_tensor(_t(8), _t())),
    "dist.all_gather_single": ("all_gather_into_tensor",
                               lambda: dist.all_gather_single(_t(8), _t())),
    "dist.all_gather_coalesced": ("all_gather_coalesced", lambda: dist.all_gather_coalesced(
        [[_t()], [_t()]], [_t()])),
    "dist.all_gather_object": ("all_gather", lambda: dist.all_gather_object([None, None], 1)),
    "dist.gather": ("gather", lambda: dist.gather(
        _t(), [_t(), _t()] if dist.get_rank() == 0 else None, 0)),
    "dist.gather_object": ("gather", lambda: dist.gather_object(
        1, [None, None] if dist.get_rank() == 0 else None, 0)),
    "dist.scatter": ("scatter", lambda: dist.scatter(
        _t(), [_t(), _t()] if dist.get_rank() == 0 else None, 0)),
    "dist.scatter_object_list": ("scatter", lambda: dist.scatter_object_list(
        [None], [1, 2] if dist.get_rank() == 0 else None, 0)),
    "dist.reduce_scatter": ("reduce_scatter", lambda: dist.reduce_scatter(_t(), [_t(), _t()])),
    "dist.reduce_scatter_tensor": ("reduce_scatter_tensor",
                                   lambda: dist.reduce_scatter_tensor(_t(2), _t())),
    "dist.reduce_scatter_single": ("reduce_scatter_tensor",
                                   lambda: dist.reduce_scatter_single(_t(2), _t())),
    "dist.all_to_all": ("all_to_all", lambda: dist.all_to_all([_t(), _t()], [_t(), _t()])),
    "dist.all_to_all_single": ("all_to_all_single", lambda: dist.all_to_all_single(_t(), _t())),
    "dist.barrier": ("barrier", lambda: dist.barrier()),
    "dist.monitored_barrier": ("monitored_barrier", lambda: dist.monitored_barrier()),
    "dist._all_gather_base": ("all_gather_into_tensor",
                              lambda: dist.distributed_c10d._all_gather_base(_t(8), _t())),
    "dist._reduce_scatter_base": ("reduce_scatter_tensor",
                                  lambda: dist.distributed_c10d._reduce_scatter_base(_t(2), _t())),
    # torch.distributed.nn.functional: autograd-aware collectives
    "dnn.broadcast": ("broadcast", lambda: dnn.broadcast(_t(), 0)),
    "dnn.gather": ("gather", lambda: dnn.gather(_t(), 0)),
    "dnn.scatter": ("scatter", lambda: dnn.scatter([_t(), _t()], 0)),
    "dnn.reduce": ("reduce", lambda: dnn.reduce(_t(), 0)),
    "dnn.reduce_scatter": ("reduce_scatter", lambda: dnn.reduce_scatter(_t(), [_t(), _t()])),
    "dnn.all_gather": ("all_gather", lambda: dnn.all_gather(_t())),
    "dnn.all_to_all": ("all_to_all", lambda: dnn.all_to_all([_t(), _t()], [_t(), _t()])),
    "dnn.all_to_all_single": ("all_to_all_single", lambda: dnn.all_to_all_single(_t(), _t())),
    "dnn.all_reduce": ("all_reduce", lambda: dnn.all_reduce(_t())),
    # functional collectives (what torch.compile traces)
    "fc.all_reduce": ("all_reduce", lambda: fc.all_reduce(_t(), "sum", _pg()) + 0),
    "fc.all_reduce_inplace": ("all_reduce", lambda: fc.all_reduce_inplace(_t(), "sum", _pg())),
    "fc.all_reduce_coalesced": ("all_reduce_coalesced",
                                lambda: fc.all_reduce_coalesced([_t()], "sum", _pg())),
    "fc.all_gather_tensor": ("all_gather_into_tensor",
                             lambda: fc.all_gather_tensor(_t(), 0, _pg()) + 0),
    "fc.all_gather_single": ("all_gather_into_tensor",
                             lambda: fc.all_gather_single(_t(), 0, _pg()) + 0),
    "fc.all_gather_tensor_autograd": ("all_gather_into_tensor",
                                      lambda: fc.all_gather_tensor_autograd(_t(), 0, _pg()) + 0),
    "fc.all_gather_single_autograd": ("all_gather_into_tensor",
                                      lambda: fc.all_gather_single_autograd(_t(), 0, _pg()) + 0),
    "fc.all_gather_tensor_inplace": ("all_gather_into_tensor",
                                     lambda: fc.all_gather_tensor_inplace(_t(8), _t(), _pg())),
    "fc.all_gather_inplace": ("all_gather_into_tensor",
                              lambda: fc.all_gather_inplace([_t(), _t()], _t(), _pg())),
    "fc.all_gather_into_tensor_coalesced": ("all_gather_into_tensor_coalesced", lambda:
                                            fc.all_gather_into_tensor_coalesced([_t()], _pg())),
    "fc.all_gather_single_coalesced": ("all_gather_into_tensor_coalesced",
                                       lambda: fc.all_gather_single_coalesced([_t()], _pg())),
    "fc.reduce_scatter_tensor": ("reduce_scatter_tensor",
                                 lambda: fc.reduce_scatter_tensor(_t(), "sum", 0, _pg()) + 0),
    "fc.reduce_scatter_single": ("reduce_scatter_tensor",
                                 lambda: fc.reduce_scatter_single(_t(), "sum", 0, _pg()) + 0),
    "fc.reduce_scatter_tensor_autograd": ("reduce_scatter_tensor", lambda:
                                          fc.reduce_scatter_tensor_autograd(_t(), "sum", 0,
                                                                            _pg()) + 0),
    "fc.reduce_scatter_single_autograd": ("reduce_scatter_tensor", lambda:
                                          fc.reduce_scatter_single_autograd(_t(), "sum", 0,
                                                                            _pg()) + 0),
    "fc.reduce_scatter_tensor_inplace": ("reduce_scatter_tensor", lambda:
                                         fc.reduce_scatter_tensor_inplace(_t(2), _t(), "sum",
                                                                          _pg())),
    "fc.reduce_scatter_tensor_coalesced": ("reduce_scatter_tensor_coalesced", lambda:
                                           fc.reduce_scatter_tensor_coalesced([_t()], "sum", [0],
                                                                              _pg())),
    "fc.reduce_scatter_single_coalesced": ("reduce_scatter_tensor_coalesced", lambda:
                                           fc.reduce_scatter_single_coalesced([_t()], "sum", [0],
                                                                              _pg())),
    "fc.all_to_all_single": ("all_to_all_single",
                             lambda: fc.all_to_all_single(_t(), None, None, _pg()) + 0),
    "fc.all_to_all_single_autograd": ("all_to_all_single", lambda:
                                      fc.all_to_all_single_autograd(_t(), None, None, _pg()) + 0),
    "fc.all_to_all_inplace": ("all_to_all_single",
                              lambda: fc.all_to_all_inplace(_t(), _t(), None, None, _pg())),
    "fc.broadcast": ("broadcast", lambda: fc.broadcast(_t(), 0, _pg()) + 0),
    "fc.permute_tensor": ("all_to_all_single", lambda: fc.permute_tensor(_t(), [1, 0], _pg()) + 0),
    "fc.isend_inplace": ("send", lambda: _p2p_send_first(
        lambda: fc.isend_inplace(_t(), 1, 0, _pg()), lambda: fc.irecv_inplace(_t(), 0, 0, _pg()))),
    "fc.irecv_inplace": ("recv", lambda: _p2p_send_first(
        lambda: fc.isend_inplace(_t(), 1, 0, _pg()), lambda: fc.irecv_inplace(_t(), 0, 0, _pg()))),
    "fc.batch_p2p_ops_inplace": ("send", lambda: fc.batch_p2p_ops_inplace(
        ["isend", "irecv"], [_peer(), _peer()], [0, 0], [_t(), _t()], _pg())),
    # the process group's own methods
    "pg.allreduce": ("all_reduce", lambda: _pg().allreduce([_t()]).wait()),
    "pg.allreduce_coalesced": ("all_reduce_coalesced",
                               lambda: _pg().allreduce_coalesced([_t()]).wait()),
    "pg.allgather": ("all_gather", lambda: _pg().allgather([[_t(), _t()]], [_t()]).wait()),
    "pg._allgather_base": ("all_gather_into_tensor",
                           lambda: _pg()._allgather_base(_t(8), _t()).wait()),
    "pg.all_gather_single": ("all_gather_into_tensor",
                             lambda: _pg().all_gather_single(_t(8), _t()).wait()),
    "pg.allgather_coalesced": ("all_gather_coalesced",
                               lambda: _pg().allgather_coalesced([[_t()], [_t()]],
                                                                        [_t()]).wait()),
    "pg.allgather_into_tensor_coalesced": ("all_gather_into_tensor (coalesced)", lambda:
                                           _pg().allgather_into_tensor_coalesced([_t(8)],
                                                                                 [_t()]).wait()),
    "pg.all_gather_single_coalesced": ("all_gather_into_tensor (coalesced)", lambda:
                                       _pg().all_gather_single_coalesced([_t(8)], [_t()]).wait()),
    "pg.broadcast": ("broadcast", lambda: _pg().broadcast([_t()]).wait()),
    "pg.reduce": ("reduce", lambda: _pg().reduce([_t()]).wait()),
    "pg.gather": ("gather", lambda: _pg().gather(
        [[_t(), _t()]] if dist.get_rank() == 0 else [], [_t()]).wait()),
    "pg.scatter": ("scatter", lambda: _pg().scatter(
        [_t()], [[_t(), _t()]] if dist.get_rank() == 0 else []).wait()),
    "pg.reduce_scatter": ("reduce_scatter", lambda: _pg().reduce_scatter([_t()],
                                                                         [[_t(), _t()]]).wait()),
    "pg._reduce_scatter_base": ("reduce_scatter_tensor",
                                lambda: _pg()._reduce_scatter_base(_t(2), _t()).wait()),
    "pg.reduce_scatter_single": ("reduce_scatter_tensor",
                                 lambda: _pg().reduce_scatter_single(_t(2), _t()).wait()),
    "pg.reduce_scatter_tensor_coalesced": ("reduce_scatter_tensor (coalesced)", lambda:
                                           _pg().reduce_scatter_tensor_coalesced(
                                               [_t(2)], [_t()]).wait()),
    "pg.reduce_scatter_single_coalesced": ("reduce_scatter_tensor (coalesced)", lambda:
                                           _pg().reduce_scatter_single_coalesced(
                                               [_t(2)], [_t()]).wait()),
    "pg.alltoall": ("all_to_all", lambda: _pg().alltoall([_t(), _t()], [_t(), _t()]).wait()),
    "pg.alltoall_base": ("all_to_all_single",
                         lambda: _pg().alltoall_base(_t(), _t(), [], []).wait()),
    "pg.all_to_all_single": ("all_to_all_single",
                             lambda: _pg().all_to_all_single(_t(), _t(), [], []).wait()),
    "pg.barrier": ("barrier", lambda: _pg().barrier().wait()),
    "pg.monitored_barrier": ("monitored_barrier", lambda: _pg().monitored_barrier()),
    "pg.send": ("send", lambda: _p2p_send_first(lambda: _pg().send([_t()], 1, 0).wait(),
                                                 lambda: _pg().recv([_t()], 0, 0).wait())),
    "pg.recv": ("recv", lambda: _p2p_send_first(lambda: _pg().send([_t()], 1, 0).wait(),
                                                 lambda: _pg().recv([_t()], 0, 0).wait())),
    "pg.recv_anysource": ("recv", lambda: _p2p_send_first(
        lambda: _pg().send([_t()], 1, 0).wait(), lambda: _pg().recv_anysource([_t()], 0).wait())),
}


def record_worker(rank, world_size, names):
    """Each call of CALLS in `names`, recorded: {name: [(kind, name) of each op] or error}."""
    from labs.harness.grading.record import record

    found = {}
    for name in names:
        try:
            with record() as ops:
                CALLS[name][1]()
            found[name] = [(op.kind, op.name, op.waited or not op.returned_work) for op in ops]
        except Exception as exc:  # noqa: BLE001 - the test reports it
            found[name] = f"{type(exc).__name__}: {exc}"
    return found
