"""The Kubernetes DRA CEL environment: the lowest layer, used by validation and the allocator.

    program = compile_selector('device.attributes["gpu.example.com"].model == "a100"')
    device = device_value("gpu.example.com", slice_device_json)   # convert once, keep it
    evaluate(program, device)                                      # -> bool

    constraint = compile_constraint("size(devices) == 2 && ...")
    evaluate(constraint, [device_a, device_b])

``compile_*`` raise CompileError (with ``line``/``column``/``offset``) or CostLimitError (the
estimated cost is above ``MAX_COST``); programs are cached by expression text. ``evaluate``
raises EvaluationError for runtime errors (never confused with ``False``) and
RuntimeLimitError when an evaluation is cut off. See ``environment`` for what expressions may
use and ``bench/RESULTS.md`` for why the library is cel-expr-python.
"""

from __future__ import annotations

from .compiler import (
    MAX_COST,
    MAX_EXPRESSION_LENGTH,
    RUNTIME_ITERATION_LIMIT,
    Kind,
    Program,
    compile_expression,
    evaluate,
)
from .errors import CELError, CompileError, CostLimitError, EvaluationError, RuntimeLimitError
from .values import DeviceValue, device_value


def compile_selector(expression: str, *, cost_limit: int | None = MAX_COST) -> Program:
    """Compile a device selector (variable ``device``)."""
    return compile_expression(expression, Kind.SELECTOR, cost_limit=cost_limit)


def compile_constraint(expression: str, *, cost_limit: int | None = MAX_COST) -> Program:
    """Compile a KEP-5254 constraint (variable ``devices``)."""
    return compile_expression(expression, Kind.CONSTRAINT, cost_limit=cost_limit)


def estimated_cost(program: Program) -> int:
    return program.estimated_cost


__all__ = [
    "MAX_COST",
    "MAX_EXPRESSION_LENGTH",
    "RUNTIME_ITERATION_LIMIT",
    "CELError",
    "CompileError",
    "CostLimitError",
    "DeviceValue",
    "EvaluationError",
    "Kind",
    "Program",
    "RuntimeLimitError",
    "compile_constraint",
    "compile_expression",
    "compile_selector",
    "device_value",
    "estimated_cost",
    "evaluate",
]
