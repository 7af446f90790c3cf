"""`make mutants`: wrong bodies nobody wrote by hand, generated from each reference solution,
graded by the exercise's own grader. A grader is proven by the mutants it kills.

Each mutant is a copy of solutions/<module>.py with ONE change in the exercise's function
(or a helper of its module): a peer or an index off by one (+ <-> -, a constant + 1), a
comparison flipped, a branch skipped or always taken, a wait() dropped, a message widened
to float64, a receive buffer kept and reused between calls, a collective added, and the
exercise's built-in (`dist.all_reduce`, `dist.all_gather`, ...) taken always, beyond 4 ranks,
or for large inputs. One kind is expected to SURVIVE, as a correct body in another style:
an extra barrier() before the body, which moves no data, where every rank runs that body
(in a pair's exchange, a pipeline stage's send or the doubling the extra ranks skip, the
barrier waits for ranks that never come: that kill is right, and the report says why it
happened). A survivor of any other kind is
a hole in the grader, or an equivalent mutant (the same behaviour): the report lists each
one with its change.

    python -m tests.mutation                     # every exercise (a long run: minutes)
    python -m tests.mutation ring.ring_all_reduce --limit 20
"""
from __future__ import annotations

import argparse
import ast
import importlib
import itertools
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from labs.harness.grading import GradeFailure
from labs.harness.grading.methods import METHODS

ROOT = Path(__file__).resolve().parents[1]
# Exercises whose grader test is not named test_<exercise>: (grader module, test, its args).
_PIPELINE = ("test_patterns", "test_pipeline_1f1b_matches_unsplit_model", [2, 4])
SPECIAL = {"patterns.send_forward_recv_backward": _PIPELINE,
           "patterns.send_backward_recv_forward": _PIPELINE}
EXPECTED_TO_SURVIVE = ("extra barrier",)

# The built-in that does an exercise's job, as a body with the exercise's parameters: the
# mutants "built-in instead" (always), "built-in beyond 4 ranks" and "built-in for large
# tensors" call it in place of the method. Exercises without a one-call built-in are absent.
_ALL_REDUCE = "dist.all_reduce(tensor)\nreturn tensor"
_GATHERED = ("_ws, _r = dist.get_world_size(), dist.get_rank()\n"
             "_all = [torch.empty_like(tensor) for _ in range(_ws)]\n"
             "dist.all_gather(_all, tensor)\n")
_GRAD_MEAN = ("for _p in model.parameters():\n"
              "    if _p.grad is not None:\n"
              "        dist.all_reduce(_p.grad)\n"
              "        _p.grad /= dist.get_world_size()\n")
BUILTINS = {
    "ring.ring_all_reduce": _ALL_REDUCE,
    "ring.pipelined_ring_all_reduce": _ALL_REDUCE,
    "ring.ring_reduce_scatter": "dist.all_reduce(tensor)\n_b = chunk_bounds(tensor.numel(), "
                                "dist.get_world_size())[dist.get_rank()]\n"
                                "return tensor.view(-1)[_b[0]:_b[1]]",
    "algorithms.recursive_doubling_all_reduce": _ALL_REDUCE,
    "algorithms.halving_doubling_all_reduce": _ALL_REDUCE,
    "algorithms.tree_broadcast": "dist.broadcast(tensor, src)\nreturn tensor",
    "collectives.p2p_broadcast": "dist.broadcast(tensor, src)\nreturn tensor",
    "collectives.p2p_all_gather": _GATHERED + "return _all",
    "collectives.p2p_gather": "_out = [torch.empty_like(tensor) for _ in range(dist.get_world_size("
                              "))] if dist.get_rank() == dst else None\n"
                              "dist.gather(tensor, _out, dst)\nreturn _out",
    "collectives.p2p_all_to_all": "dist.all_to_all(outputs, inputs)\nreturn outputs",
    "batching.exchange_with_neighbours": _GATHERED + "return (_all[(_r - 1) % _ws].clone(), "
                                                     "_all[(_r + 1) % _ws].clone())",
    "batching.ring_shift": _GATHERED + "return _all[(_r - k) % _ws].clone()",
    "waiting.safe_ring_shift": _GATHERED + "return _all[(_r - 1) % _ws].clone()",
    "gradients.average_gradients_all_to_all": _GRAD_MEAN + "return None",
    "gradients.average_gradients_ring": _GRAD_MEAN + "return None",
    "gradients.average_gradients_bucketed": _GRAD_MEAN + "return None",
    "snippets.fixed_average_gradients": _GRAD_MEAN + "return None",
}
# When each built-in mutant takes the built-in's road (the method otherwise).
BUILTIN_WHEN = {"built-in instead": "True",
                "built-in beyond 4 ranks": "dist.get_world_size() > 4",
                "built-in for large tensors": "_numel_of(_first) >= 1 << 16"}


