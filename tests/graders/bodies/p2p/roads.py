"""Wrong bodies that run the method on dummy data, so that their communication is exactly the
reference's, and take the answer by another road: the rendezvous store, a file, shared
memory, a socket, a collective in a thread of its own. What travels must be what the answer
is made of.

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/roads.py.)
"""
import socket

import torch

from tests.graders.bodies.copies import p2p


def pass_token_dummy_then_socket(token):
    """The ring on a dummy token; the real one asked of a socket (it is refused before it
    connects: the body never gets further than making one)."""
    p2p.pass_token(torch.zeros_like(token))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM):
        pass
    return token.clone()
