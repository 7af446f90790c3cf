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

# Both rules below hold without device_id: with it, init_process_group forms the group's
# communicator at once and plain sends and receives use it (no pair communicator is made).
LAZY_SOURCE = ("torch ProcessGroupNCCL.cpp, pointToPoint: an ungrouped op's communicator is keyed "
               "getKeySendRecv(rank, peer), 'lowRank:highRank', and initNCCLComm creates it at "
               "the pair's first op, with both ranks; with eagerInit (device_id) pointToPoint "
               "reuses the group's communicator (pytorch/pytorch#129140, #132900); torch 2.13 "
               "init_process_group docstring, device_id: 'the communicator is immediately formed "
               "(calling ncclCommInit* immediately rather than the normal lazy call)'")

nccl_claim(
    "nccl_p2p_connections_made_on_first_call", "09",
    "on NCCL without device_id in init_process_group, the first plain send/recv between two "
    "ranks creates a 2-rank communicator of their own (batched ops use the group's): that "
    "first call pays the set-up, and it completes only when both ranks reach it; with "
    "device_id the group's communicator is formed at init and plain sends and receives use "
    "it, while NCCL still connects a pair on demand, at its first send/receive",
    LAZY_SOURCE + "; torch 2.13 send_object_list docstring (use_batch 'avoids initializing "
    "2-rank communicators'); NVIDIA/nccl#415 ('Send/Recv connections are established on "
    "demand')")

nccl_claim(
    "nccl_ring_of_first_sends_hangs_without_device_id", "04",
    "on NCCL with device_id in init_process_group (one communicator, formed at init) a cycle "
    "of blocking sends can complete for small messages, a send finishing into NCCL's internal "
    "buffer before its receive is posted, and hangs for large ones; without device_id a ring "
    "whose first calls are all sends to the next rank hangs at any size: each rank waits to "
    "create its pair's communicator with a neighbour busy creating its own",
    LAZY_SOURCE + "; NVIDIA/nccl#479, #783 (an NCCL send may block until its receive is "
    "posted), NVIDIA/nccl#1025 ('ncclSend needs to wait for ncclRecv before it can send its "
    "data, especially if the size is larger than the internal buffer size')")

nccl_claim(
    "nccl_first_batch_needs_every_rank_without_device_id", "02",
    "on NCCL without device_id in init_process_group, a batch_isend_irecv that is the first "
    "collective call on its group must include every rank of the group (it creates the "
    "group's communicator); once the communicator exists (device_id, or an earlier "
    "collective on the group) a batch may involve only some of the ranks",
    "torch 2.13 batch_isend_irecv docstring (the note: 'if this API is the first collective "
    "call in the group ..., all ranks of the group must participate'); pytorch/pytorch#74701 "
    "('if it is not the first collective call in the group (i.e. the communicator has been "
    "initialized), then batched P2P communication involving only subset of processes of the "
    "group is allowed'); torch 2.13 init_process_group docstring, device_id: 'the "
    "communicator is immediately formed'")

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
