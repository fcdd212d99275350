"""The shape DESIGN §5 and the engineering guide ask of the code, kept by the suite: no
function in ``apiserver/`` longer than 60 lines, and no import cycle among its modules (the
import-linter contracts keep layers in order; a cycle inside one layer they do not see)."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parents[2] / "apiserver"
MAX_FUNCTION_LINES = 60


def test_no_function_is_longer_than_60_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert long == []


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph("apiserver", cache_dir=None)
    cycles = sorted(
        f"{module} -> {imported}"
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert cycles == []