@dataclass
class Mutant:
    exercise: str
    kind: str
    change: str        # "line 42: (rank + 1) % n -> (rank - 1) % n"
    source: str
    outcome: str = ""  # "killed: <first line of the failure>" or "survived"


class _Mutator(ast.NodeTransformer):
    """Applies the change number `target` among all candidate changes (counting from 0)."""

    def __init__(self, target, functions):
        self.target, self.count, self.functions = target, -1, functions
        self.kind = self.change = None
        self._inside = False

    def _take(self, node, kind, new, before=None):
        self.count += 1
        if self.count != self.target:
            return node
        self.kind = kind
        after = ast.unparse(new) if isinstance(new, ast.AST) else new
        self.change = (f"line {node.lineno}: {(before or ast.unparse(node)).splitlines()[0]} "
                       f"-> {after.splitlines()[0]}")
        return new

    def visit_FunctionDef(self, node):
        if node.name not in self.functions:
            return node
        self._inside = True
        self.generic_visit(node)
        barrier = ast.parse("dist.barrier()").body[0]
        collective = ast.parse("dist.all_reduce(torch.zeros(1))").body[0]
        node.body = self._body(node, barrier, "extra barrier")
        node.body = self._body(node, collective, "extra collective")
        self._inside = False
        return node

    def _body(self, node, statement, kind):
        self.count += 1
        if self.count != self.target:
            return node.body
        self.kind, self.change = kind, f"line {node.lineno}: + {ast.unparse(statement)}"
        doc = node.body[:1] if isinstance(node.body[0], ast.Expr) and isinstance(
            getattr(node.body[0], "value", None), ast.Constant) else []
        return doc + [statement] + node.body[len(doc):]

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not self._inside or not isinstance(node.op, (ast.Add, ast.Sub)):
            return node
        op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        return self._take(node, "peer or index (+/-)", ast.BinOp(node.left, op, node.right))

    def visit_Constant(self, node):
        if not self._inside or type(node.value) is not int or node.value > 4:
            return node
        return self._take(node, "constant + 1", ast.Constant(node.value + 1))

    def visit_Compare(self, node):
        self.generic_visit(node)
        flips = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                 ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
        if not self._inside or len(node.ops) != 1 or type(node.ops[0]) not in flips:
            return node
        return self._take(node, "comparison flipped",
                          ast.Compare(node.left, [flips[type(node.ops[0])]()], node.comparators))

    def visit_If(self, node):
        self.generic_visit(node)
        if not self._inside:
            return node
        before = f"if {ast.unparse(node.test)}"
        node = self._take(node, "branch skipped", ast.If(ast.Constant(False), node.body,
                                                           node.orelse), before)
        return self._take(node, "branch always taken", ast.If(ast.Constant(True), node.body,
                                                              node.orelse), before)

    def visit_Expr(self, node):
        self.generic_visit(node)
        text = ast.unparse(node)
        if self._inside and text.endswith(".wait()"):
            return self._take(node, "wait dropped", ast.Pass(), text)
        return node

    def visit_For(self, node):
        self.generic_visit(node)
        if self._inside and len(node.body) == 1 and ast.unparse(node.body[0]).endswith(".wait()"):
            return self._take(node, "waits dropped", ast.Pass(), ast.unparse(node).split("\n")[0])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if not self._inside:
            return node
        name = ast.unparse(node.func)
        if name == "torch.empty_like" and len(node.args) == 1 and not node.keywords:
            node = self._take(node, "dtype widened", ast.parse(
                f"torch.empty_like({ast.unparse(node.args[0])}, dtype=torch.float64)",
                mode="eval").body)
            if self.count == self.target:
                return node
            return self._take(node, "buffer kept between calls", ast.parse(
                f"_kept({ast.unparse(node.args[0])})", mode="eval").body)
        if name == "dist.P2POp" and len(node.args) >= 3 and ast.unparse(node.args[0]) == "dist.isend":
            wide = ast.Call(ast.Attribute(node.args[1], "double", ast.Load()), [], [])
            return self._take(node, "message widened to float64",
                              ast.Call(node.func, [node.args[0], wide, *node.args[2:]],
                                       node.keywords))
        return node


