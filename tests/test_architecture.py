"""Imports run one way: no cycle between the package's modules, and no import from a lower layer into a higher one.

Every import statement counts, also those inside functions (a lazy import is still a dependency). The layers are
those of docs/architecture.md; modules of one layer may import each other (without cycles), except the sibling
layers listed in SIBLINGS, which must stay independent.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

import pytest

LAYERS: dict[str, int] = {
    "scidocs_eval.errors": 0, "scidocs_eval.paths": 0, "scidocs_eval.progress": 0, "scidocs_eval.registry": 0,
    "scidocs_eval.warning_groups": 0,
    "scidocs_eval.extras": 0,
    "scidocs_eval.params": 0, "scidocs_eval.lazy_modules": 0,
    "scidocs_eval.formats": 1,
    "scidocs_eval.data": 2,
    "scidocs_eval.evaluation": 3, "scidocs_eval.statistics": 3,
    "scidocs_eval.evaluators": 4, "scidocs_eval.models": 4,
    "scidocs_eval.run": 5, "scidocs_eval.training": 5,
    "scidocs_eval.tasks": 6, "scidocs_eval.baselines": 6,
    "scidocs_eval.leaderboard": 7,
    "scidocs_eval.cli": 8,
    "scidocs_eval": 9, "scidocs_eval.specter_training": 9,
}
"""Module prefix -> layer (the longest matching prefix wins); `scidocs_eval` itself is the public API on top, with
the one re-export kept for a documented import path that moved (`scidocs_eval.specter_training`)."""
SIBLINGS = [("scidocs_eval.evaluators", "scidocs_eval.models"), ("scidocs_eval.tasks", "scidocs_eval.baselines"),
            ("scidocs_eval.run", "scidocs_eval.training")]
MAX_TOP_LEVEL_MODULES = 12


def package_modules() -> dict[str, Path]:
    """Every module of the installed package (tasks/, baselines/, leaderboard/ included) -> its file."""
    modules: dict[str, Path] = {}
    for package in ("scidocs_eval", "scidocs_eval.tasks", "scidocs_eval.baselines", "scidocs_eval.leaderboard"):
        root = Path(importlib.util.find_spec(package).submodule_search_locations[0])
        for path in root.rglob("*.py"):
            relative = path.relative_to(root).with_suffix("").parts
            if package == "scidocs_eval" and relative[0] in ("tasks", "baselines", "leaderboard"):
                continue
            parts = relative[:-1] if relative[-1] == "__init__" else relative
            modules[".".join((package, *parts))] = path
    return modules


@functools.cache
def _tree(source: str) -> ast.Module:
    return ast.parse(source)


def parsed(path: Path) -> ast.Module:
    """`path`'s syntax tree, parsed once per source text (the checks here walk every module several times); read
    only."""
    return _tree(path.read_text(encoding="utf-8"))


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules that module `name` (file `path`) imports, anywhere in its body."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


def layer_of(module: str) -> tuple[str, int]:
    prefix = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return prefix, LAYERS[prefix]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import into a higher layer or across sibling layers."""
    bad = []
    for module, targets in graph.items():
        own_prefix, own = layer_of(module)
        for target in sorted(targets):
            prefix, layer = layer_of(target)
            if layer > own or {own_prefix, prefix} in [set(pair) for pair in SIBLINGS]:
                bad.append(f"{module} (layer {own}) -> {target} (layer {layer})")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checks_catch_a_cycle_and_an_upward_import() -> None:
    graph = {"scidocs_eval.formats.suite": {"scidocs_eval.data.demo"}, "scidocs_eval.data.demo":
             {"scidocs_eval.formats.suite"}, "scidocs_eval.models.tuning": {"scidocs_eval.evaluators.linear_svm"},
             "scidocs_eval.evaluators.linear_svm": set()}
    assert cycles(graph) == [["scidocs_eval.data.demo", "scidocs_eval.formats.suite"]]
    assert upward_imports(graph) == [
        "scidocs_eval.formats.suite (layer 1) -> scidocs_eval.data.demo (layer 2)",
        "scidocs_eval.models.tuning (layer 4) -> scidocs_eval.evaluators.linear_svm (layer 4)"]


def test_the_graph_sees_lazy_and_relative_imports() -> None:
    graph = import_graph()
    assert "scidocs_eval.formats.suite" in graph["scidocs_eval.evaluation.task"]
    assert "scidocs_eval.cli.main" in graph["scidocs_eval.cli.__main__"]
    assert len(graph) > 40


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_no_import_from_a_lower_layer_into_a_higher_one() -> None:
    assert upward_imports(import_graph()) == []


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in import_graph() if layer_of(m)[0] == "scidocs_eval" and m != "scidocs_eval"]
    assert unplaced == [], "give these modules a subpackage (see docs/architecture.md)"


