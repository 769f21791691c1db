"""No import cycle among the project's modules (leangym, agents, baselines), found statically.

Every import that runs counts, also one inside a function: an import moved into a function
hides a cycle from Python, not from a reader. Only ``if TYPE_CHECKING:`` blocks are left out
(they never run: the standard way to name a type without depending on its module). The graph's nodes are
modules; ``import a.b.c`` / ``from a.b import c`` depend on the module they name (and on
``a.b.c`` when ``c`` is a submodule). A package's ``__init__`` counts as its own module.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("leangym", "agents", "baselines")


def module_names() -> dict[str, Path]:
    mods = {}
    for root in ROOTS:
        for path in (REPO / root).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def imports_of(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in mods and t != name}
    return found


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (its ``else`` branch does run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    mods = module_names()
    found = cycles({name: imports_of(name, path, mods) for name, path in mods.items()})
    assert found == [], "import cycles (break each one: move what both need into a module both import):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_the_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    """Not vacuous: two modules importing each other, one of them inside a function, form a cycle."""
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n")
    (tmp_path / "a.py").write_text("import b\nimport c\n")
    mods = {n: tmp_path / f"{n}.py" for n in "abc"}
    graph = {n: imports_of(n, p, mods) for n, p in mods.items()}
    assert graph["c"] == set() and cycles(graph) == [["a", "b"]]  # c names a only for its type hints


def test_leangym_imports_no_agent_code():
    mods = module_names()
    bad = {n: sorted(t for t in imports_of(n, p, mods) if not t.startswith("leangym"))
           for n, p in mods.items() if n.startswith("leangym")}
    assert {n: t for n, t in bad.items() if t} == {}
