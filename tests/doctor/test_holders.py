"""The doctor's names for what holds a process group after destroy_process_group()
(labs/doctor/holders.py): found from the garbage collector's referrers, whatever the object.
No process group is needed: any object stands for one."""
from labs.doctor.holders import advice, holders


class Group:
    """Stands for a ProcessGroup."""


class Op:
    """Keeps its group as an attribute, as a P2POp keeps `.group`."""

    def __init__(self, group):
        self.group = group


Op.__name__ = Op.__qualname__ = "P2POp"


def test_objects_that_keep_the_group_are_counted_by_type_and_attribute():
    group = Group()
    ops = [Op(group) for _ in range(3)]
    found = holders({id(group)})
    assert found == ["P2POp objects (3, their .group)"], found
    assert "drop the P2POp objects" in advice(found)
    del ops
    assert holders({id(group)}) == []


def test_default_arguments_are_named_by_module():
    group = Group()
    namespace = {"group": group, "__name__": "torch.distributed.nn.functional"}
    exec("def broadcast(t, g=group): pass\ndef reduce(t, g=group): pass", namespace)
    found = holders({id(group)})
    assert found == ["default arguments of 2 functions of torch.distributed.nn.functional"], found
    assert "import torch.distributed.nn before init_process_group" in advice(found)


def test_nothing_known_holds_it():
    group = Group()
    kept = [group]          # a plain list: not one of the kinds named
    assert holders({id(group)}) == [] and kept
    assert advice([]) == "drop what still holds it before destroy_process_group()"