KEPT = '''
_KEPT = {}


def _kept(like):
    """A receive buffer kept between calls (the mutation 'buffer kept between calls')."""
    key = (tuple(like.shape), like.dtype)
    if key not in _KEPT:
        _KEPT[key] = torch.empty_like(like)
    return _KEPT[key]
'''


def mutants(exercise: str) -> list[Mutant]:
    module, name = exercise.split(".")
    path = ROOT / "solutions" / f"{module}.py"
    tree = ast.parse(path.read_text())
    helpers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
               and n.name.startswith("_") and n.name in _called(tree, name)}
    found = []
    for target in itertools.count():
        mutator = _Mutator(target, {name} | helpers)
        new = mutator.visit(ast.parse(path.read_text()))
        if mutator.kind is None:
            return found
        source = ast.unparse(ast.fix_missing_locations(new)) + "\n" + KEPT
        found.append(Mutant(exercise, mutator.kind, mutator.change, source))


NUMEL_OF = '''

def _numel_of(x):
    """Elements in a tensor, a list of them, or a model's gradients."""
    if isinstance(x, torch.Tensor):
        return x.numel()
    if isinstance(x, (list, tuple)):
        return sum(_numel_of(item) for item in x)
    if isinstance(x, torch.nn.Module):
        return sum(p.numel() for p in x.parameters())
    return 0
'''


def builtin_mutants(exercise: str) -> list[Mutant]:
    """The exercise's function with its built-in taken always, beyond 4 ranks, or for
    large inputs (BUILTINS)."""
    if exercise not in BUILTINS:
        return []
    module, name = exercise.split(".")
    text = (ROOT / "solutions" / f"{module}.py").read_text()
    found = []
    for kind, condition in BUILTIN_WHEN.items():
        tree = ast.parse(text)
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        first = fn.args.args[0].arg
        guard = ast.parse(f"if {condition}:\n    pass").body[0]
        guard.body = ast.parse(BUILTINS[exercise]).body
        has_doc = isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)
        at = 1 if has_doc else 0
        fn.body[at:at] = [ast.parse(f"_first = {first}").body[0], guard]
        source = ast.unparse(ast.fix_missing_locations(tree)) + "\n" + KEPT + NUMEL_OF
        if "import torch\n" not in source:
            source = "import torch\n" + source
        found.append(Mutant(exercise, kind, f"{name}: if {condition}: the built-in", source))
    return found


def _called(tree, name) -> set[str]:
    """Names called from function `name`, and from the helpers those call, transitively."""
    bodies = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    seen, todo = set(), [name]
    while todo:
        fn = bodies.get(todo.pop())
        for node in ast.walk(fn) if fn else []:
            if isinstance(node, ast.Name) and node.id in bodies and node.id not in seen:
                seen.add(node.id)
                todo.append(node.id)
    return seen


def _sample(found: list[Mutant], limit: int) -> list[Mutant]:
    """Up to `limit` mutants, taking the kinds in turn so every kind is represented."""
    by_kind: dict = {}
    for m in found:
        by_kind.setdefault(m.kind, []).append(m)
    order = [m for group in itertools.zip_longest(*by_kind.values()) for m in group if m]
    return order[:limit]


