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

Runaway expressions: the library evaluates holding the GIL and cannot be interrupted, so the
bounds are the estimated cost checked at compile time (``MAX_COST``, as upstream) and the
library's budget of ``RUNTIME_ITERATION_LIMIT`` comprehension iterations per evaluation
(RuntimeLimitError). Call ``evaluate`` with converted devices; one evaluation of an accepted
expression takes milliseconds at worst (measured in bench/RESULTS.md).

Where this differs from upstream:

* ``device`` is a map to the type checker: device field names and the type of the result
  (``device.driver`` or a capacity is not a bool; only attribute values are dynamic) are
  checked at compile time, and so are operators applied to device fields
  (``device.driver + 1`` does not compile, as upstream); an operand typed only by what a
  function returns from a device field, or a comprehension's variable over ``devices``
  (``devices.all(d, d.driver > 1)``), is checked at evaluation;
* comparing two literals of different numeric types (``1 < 2.0``) does not compile, although
  values from devices compare across types as upstream;
* nesting is limited to 32 levels (the library's parser and planner);
* more than ``RUNTIME_ITERATION_LIMIT`` iterations stop an evaluation even when the estimated
  cost is within the limit (three nested loops over more than 21 devices);
* the estimated cost is this package's model (``cost``), not cel-go's exact figure;
* not available: ``indexOf``/``lastIndexOf`` on lists (the strings extension owns those names
  here), regex ``find``/``findAll``, the URL, IP, CIDR, format and authorizer libraries;
* quantities and versions are maps at run time: ``==`` with another type is false rather than
  an error, and quantities saturate at ±(2^63-1) (parsing caps them there, as upstream);
* error texts follow upstream for missing keys and the Kubernetes functions, the library's
  elsewhere.
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
