"""The doctor's names for what holds a process group after destroy_process_group()
(labs/doctor/holders.py), each with the fix that frees it: the script's variables first,
then objects found from the garbage collector's referrers, whatever the object. No process
group is needed: any object stands for one."""
import sys

import pytest

from labs.doctor.holders import DEFAULTS_FIX, decode, encode, holders
from tests.doctor.test_doctor import at, doctor, finding


class Group:
    """Stands for a ProcessGroup."""


class Op:
    """Keeps its group as an attribute, as a P2POp keeps `.group`."""

    def __init__(self, group):
        self.group = group


Op.__name__ = Op.__qualname__ = "P2POp"


def test_a_local_list_of_ops_is_named_with_its_variable_and_the_del_that_frees_it():
    group = Group()
    ops = [Op(group) for _ in range(3)]
    found = holders({id(group)}, sys._getframe())
    assert len(found) == 1, found
    assert "`ops` (in test_a_local_list" in found[0].what
    assert "3 P2POp objects (their .group)" in found[0].what
    assert "`group` (" in found[0].what and "the group itself" in found[0].what
    assert found[0].fix.startswith(("`del group, ops` in test_a_local_list",
                                    "`del ops, group` in test_a_local_list")), found[0].fix
    del ops
    assert "`ops`" not in holders({id(group)}, sys._getframe())[0].what


def test_objects_no_variable_leads_to_are_counted_by_type_and_attribute():
    ids, keep = set(), []
    group = Group()
    ids.add(id(group))
    keep.append({"deep": {"deeper": [Op(group) for _ in range(2)]}})   # beyond the search
    del group
    found = holders(ids, None)
    assert [h.what for h in found if "P2POp" in h.what] == [
        "P2POp objects (2, their .group) that no variable of the script's running frames "
        "holds"], found
    assert decode(encode(found)) == found


def test_default_arguments_are_named_by_module():
    group = Group()
    namespace = {"group": group, "__name__": "torch.distributed.nn.functional"}
    exec("def broadcast(t, g=group): pass\ndef reduce(t, g=group): pass", namespace)
    ids = {id(group)}
    del group, namespace["group"]
    found = [h for h in holders(ids) if "default" in h.what]
    assert [h.what for h in found] == [
        "default arguments of 2 functions of torch.distributed.nn.functional"], found
    assert found[0].fix == DEFAULTS_FIX


# Real torchrun jobs: the note names the holder and its fix; after that fix, no note.
HOLDS = [("holds_group_locals.py", 2, ["`group` (in main()", "`ops` (in main()"],
          "in main() before destroy_process_group()"),
         ("holds_group_module.py", 3, ["`ops` (module-level", "`send_op` (module-level"],
          "at module level before destroy_process_group()")]


@pytest.mark.slow
@pytest.mark.parametrize("script, nproc, names, fix", [
    pytest.param(*HOLDS[0], marks=pytest.mark.rule("group_outlives_destroy", "hazard")),
    HOLDS[1]])
def test_the_note_names_the_variables_and_the_del_that_frees_the_group(script, nproc, names,
                                                                        fix):
    report = doctor(script, nproc)
    f = finding(report, "group_outlives_destroy", set(range(nproc)),
                at(script, "dist.destroy_process_group()"))
    assert f.note and report.status == 0, report.text()
    assert all(name in f.gloo for name in names) and "`del " in f.gloo and fix in f.gloo, f.gloo
    assert "something" not in f.gloo


@pytest.mark.slow
@pytest.mark.parametrize("script, nproc, names, fix", [
    pytest.param(*HOLDS[0], marks=pytest.mark.rule("group_outlives_destroy", "fixed")),
    HOLDS[1]])
def test_after_the_suggested_del_the_note_is_gone(script, nproc, names, fix):
    report = doctor(script, nproc, "--del")
    assert report.findings == [] and report.status == 0, report.text()
