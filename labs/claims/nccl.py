"""NCCL claims the lessons make: labelled "NCCL, not run here" and sourced (no GPUs here).

Each entry is one sentence a lesson states about NCCL, with the public source that says
it. `check(id)` prints the sentence and its source; the table lists them as `sourced`.
"""
from labs.claims.registry import nccl_claim

nccl_claim(
    "nccl_self_op_needs_its_partner_in_the_group", "08",
    "on NCCL a send to self without the matching receive from self in the same group (or "
    "the reverse) is ncclInvalidUsage: the batch raises, it does not hang; a matched self "
    "send/recv pair in one batch is allowed",
    "NVIDIA/nccl src/enqueue.cc, p2p task scheduling: 'Trying to send to self without a "
    "matching recv' / 'Trying to recv to self without a matching send' return "
    "ncclInvalidUsage; ProcessGroupNCCL checks ncclGroupEnd's result (C10D_NCCL_CHECK)")

nccl_claim(
    "nccl_p2p_connections_made_on_first_call", "09",
    "on NCCL the first point-to-point call between two ranks sets up their connection (a "
    "plain send/recv, a 2-rank communicator of their own): that first call pays the set-up, "
    "and it completes only when both ranks reach it; batched ops use the group's communicator",
    "NVIDIA/nccl#415 ('Send/Recv connections are established on demand'), NVIDIA/nccl#783; "
    "torch 2.13 send_object_list docstring (use_batch 'avoids initializing 2-rank "
    "communicators')")

nccl_claim(
    "nccl_debug_subsys_coll_logs_every_call", "11",
    "NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=COLL logs every collective and point-to-point "
    "call as it is enqueued, with its count, datatype and peer (root)",
    "NCCL user guide, Environment Variables: NCCL_DEBUG_SUBSYS (COLL); NCCL "
    "src/enqueue.cc INFO(NCCL_COLL, ...) per call")

nccl_claim(
    "nccl_synchronous_collective_is_stream_ordered", "08",
    "on NCCL a collective without async_op returns once it is queued on the current CUDA "
    "stream: later work on that stream sees the result, the CPU may run ahead of it",
    "PyTorch documentation, torch.distributed, 'Synchronous and asynchronous collective "
    "operations'")
