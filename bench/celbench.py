"""CEL libraries on the DRA expression set: evaluations per second, memory, compatibility.

The same four expressions (a driver match, an attribute + capacity + version selector, the
KEP-5254 "4 contiguous" and "2x2 grid" constraints) run on every CEL library available as a
wheel, side by side in one run:

* ``apiserver.cel``: this project's CEL layer on cel-expr-python (CEL C++), the Kubernetes
  functions rewritten into native CEL;
* cel-expr-python with the Kubernetes functions as Python callbacks (the obvious way to add
  them, measured to show why the layer does not do it);
* common-expression-language (the Rust ``cel`` crate) and cel-python (pure Python), with the
  Kubernetes functions as Python functions.

Every library gets the devices in its own input form, converted once before timing, and must
give the expected true and false results before it is timed. Memory is measured in a child
process per library and expression (resident set growth over many evaluations). A compatibility
probe runs the features the DRA compatibility suite needs on each library, and the runaway
table shows what happens to pathological expressions in the chosen one.

``python -m bench.celbench`` updates only the ``cel`` section of RESULTS.md; ``make bench``
runs it as part of ``python -m bench``.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from apiserver import cel
from apiserver.cel import quantity as q
from apiserver.cel import semver as sv

from . import machine, report
from .stats import Figure

SECTION = "cel"
RESULTS = report.RESULTS

Subject = Any
Evaluate = Callable[[Any], bool]

# -- the expression set ---------------------------------------------------------------------

GPU = "gpu.example.com"
MLA = "mla.example.com"

DRIVER_MATCH = 'device.driver == "gpu.example.com"'
ATTRIBUTE_CAPACITY = (
    'device.attributes["gpu.example.com"].model == "a100" && '
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("32Gi")) >= 0 && '
    'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))'
)
CONTIGUOUS = (
    "size(devices) == 4 && "
    "devices.map(d, d.attributes['mla.example.com'].index).max() - "
    "devices.map(d, d.attributes['mla.example.com'].index).min() == 3"
)
GRID = """size(devices) == 4 &&
devices.all(d,
    devices.filter(other,
        d != other &&
        ((d.attributes["mla.example.com"].row == other.attributes["mla.example.com"].row &&
          (d.attributes["mla.example.com"].col == other.attributes["mla.example.com"].col + 1 ||
           d.attributes["mla.example.com"].col == other.attributes["mla.example.com"].col - 1)) ||
         (d.attributes["mla.example.com"].col == other.attributes["mla.example.com"].col &&
          (d.attributes["mla.example.com"].row == other.attributes["mla.example.com"].row + 1 ||
           d.attributes["mla.example.com"].row == other.attributes["mla.example.com"].row - 1))
        )
    ).size() >= 2
)"""


def gpu(model: str = "a100", memory: str = "40Gi", version: str = "1.3.0") -> dict[str, Any]:
    return {
        "name": "gpu-0",
        "attributes": {
            "model": {"string": model},
            "index": {"int": 0},
            "driverVersion": {"version": version},
            "example.com/region": {"string": "eu-1"},
        },
        "capacity": {"memory": {"value": memory}, "cores": {"value": 128}},
    }


def mla(index: int, row: int, col: int) -> dict[str, Any]:
    return {
        "name": f"mla-{index}",
        "attributes": {
            "index": {"int": index},
            "row": {"int": row},
            "col": {"int": col},
            "model": {"string": "m1"},
        },
        "capacity": {"memory": {"value": "16Gi"}},
    }


@dataclass(frozen=True)
class Case:
    name: str
    variable: str  # "device" (selector) or "devices" (constraint)
    expression: str
    matching: Callable[[], Any]  # the CEL value (domains grouped) that must match
    other: Callable[[], Any]  # one that must not


def _set(*devices: dict[str, Any]) -> Callable[[], Any]:
    return lambda: [cel.device_value(MLA, d) for d in devices]


CASES = [
    Case(
        "driver match",
        "device",
        DRIVER_MATCH,
        lambda: cel.device_value(GPU, gpu()),
        lambda: cel.device_value("other.example.com", gpu()),
    ),
    Case(
        "attribute + capacity + version",
        "device",
        ATTRIBUTE_CAPACITY,
        lambda: cel.device_value(GPU, gpu()),
        lambda: cel.device_value(GPU, gpu(memory="16Gi")),
    ),
    Case(
        "KEP-5254 4 contiguous",
        "devices",
        CONTIGUOUS,
        _set(*(mla(i, 0, i) for i in (5, 3, 4, 2))),
        _set(*(mla(i, 0, i) for i in (2, 3, 5, 7))),
    ),
    Case(
        "KEP-5254 2x2 grid",
        "devices",
        GRID,
        _set(mla(0, 0, 0), mla(1, 0, 1), mla(2, 1, 0), mla(3, 1, 1)),
        _set(mla(0, 0, 0), mla(1, 0, 1), mla(2, 0, 2), mla(3, 0, 3)),
    ),
]


def subjects(case: Case) -> tuple[Any, Any]:
    return case.matching(), case.other()


# -- Kubernetes functions in Python, for the libraries that need callbacks -----------------------


def _key(value: Any) -> Any:
    return value["@k"]


def py_quantity(text: Any) -> dict[str, str]:
    return q.parse(str(text)).cel()


def py_semver(text: Any) -> dict[str, object]:
    return sv.parse(str(text)).cel()


def py_compare(a: Any, b: Any) -> int:
    ka, kb = _key(a), _key(b)
    return -1 if ka < kb else (1 if ka > kb else 0)


def py_greater(a: Any, b: Any) -> bool:
    return bool(_key(a) > _key(b))


def py_max(items: Any) -> Any:
    return max(items)


def py_min(items: Any) -> Any:
    return min(items)


# -- the libraries ----------------------------------------------------------------------------


class Library:
    name = ""
    package = ""

    def version(self) -> str:
        try:
            return metadata.version(self.package)
        except metadata.PackageNotFoundError:
            return "not installed"

    def available(self) -> bool:
        return self.version() != "not installed"

    def compile(self, variable: str, expression: str) -> Evaluate:
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        return value


class Layer(Library):
    name = "apiserver.cel (cel-expr-python)"
    package = "cel-expr-python"

    def compile(self, variable: str, expression: str) -> Evaluate:
        program = (
            cel.compile_selector(expression)
            if variable == "device"
            else cel.compile_constraint(expression)
        )
        return lambda subject: cel.evaluate(program, subject)


class ExprPythonCallbacks(Library):
    name = "cel-expr-python, Python callbacks"
    package = "cel-expr-python"

    def compile(self, variable: str, expression: str) -> Evaluate:
        from cel_expr_python import cel as cpp

        m = cpp.Type.Map(cpp.Type.STRING, cpp.Type.DYN)
        dyn_list = cpp.Type.List(cpp.Type.DYN)

        def fn(name: str, ret: Any, params: list[Any], impl: Any, member: bool) -> Any:
            return cpp.FunctionDecl(
                name, [cpp.Overload(name + "_py", ret, params, is_member=member, impl=impl)]
            )

        functions = [
            fn("quantity", m, [cpp.Type.STRING], py_quantity, False),
            fn("semver", m, [cpp.Type.STRING], py_semver, False),
            fn("compareTo", cpp.Type.INT, [m, m], py_compare, True),
            fn("isGreaterThan", cpp.Type.BOOL, [m, m], py_greater, True),
            fn("max", cpp.Type.DYN, [dyn_list], py_max, True),
            fn("min", cpp.Type.DYN, [dyn_list], py_min, True),
        ]
        types = {"device": m, "devices": dyn_list}
        env = cpp.NewEnv(variables={variable: types[variable]}, functions=functions)
        program = env.compile(expression)

        def evaluate(subject: Any) -> bool:
            result = program.eval(env.Activation({variable: subject})).value()
            if result is True or result is False:
                return bool(result)
            raise RuntimeError(str(result))

        return evaluate


class Rust(Library):
    name = "common-expression-language"
    package = "common-expression-language"

    def compile(self, variable: str, expression: str) -> Evaluate:
        import cel as rust  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from cel.stdlib import (  # type: ignore[import-not-found,import-untyped,unused-ignore]
            add_stdlib_to_context,
        )

        program = rust.compile(expression)
        context = rust.Context()
        add_stdlib_to_context(context)
        for name, impl in (
            ("quantity", py_quantity),
            ("semver", py_semver),
            ("compareTo", py_compare),
            ("isGreaterThan", py_greater),
        ):
            context.add_function(name, impl)

        def evaluate(subject: Any) -> bool:
            context.add_variable(variable, subject)
            return bool(program.execute(context) is True)

        return evaluate


class Pure(Library):
    name = "cel-python"
    package = "cel-python"

    def compile(self, variable: str, expression: str) -> Evaluate:
        import celpy  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from celpy import celtypes  # type: ignore[import-not-found,import-untyped,unused-ignore]

        env = celpy.Environment()
        program = env.program(
            env.compile(expression),
            functions={
                "quantity": lambda t: self.convert(py_quantity(t)),
                "semver": lambda t: self.convert(py_semver(t)),
                "compareTo": lambda a, b: self.convert(py_compare(a, b)),
                "isGreaterThan": lambda a, b: self.convert(py_greater(a, b)),
                "max": lambda items: max(items),
                "min": lambda items: min(items),
            },
        )

        def evaluate(subject: Any) -> bool:
            result = program.evaluate({variable: subject})
            if isinstance(result, Exception):
                raise result
            return isinstance(result, celtypes.BoolType) and bool(result)

        return evaluate

    def convert(self, value: Any) -> Any:
        from celpy import celtypes  # type: ignore[import-not-found,import-untyped,unused-ignore]

        if isinstance(value, bool):
            return celtypes.BoolType(value)
        if isinstance(value, int):
            return celtypes.IntType(value)
        if isinstance(value, float):
            return celtypes.DoubleType(value)
        if isinstance(value, str):
            return celtypes.StringType(value)
        if isinstance(value, bytes):
            return celtypes.BytesType(value)
        if isinstance(value, list):
            return celtypes.ListType([self.convert(v) for v in value])
        if isinstance(value, dict):
            return celtypes.MapType({self.convert(k): self.convert(v) for k, v in value.items()})
        raise TypeError(type(value).__name__)


LIBRARIES: list[Library] = [Layer(), ExprPythonCallbacks(), Rust(), Pure()]
CHOSEN = LIBRARIES[0]


def by_name(name: str) -> Library:
    return next(lib for lib in LIBRARIES if lib.name == name)


# -- throughput ------------------------------------------------------------------------------


@dataclass
class Cell:
    figure: Figure | None = None
    problem: str = ""


def _correct(evaluate: Evaluate, yes: Any, no: Any) -> str:
    try:
        if evaluate(yes) is not True:
            return "wrong result on the matching set"
        if evaluate(no) is not False:
            return "wrong result on the other set"
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    return ""


def throughput(lib: Library, case: Case, rounds: int, seconds: float) -> Cell:
    try:
        evaluate = lib.compile(case.variable, case.expression)
    except Exception as e:
        return Cell(problem=f"does not compile: {str(e).splitlines()[0][:80]}")
    yes, no = (lib.convert(s) for s in subjects(case))
    problem = _correct(evaluate, yes, no)
    if problem:
        return Cell(problem=problem)
    rates = []
    for _ in range(rounds):
        count = 0
        start = time.perf_counter()
        deadline = start + seconds
        while True:
            evaluate(yes)
            count += 1
            now = time.perf_counter()
            if now >= deadline:
                break
        rates.append(count / (now - start))
    return Cell(figure=Figure(rates))


# -- memory (in a child process) ----------------------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def memory_child(library: str, case_name: str, count: int, seconds: float) -> dict[str, Any]:
    lib = by_name(library)
    case = next(c for c in CASES if c.name == case_name)
    evaluate = lib.compile(case.variable, case.expression)
    yes, no = (lib.convert(s) for s in subjects(case))
    for _ in range(1000):
        evaluate(yes)
        evaluate(no)
    gc.collect()
    before = _rss()
    deadline = time.monotonic() + seconds if seconds > 0 else float("inf")
    done = 0
    while done < count:
        evaluate(yes if done % 2 else no)
        done += 1
        if done % 1000 == 0 and time.monotonic() > deadline:
            break
    gc.collect()
    return {"evaluations": done, "growth": _rss() - before}


@dataclass
class Memory:
    library: str
    case: str
    evaluations: int = 0
    growth: int = 0
    problem: str = ""

    @property
    def per_evaluation(self) -> float:
        return self.growth / self.evaluations if self.evaluations else 0.0


def memory(lib: Library, case: Case, count: int, seconds: float) -> Memory:
    command = [
        sys.executable,
        "-m",
        "bench.celbench",
        "--memory-child",
        json.dumps([lib.name, case.name, count, seconds]),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent
    )
    if done.returncode != 0:
        return Memory(lib.name, case.name, problem=done.stderr.strip().splitlines()[-1][:80])
    out = json.loads(done.stdout)
    return Memory(lib.name, case.name, out["evaluations"], out["growth"])


# -- compatibility probes ---------------------------------------------------------------------

_PROBE_DEVICE = gpu()


@dataclass(frozen=True)
class Probe:
    feature: str
    expression: str
    expect: str  # "true", "error" (at evaluation) or "compile-error"


PROBES = [
    Probe(
        "attribute look-up by domain", 'device.attributes["example.com"].region == "eu-1"', "true"
    ),
    Probe(
        "missing attribute is an error, not false",
        'device.attributes["gpu.example.com"].serial == "x"',
        "error",
    ),
    Probe("unknown domain is an empty map", 'size(device.attributes["unknown.io"]) == 0', "true"),
    Probe(
        "optional chaining (.? / orValue)",
        'device.attributes["gpu.example.com"].?serial.orValue("none") == "none"',
        "true",
    ),
    Probe(
        "cel.bind", 'cel.bind(m, device.attributes["gpu.example.com"], m.model == "a100")', "true"
    ),
    Probe(
        "cross-type numeric comparison", 'device.attributes["gpu.example.com"].index < 0.5', "true"
    ),
    Probe(
        "strings extension",
        '"A100".lowerAscii() == device.attributes["gpu.example.com"].model',
        "true",
    ),
    Probe("sets extension", 'sets.contains(["a", "b"], ["a"])', "true"),
    Probe(
        "type error caught at compile time", 'device.driver == "x" && 1 + "a" == 2', "compile-error"
    ),
    Probe("syntax error caught at compile time", "device.driver ==", "compile-error"),
]


def probe(lib: Library, p: Probe) -> bool:
    if isinstance(lib, Layer):
        value = cel.device_value(GPU, _PROBE_DEVICE)
    else:
        value = lib.convert(cel.device_value(GPU, _PROBE_DEVICE))
    try:
        evaluate = lib.compile("device", p.expression)
    except Exception:
        return p.expect == "compile-error"
    if p.expect == "compile-error":
        return False
    try:
        result = evaluate(value)
    except Exception:
        return p.expect == "error"
    return p.expect == "true" and result is True


# -- runaway expressions on the chosen library ----------------------------------------------------


def _nested_all(depth: int) -> str:
    names = [f"d{i}" for i in range(depth)]
    body = " && ".join(f"{n}.attributes['mla.example.com'].index >= 0" for n in names)
    for n in reversed(names):
        body = f"devices.all({n}, {body})"
    return body


RUNAWAY = [
    ("5 nested `devices.all`", _nested_all(5)),
    ("3 nested `devices.all`", _nested_all(3)),
    (
        "2 nested `devices.all`, string work in the body",
        "devices.all(a, devices.all(b, "
        "a.attributes['mla.example.com'].model.replace('', 'xx').size() >= 0 && "
        "(a.attributes['mla.example.com'].model + b.attributes['mla.example.com'].model)"
        ".matches('^(m|1|x)+$')))",
    ),
]


@dataclass
class Runaway:
    name: str
    estimated: int
    verdict: str
    compile_ms: float
    evaluate_ms: float = 0.0


def runaway(devices: int = 32, repeats: int = 5) -> tuple[list[Runaway], float, int]:
    subject = [cel.device_value(MLA, mla(i, i // 8, i % 8)) for i in range(devices)]
    rows = []
    for name, expression in RUNAWAY:
        cel.compiler.cache.clear()
        start = time.perf_counter()
        try:
            program = cel.compile_constraint(expression)
        except cel.CostLimitError as e:
            ms = (time.perf_counter() - start) * 1000
            rows.append(Runaway(name, e.estimated, "rejected at create", ms))
            continue
        ms = (time.perf_counter() - start) * 1000
        worst = 0.0
        verdict = ""
        for _ in range(repeats):
            start = time.perf_counter()
            try:
                verdict = f"evaluated: {cel.evaluate(program, subject)}"
            except cel.RuntimeLimitError:
                verdict = "cut off at run time"
            worst = max(worst, (time.perf_counter() - start) * 1000)
        rows.append(Runaway(name, program.estimated_cost, verdict, ms, worst))
    # the longest expression the API accepts: compile time is what validation costs
    terms: list[str] = []
    i = 0
    while len(" && ".join(terms)) < cel.MAX_EXPRESSION_LENGTH - 60:
        terms.append(f'device.attributes["gpu.example.com"].model != "m{i}"')
        i += 1
    longest = " && ".join(terms)
    cel.compiler.cache.clear()
    start = time.perf_counter()
    cel.compile_selector(longest)
    return rows, (time.perf_counter() - start) * 1000, len(longest)


# -- the run and the report ---------------------------------------------------------------------


@dataclass
class Outcome:
    libraries: list[Library]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    memory: list[Memory] = field(default_factory=list)
    probes: dict[tuple[str, str], bool] = field(default_factory=dict)
    runaway: list[Runaway] = field(default_factory=list)
    longest_ms: float = 0.0
    longest_chars: int = 0
    rounds: int = 0
    seconds: float = 0.0


def run(
    *,
    rounds: int = 5,
    seconds: float = 0.5,
    chosen_count: int = 1_000_000,
    other_count: int = 200_000,
    other_seconds: float = 20.0,
    log: Callable[[str], None] = lambda _s: None,
) -> Outcome:
    libraries = [lib for lib in LIBRARIES if lib.available()]
    outcome = Outcome(libraries, rounds=rounds, seconds=seconds)
    for case in CASES:
        for lib in libraries:
            log(f"cel: {case.name} on {lib.name}")
            outcome.cells[(case.name, lib.name)] = throughput(lib, case, rounds, seconds)
    for lib in libraries:
        for p in PROBES:
            outcome.probes[(p.feature, lib.name)] = probe(lib, p)
    for lib in libraries:
        for case in CASES:
            if outcome.cells[(case.name, lib.name)].problem:
                continue
            log(f"cel: memory of {case.name} on {lib.name}")
            if lib is CHOSEN:
                outcome.memory.append(memory(lib, case, chosen_count, 0))
            else:
                outcome.memory.append(memory(lib, case, other_count, other_seconds))
    log("cel: runaway expressions")
    outcome.runaway, outcome.longest_ms, outcome.longest_chars = runaway()
    return outcome


def _cell(cell: Cell) -> str:
    if cell.figure is None:
        return f"✗ {cell.problem}"
    return report.with_spread(cell.figure)


def _mb(n: int) -> str:
    return f"{n / 1e6:+.1f} MB"


def render(outcome: Outcome, date: str) -> str:
    libs = outcome.libraries
    names = [lib.name for lib in libs]
    lines = [
        "## CEL: the DRA expression set on each CEL library",
        "",
        f"Run: {date}; {outcome.rounds} rounds of {outcome.seconds:g} s per library and "
        "expression, one process, the libraries taken in turn. Versions: "
        + ", ".join(sorted({f"{lib.package} {lib.version()}" for lib in libs}))
        + ".",
        "",
        "Every library is given the devices in its own input form, converted once before "
        "timing (domains grouped as in Kubernetes), and must return true on the matching set "
        "and false on the other before it is timed. Where a library has no Kubernetes "
        "function (`quantity`, `semver`, `compareTo`, `isGreaterThan`, list `max`/`min`), it "
        "gets a Python one.",
        "",
        "### Evaluations per second (median ± spread; higher is better)",
        "",
        "| expression | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for case in CASES:
        row = [_cell(outcome.cells[(case.name, n)]) for n in names]
        lines.append(f"| {case.name} | " + " | ".join(row) + " |")
    lines += [
        "",
        "### What the DRA compatibility suite needs (✓ supported, ✗ not)",
        "",
        "| feature | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for p in PROBES:
        marks = ["✓" if outcome.probes[(p.feature, n)] else "✗" for n in names]
        lines.append(f"| {p.feature} | " + " | ".join(marks) + " |")
    lines += [
        "",
        "### Memory: growth of the resident set over many evaluations (child process per row)",
        "",
        "| library | expression | evaluations | growth | per evaluation |",
        "|---|---|---|---|---|",
    ]
    for m in outcome.memory:
        if m.problem:
            lines.append(f"| {m.library} | {m.case} | ✗ {m.problem} | | |")
            continue
        lines.append(
            f"| {m.library} | {m.case} | {m.evaluations:,} | {_mb(m.growth)} "
            f"| {m.per_evaluation:.1f} B |"
        )
    lines += [
        "",
        "### Runaway expressions in apiserver.cel (32 devices)",
        "",
        "| expression | estimated cost | outcome | compile | worst evaluation |",
        "|---|---|---|---|---|",
    ]
    for r in outcome.runaway:
        evaluation = f"{r.evaluate_ms:.1f} ms" if r.evaluate_ms else "—"
        lines.append(
            f"| {r.name} | {r.estimated:,} | {r.verdict} | {r.compile_ms:.1f} ms | {evaluation} |"
        )
    worst = max((r.evaluate_ms for r in outcome.runaway), default=0.0)
    lines += [
        "",
        "cel-expr-python evaluates holding the GIL and cannot be interrupted from outside, so "
        "a worker thread would not keep the event loop free and a time limit cannot be "
        "enforced. The bounds are two: the estimated cost, checked when an expression is "
        f"created (at most {cel.MAX_COST:,}, as upstream: *rejected at create*), and the "
        f"library's budget of {cel.RUNTIME_ITERATION_LIMIT:,} comprehension iterations per "
        "evaluation, which ends an evaluation with an error (*cut off at run time*). The "
        f"longest evaluation measured here, cut off or not, took {worst:.1f} ms.",
    ]
    lines += [
        "",
        f"Compiling the longest selector the API accepts ({outcome.longest_chars:,} characters) "
        f"took {outcome.longest_ms:.0f} ms, the most validation can hold the event loop for "
        "one expression (compiled programs are cached by text).",
        "",
        choice(outcome),
    ]
    return "\n".join(lines)


def choice(outcome: Outcome) -> str:
    """Why the chosen library, from this run's numbers."""
    names = [lib.name for lib in outcome.libraries]
    passing = [n for n in names if all(outcome.probes[(p.feature, n)] for p in PROBES)]
    fastest: dict[str, str] = {}
    libraries = [n for n in names if n != ExprPythonCallbacks.name]
    for case in CASES:
        medians = {
            n: figure.median
            for n in libraries
            if (figure := outcome.cells[(case.name, n)].figure) is not None
        }
        fastest[case.name] = max(medians, key=medians.__getitem__, default="")
    chosen = CHOSEN.name
    wins = sum(1 for v in fastest.values() if v == chosen)
    ratios = []
    for case in CASES:
        mine = outcome.cells[(case.name, chosen)].figure
        others = [
            outcome.cells[(case.name, n)].figure
            for n in names
            if n != chosen and n != ExprPythonCallbacks.name
        ]
        best_other = max((f.median for f in others if f is not None), default=0.0)
        if mine is not None and best_other:
            ratios.append(f"{case.name} {mine.median / best_other:.1f}x")
    growth = [m for m in outcome.memory if m.library == chosen and not m.problem]
    worst = max((m.growth for m in growth), default=0)
    leaky = [
        m for m in outcome.memory if m.library != chosen and not m.problem and m.per_evaluation > 10
    ]
    text = [
        "### Choice",
        "",
        f"**{chosen}**: the fastest library on {wins} of {len(CASES)} expressions "
        f"(against the fastest other library: {', '.join(ratios)}; {ExprPythonCallbacks.name}"
        " is the same library with the Kubernetes functions bound to Python, not a rival); "
        + (
            "the only library that passes every compatibility probe"
            if passing == [chosen]
            else f"libraries passing every probe: {', '.join(passing) or 'none'}"
        )
        + f"; at most {_mb(worst)} of growth over {max((m.evaluations for m in growth), default=0):,}"
        " evaluations of each expression.",
    ]
    if leaky:
        text.append("")
        text.append(
            "Python callbacks cost memory: "
            + "; ".join(
                f"{m.library} on {m.case}: {m.per_evaluation:.0f} B per evaluation" for m in leaky
            )
            + ". cel-expr-python keeps every argument of a Python function alive, so this "
            "layer rewrites the Kubernetes functions into native CEL at compile time "
            "(see `apiserver/cel/rewrite.py`) and calls Python only to parse a quantity or "
            "version that is not a literal and for quantity `add`/`sub`."
        )
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.celbench", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--count", type=int, default=1_000_000, help="evaluations (chosen)")
    parser.add_argument("--other-count", type=int, default=200_000)
    parser.add_argument("--other-seconds", type=float, default=20.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        library, case, count, seconds = json.loads(args.memory_child)
        print(json.dumps(memory_child(library, case, count, seconds)))
        return 0
    outcome = run(
        rounds=args.rounds,
        seconds=args.seconds,
        chosen_count=args.count,
        other_count=args.other_count,
        other_seconds=args.other_seconds,
        log=lambda s: print(s, file=sys.stderr),
    )
    report.update(args.output, {SECTION: render(outcome, machine.date())})
    print(f"wrote the {SECTION} section of {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
