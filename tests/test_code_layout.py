"""The shape of the code a newcomer relies on: no import circles in app/, no module past 450 lines,
no function past 80 lines or 7 parameters."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of modules that import one another, directly or round a loop (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                lowest[module] = min(lowest[module], lowest[imported])
            elif imported in on_stack:
                lowest[module] = min(lowest[module], index[imported])
        if lowest[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_module_of_app_imports_itself_round_a_circle() -> None:
    graph = grimp.build_graph("app")
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for module in ("pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.a")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert circles(graph) == [["pkg.a", "pkg.b"]]


#: A module a reader can hold in mind at once; past this it is doing more than one job.
MAX_MODULE_LINES = 450


def test_no_module_of_app_is_longer_than_a_reader_can_follow() -> None:
    root = Path(__file__).resolve().parent.parent / "app"
    lines = {
        str(path.relative_to(root.parent)): len(path.read_text(encoding="utf-8").splitlines())
        for path in root.rglob("*.py")
    }
    assert lines, "no modules found"
    assert {name: count for name, count in lines.items() if count > MAX_MODULE_LINES} == {}


#: A function past these does more than one thing, or takes what belongs in one value.
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 7

APP = Path(__file__).resolve().parent.parent / "app"


def oversized_functions(source: str) -> list[str]:
    """Functions in ``source`` longer than MAX_FUNCTION_LINES or taking more than MAX_PARAMETERS
    (``self`` and ``cls`` not counted), each as ``name: why``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = node.args
        names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
        names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
        count = len([name for name in names if name not in ("self", "cls")])
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > MAX_FUNCTION_LINES:
            found.append(f"{node.name}: {length} lines")
        if count > MAX_PARAMETERS:
            found.append(f"{node.name}: {count} parameters")
    return found


def test_no_function_of_app_is_too_long_or_takes_too_many_parameters() -> None:
    found = {
        str(path.relative_to(APP.parent)): oversized
        for path in sorted(APP.rglob("*.py"))
        if (oversized := oversized_functions(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_function_measure_finds_a_long_function_and_a_long_signature() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"def long():\n{body}\n\ndef wide(self, a, b, c, d, e, f, g, h):\n    pass\n"
    source += "\ndef fine(self, a, b, c, d, e, f, g):\n    pass\n"
    assert oversized_functions(source) == ["long: 81 lines", "wide: 8 parameters"]
