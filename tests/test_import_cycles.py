"""No import cycle between modules of phase, lazy (function-level) and type-checking imports
included: grimp, which import-linter runs on, records them all. The layers contracts only see
imports between the packages they name; two modules of one package could still import each
other (as decode's native, cpu_buffers and placement once did, one of them lazily to dodge
the circle). publish has its own contract too (acyclic_siblings in pyproject.toml); this
covers every package.
"""

from __future__ import annotations

import grimp


def cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively: the
    import chains of a large package are deeper than Python's recursion limit allows)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while (member := stack.pop()) != node:
                        component.add(member)
                        on_stack.discard(member)
                    on_stack.discard(node)
                    if component:
                        found.append(component | {node})
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(
                    graph.find_modules_directly_imported_by(child) & modules))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _describe(graph: grimp.ImportGraph, component: set[str]) -> str:
    lines = []
    for importer in sorted(component):
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & component):
            where = graph.get_import_details(importer=importer, imported=imported)
            at = ", ".join(f"line {d['line_number']}" for d in where)
            lines.append(f"  {importer} -> {imported} ({at})")
    return "\n".join(lines)


def test_no_module_of_phase_imports_itself_in_a_circle() -> None:
    graph = grimp.build_graph("phase")
    modules = {m for m in graph.modules if m == "phase" or m.startswith("phase.")}
    found = cycles(graph, modules)
    assert not found, "import cycles:\n" + "\n\n".join(_describe(graph, c) for c in found)


def test_the_check_sees_a_circle_through_a_lazy_import() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b", line_number=3, line_contents="import p.b")
    graph.add_import(importer="p.b", imported="p.c", line_number=4, line_contents="import p.c")
    graph.add_import(importer="p.c", imported="p.a", line_number=40,
                     line_contents="    from p.a import f")  # inside a function
    graph.add_import(importer="p.d", imported="p.a", line_number=1, line_contents="import p.a")
    modules = set(graph.modules)
    assert cycles(graph, modules) == [{"p.a", "p.b", "p.c"}]
    graph.remove_import(importer="p.c", imported="p.a")
    assert cycles(graph, modules) == []


def test_grimp_records_function_level_imports_in_phase() -> None:
    """What the check relies on: an import inside a function is in grimp's graph
    (phase.cli.sensors imports phase.decode only when a command needs llama.cpp)."""
    graph = grimp.build_graph("phase")
    assert graph.direct_import_exists(importer="phase.cli.sensors", imported="phase.decode")