def test_top_level_stays_small_and_each_subpackage_says_its_job_in_two_lines() -> None:
    root = Path(importlib.util.find_spec("scidocs_eval").submodule_search_locations[0])
    assert len([p for p in root.glob("*.py") if p.name != "__init__.py"]) <= MAX_TOP_LEVEL_MODULES
    for init in root.glob("*/__init__.py"):
        docstring = ast.get_docstring(parsed(init))
        assert docstring and len(docstring.splitlines()) == 2, init


PLUGIN_PACKAGES = ("scidocs_eval.tasks", "scidocs_eval.baselines")


def plugin_importers(graph: dict[str, set[str]], package: str) -> list[str]:
    """"importer -> plugin" for every import of a module of the plugin `package` by another module: by one outside
    the package (the core, the leaderboard, the CLI) or by another plugin of the package."""
    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if target.startswith(f"{package}.") and target != module and module != package)


def test_the_plugin_check_catches_a_plugin_importing_a_plugin_and_the_cli_importing_one() -> None:
    graph = {"scidocs_eval.baselines.sgc": {"scidocs_eval.baselines.sif", "scidocs_eval.models.adapter"},
             "scidocs_eval.cli.core": {"scidocs_eval.baselines.specter2"}, "scidocs_eval.baselines.sif": set()}
    assert plugin_importers(graph, "scidocs_eval.baselines") == [
        "scidocs_eval.baselines.sgc -> scidocs_eval.baselines.sif",
        "scidocs_eval.cli.core -> scidocs_eval.baselines.specter2"]


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_plugins_are_loaded_by_name_never_imported_by_the_core_the_cli_or_another_plugin(package: str) -> None:
    """Each module of tasks/ and baselines/ is one plugin, found by the registry by name: nothing imports it,
    not the CLI (no `if name == "specter2"`), not another plugin (shared code lives in evaluation/ or models/)."""
    assert plugin_importers(import_graph(), package) == []


TASK_BASE = ("scidocs_eval.tasks", "scidocs_eval.evaluation.task")
"""Where a task family may be named: the tasks themselves and the task base."""