def graders_for(exercise: str) -> list:
    """[(grader test, its arguments)] of every test that grades `exercise`: test_<name>,
    test_<name>_..., or one marked @pytest.mark.grades(<name>)."""
    module, name = exercise.split(".")
    if exercise in SPECIAL:
        test_module, test_name, args = SPECIAL[exercise]
        tests = importlib.import_module(f"tests.graders.{test_module}")
        return [(getattr(tests, test_name), args)]
    tests = importlib.import_module(f"tests.graders.test_{module}")
    found = []
    for test_name, test in vars(tests).items():
        marks = getattr(test, "pytestmark", [])
        graded = [a for m in marks if m.name == "grades" for a in m.args]
        if test_name == f"test_{name}" or test_name.startswith(f"test_{name}_") or \
                name in graded:
            sizes = [m for m in marks if m.name == "parametrize"]
            found.append((test, list(sizes[0].args[1]) if sizes else [2]))
    return found


def run(mutant: Mutant, folder: Path, number: int) -> str:
    module_name = f"p2p_mutant_{number}"
    (folder / f"{module_name}.py").write_text(mutant.source)
    name = mutant.exercise.split(".")[1]
    for test, args in graders_for(mutant.exercise):
        for arg in args:
            try:
                test(f"{module_name}:{name}", arg)
            except GradeFailure as exc:
                return f"killed ({test.__name__}, {arg}): {str(exc).splitlines()[0][:160]}"
            except Exception as exc:  # noqa: BLE001 - a crash of the grader is a kill too
                return (f"killed ({test.__name__}, {arg}): {type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:120]}")
    return "survived"


def _say_outcomes(exercise: str, chosen: list[Mutant], seconds: float) -> None:
    """One line per exercise (how many mutants killed), then each that surprised."""
    killed = sum(m.outcome.startswith("killed") for m in chosen)
    print(f"{exercise:45s} killed {killed:2d} of {len(chosen):2d} ({seconds:.0f} s)", flush=True)
    for m in chosen:
        if m.outcome == "survived":
            expected = " (expected: moves no data)" if m.kind in EXPECTED_TO_SURVIVE else ""
            print(f"    survived: {m.kind}: {m.change}{expected}", flush=True)
        elif m.kind in EXPECTED_TO_SURVIVE:
            # right only where every rank calls the code it sits in: a barrier in a pair's
            # exchange, or in the doubling the extra ranks skip, hangs (the kill is right)
            print(f"    killed though expected to survive: {m.kind}: {m.change}: "
                  f"{m.outcome[:150]}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("exercises", nargs="*", help="module.name (default: all)")
    parser.add_argument("--limit", type=int, default=10, help="mutants per exercise")
    parser.add_argument("--report", default="test-artifacts/mutants.json")
    parser.add_argument("--part", default="1/1", help="i/n: every n-th exercise from the i-th "
                        "(run n processes side by side)")
    options = parser.parse_args(argv)
    part, parts = map(int, options.part.split("/"))
    exercises = (options.exercises or sorted(METHODS))[part - 1::parts]
    folder = Path(tempfile.mkdtemp(prefix="p2p-mutants-"))
    sys.path.insert(0, str(folder))       # the workers import the mutants by name
    results, number = [], 0
    for exercise in exercises:
        started = time.perf_counter()
        chosen = _sample(mutants(exercise), options.limit) + builtin_mutants(exercise)
        for mutant in chosen:
            number += 1
            mutant.outcome = run(mutant, folder, number)
            results.append(mutant)
        _say_outcomes(exercise, chosen, time.perf_counter() - started)
    report = Path(options.report)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps([{k: v for k, v in asdict(m).items() if k != "source"}
                                  for m in results], indent=1))
    holes = [m for m in results if m.outcome == "survived" and m.kind not in EXPECTED_TO_SURVIVE]
    print(f"\n{len(results) - len(holes) - sum(m.kind in EXPECTED_TO_SURVIVE for m in results)}"
          f" killed, {len(holes)} survived (not counting the expected survivors); "
          f"report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