def family_branches(name: str, path: Path) -> list[str]:
    """Where a module reads a task's family (`.family`), names a closed list of families (`FAMILIES`) or selects
    tasks by family (`task_names` given a family)."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Attribute) and node.attr == "family":
            found.append(f"{name}:{node.lineno} reads .family")
        elif isinstance(node, ast.Name) and node.id.endswith("FAMILIES") and node.id != "MTEB_FAMILIES":
            found.append(f"{name}:{node.lineno} names {node.id}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "task_names" \
                and (node.args or any(k.arg == "family" for k in node.keywords)):
            found.append(f"{name}:{node.lineno} selects tasks by family")
    return found


LAYOUT_WORDS = (".qrel", "/top_ranked/", "qrels/", "recomm/", "scirepeval_test", "train.csv")
"""Pieces of a task family's file layout: a command that spells one rebuilds a task's paths instead of reading
`Task.input_files`."""
COMMAND_LAYERS = ("scidocs_eval.evaluation", "scidocs_eval.cli", "scidocs_eval.leaderboard", "scidocs_eval.models")
"""Where commands live (and the pipeline `baseline` runs: what a fit is given, `--tune`'s val split): they read a
task's files, papers and rules from its declarations alone."""


def task_only_members() -> set[str]:
    """Members some registered task class has and the task base does not: reading one by name (getattr, hasattr)
    tells a family by its methods."""
    from scidocs_eval.evaluation.task import TASKS, FolderTask, Task

    base = set(dir(Task)) | set(dir(FolderTask)) | set(Task.__annotations__)
    return {member for _, cls in TASKS.items() for member in dir(cls) if member not in base}


def declaration_bypasses(name: str, path: Path, members: set[str]) -> list[str]:
    """Where a module duck-types a task (getattr/hasattr of a member only some tasks have) or spells a piece of a
    task family's file layout."""
    found = []
    tree = parsed(path)
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("getattr", "hasattr") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value in members:
            found.append(f"{name}:{node.lineno} reads task member {node.args[1].value!r} by name")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and any(word in node.value for word in LAYOUT_WORDS) and "\n" not in node.value:
            found.append(f"{name}:{node.lineno} spells a task's file layout ({node.value!r})")
    return found


def test_the_declaration_check_catches_duck_typing_and_layouts(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(task, s):\n    if hasattr(task, 'inventory'):\n        return s.has(f'{task}/val.qrel')\n")
    assert declaration_bypasses("m", module, {"inventory"}) == [
        "m:2 reads task member 'inventory' by name", "m:3 spells a task's file layout ('/val.qrel')"]


def test_commands_read_tasks_through_their_declarations() -> None:
    """`run`, `data verify`, `audit`, `export`: no duck-typing of a task, no path of a task's layout rebuilt
    (a task's files come from `Task.input_files`, its rules from `Task.data_shapes`)."""
    members = task_only_members()
    found = [bypass for name, path in package_modules().items() if name.startswith(COMMAND_LAYERS)
             for bypass in declaration_bypasses(name, path, members)]
    assert found == []


def test_the_family_check_catches_a_branch(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(spec, TASKS):\n    if spec.family == 'ranking':\n        return task_names('ranking')\n"
                      "FAMILIES = ()\n")
    assert family_branches("m", module) == ["m:4 names FAMILIES", "m:2 reads .family", "m:3 selects tasks by family"]


def test_no_module_outside_the_tasks_and_the_task_base_branches_on_a_family() -> None:
    """A command reads what it needs from a task's declarations (files, data shapes, items, papers), so a new family
    gets every check without an edit to the core (docs/architecture.md, "The task contract")."""
    found = [branch for name, path in package_modules().items() if not name.startswith(TASK_BASE)
             for branch in family_branches(name, path)]
    assert found == []


def registered_name_owners() -> dict[str, set[str]]:
    """Every registered task and benchmark name -> the modules that may compare a value with it: the task's own
    module, and the module that registers the benchmark (`Benchmark("name", ...)`)."""
    from scidocs_eval.evaluation.task import BENCHMARKS, TASKS

    owners: dict[str, set[str]] = {name: {cls.__module__} for name, cls in TASKS.items()}
    benchmarks = set(BENCHMARKS.names())
    for module, path in package_modules().items():
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Benchmark" \
                    and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in benchmarks:
                owners.setdefault(node.args[0].value, set()).add(module)
    return owners


def name_constants() -> dict[str, str]:
    """Module-level constants that hold a registered task or benchmark name (`DEFAULT_BENCHMARK = "scidocs"`) ->
    that name: comparing with one is comparing with the name."""
    from scidocs_eval.evaluation.task import BENCHMARKS, TASKS

    names = {*TASKS.names(), *BENCHMARKS.names()}
    return {target.id: node.value.value for path in package_modules().values()
            for node in parsed(path).body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and node.value.value in names
            for target in node.targets if isinstance(target, ast.Name)}


def _literals(node: ast.AST, constants: dict[str, str]) -> list[str]:
    """The names a comparison operand spells: a string constant, a constant holding a name (`constants`), or those
    of a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Name, ast.Attribute)):
        constant = node.id if isinstance(node, ast.Name) else node.attr
        return [constants[constant]] if constant in constants else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for item in node.elts for name in _literals(item, constants)]
    return []


def name_comparisons(name: str, path: Path, owners: dict[str, set[str]],
                     constants: dict[str, str] | None = None) -> list[str]:
    """Where module `name` compares a value (==, !=, in, not in, match) with the name of a registered task or
    benchmark it does not own, spelled or through a constant that holds it (`constants`; the module that defines
    such a constant may compare with it)."""
    tree = parsed(path)
    defined = {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
               if isinstance(target, ast.Name)}
    constants = {key: value for key, value in (constants or {}).items() if key not in defined}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                 for op in node.ops):
            spelled = [literal for operand in (node.left, *node.comparators)
                       for literal in _literals(operand, constants)]
        elif isinstance(node, ast.MatchValue):
            spelled = _literals(node.value, constants)
        else:
            continue
        found += [f"{name}:{node.lineno} compares with {literal!r}" for literal in spelled
                  if literal in owners and name not in owners[literal]]
    return found


def test_the_name_check_catches_a_comparison_with_a_task_or_benchmark_name(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(a, b):\n    if a == 'scirepeval' or b in ('x', 'mag'):\n        return 1\n"
                      "    match a:\n        case 'sci':\n            return 2\n    if a != task.DEFAULT:\n"
                      "        return 3\n    return a != 'mine'\n")
    owners = {"scirepeval": {"tasks.scirepeval"}, "mag": {"tasks.classification"}, "sci": {"tasks.sci"},
              "mine": {"m"}, "scidocs": {"tasks.classification"}}
    assert sorted(name_comparisons("m", module, owners, {"DEFAULT": "scidocs"})) == [
        "m:2 compares with 'mag'", "m:2 compares with 'scirepeval'", "m:5 compares with 'sci'",
        "m:7 compares with 'scidocs'"]


def test_no_module_compares_a_value_with_a_task_or_benchmark_name_it_does_not_register() -> None:
    """The CLI, the tables, the leaderboard, downloads and export ask a benchmark or a task what they need
    (`Benchmark.table`, `Benchmark.download`, `Benchmark.hints`, the task's declarations), never compare its
    name: a new benchmark or task is one module, with no edit elsewhere."""
    owners, constants = registered_name_owners(), name_constants()
    found = [comparison for name, path in package_modules().items()
             for comparison in name_comparisons(name, path, owners, constants)]
    assert found == []


def test_every_subpackage_is_in_the_wheel() -> None:
    """setup.cfg lists its packages by name: a new subpackage left out of it is missing from a wheel (an installed
    `scidocs-eval` would fail to import it), which an editable install never shows."""
    import configparser

    setup = configparser.ConfigParser()
    setup.read(Path(__file__).resolve().parents[1] / "setup.cfg", encoding="utf-8")
    listed = set(setup["options"]["packages"].split())
    found = {name for name, path in package_modules().items() if path.name == "__init__.py"}
    assert found - listed == set(), "add these to setup.cfg's [options] packages"
