"""``make fuzz``: schemathesis over the server's own OpenAPI documents.

A server is started as ``make run`` starts it; its ``/openapi/v2`` document and every
``/openapi/v3`` group-version document are read from it, and for every operation in each
schemathesis generates a fixed number of requests that follow the schema and as many that
break it (derandomized: the same requests every run). Every answer is checked: no 5xx, and
its status code is one the document declares for the operation. A 5xx fails the run; an
undocumented code fails it only when the documents declare error responses at all (before
they do, every refusal would be undocumented: those codes are counted in the summary
instead). The summary is written into ``bench/RESULTS.md``, a section of its own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.core.result import Err

from . import machine, report
from .targets import APIServerTarget

SECTION = "fuzz"
RESULTS = report.RESULTS
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


@dataclass
class DocumentOutcome:
    name: str
    operations: int = 0
    requests: int = 0
    not_generated: list[str] = field(default_factory=list)
    codes: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    undocumented: Counter[str] = field(default_factory=Counter)
    declares_errors: bool = False


@dataclass
class Outcome:
    documents: list[DocumentOutcome]
    max_examples: int
    seconds: float

    @property
    def strict(self) -> bool:
        """Undocumented codes fail the run once the documents declare error responses."""
        return all(d.declares_errors for d in self.documents)

    @property
    def failed(self) -> bool:
        return any(d.server_errors for d in self.documents) or (
            self.strict and any(d.undocumented for d in self.documents)
        )


def documents(target: APIServerTarget) -> dict[str, dict[str, Any]]:
    """``/openapi/v2`` and every ``/openapi/v3`` group-version document, by path."""
    with target.client() as client:
        docs = {"/openapi/v2": client.get("/openapi/v2").raise_for_status().json()}
        root = client.get("/openapi/v3").raise_for_status().json()
        for path in sorted(root["paths"]):
            docs[f"/openapi/v3/{path}"] = (
                client.get(f"/openapi/v3/{path}").raise_for_status().json()
            )
    return docs


def _documented(responses: dict[str, Any]) -> tuple[set[int], bool]:
    codes = {int(c) for c in responses if c.isdigit()}
    return codes, "default" in responses


def fuzz_document(
    name: str, doc: dict[str, Any], target: APIServerTarget, max_examples: int
) -> DocumentOutcome:
    outcome = DocumentOutcome(name)
    schema = schemathesis.openapi.from_dict(doc)
    session = requests.Session()
    session.verify = str(target.ca)
    session.headers.update(target.headers)
    for result in schema.get_all_operations():
        if isinstance(result, Err):  # the document itself is broken: nothing to fuzz
            raise result.err()
        operation = result.ok()
        outcome.operations += 1
        label = f"{operation.method.upper()} {operation.path}"
        raw = operation.definition.raw
        codes, has_default = _documented(raw.get("responses") or {})
        outcome.declares_errors |= any(400 <= c < 500 and c != 401 for c in codes)

        probe = _prober(outcome, target, session, label, codes, has_default)
        for mode in MODES:
            test = settings(
                max_examples=max_examples,
                deadline=None,
                derandomize=True,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )(given(case=operation.as_strategy(generation_mode=mode))(probe))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    test()
            except Exception as exc:  # a schema part schemathesis cannot generate for
                outcome.not_generated.append(f"{label} ({mode.value}): {type(exc).__name__}")
    return outcome


def _prober(
    outcome: DocumentOutcome,
    target: APIServerTarget,
    session: requests.Session,
    label: str,
    codes: set[int],
    has_default: bool,
) -> Any:
    """The test body for one operation: send the case, record what came back."""

    def probe(case: Any) -> None:
        response = case.call(
            base_url=target.url, session=session, timeout=30, verify=str(target.ca)
        )
        outcome.requests += 1
        outcome.codes[response.status_code] += 1
        if response.status_code >= 500:
            outcome.server_errors.append(f"{label}: {response.status_code} {response.text[:200]}")
        if response.status_code not in codes and not has_default:
            outcome.undocumented[f"{label} {response.status_code}"] += 1

    return probe


def run(max_examples: int, log: Any = print) -> Outcome:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as workdir:
        target = APIServerTarget("fuzz", Path(workdir))
        target.start()
        try:
            results = []
            for name, doc in documents(target).items():
                log(f"fuzzing {name}")
                results.append(fuzz_document(name, doc, target, max_examples))
        finally:
            target.stop()
    return Outcome(results, max_examples, time.monotonic() - began)


def render(outcome: Outcome, date: str) -> str:
    requests_total = sum(d.requests for d in outcome.documents)
    lines = [
        "## Fuzzing: schemathesis over the OpenAPI documents",
        "",
        f"Run: {date}, on the machine above; schemathesis"
        f" {machine.version('schemathesis')}, {outcome.max_examples} requests per operation"
        " that follow the schema and as many that break it, derandomized; against"
        " `python -m apiserver serve` as `make run` starts it. Checks: no 5xx; every status"
        " code declared by the operation"
        + (
            "."
            if outcome.strict
            else " (reported, not failed: the documents declare no error responses yet)."
        ),
        "",
        "| document | operations | requests | 5xx | undocumented codes (requests) | status codes seen |",
        "|---|---|---|---|---|---|",
    ]
    for d in outcome.documents:
        undocumented = Counter(int(k.rsplit(" ", 1)[1]) for k in d.undocumented.elements())
        lines.append(
            f"| `{d.name}` | {d.operations} | {d.requests:,} | {len(d.server_errors)} |"
            f" {_codes(undocumented) or 'none'} | {_codes(d.codes)} |"
        )
    lines += [
        "",
        f"{requests_total:,} requests in {outcome.seconds:.0f} s."
        + (" No 5xx." if not any(d.server_errors for d in outcome.documents) else ""),
    ]
    for d in outcome.documents:
        for error in d.server_errors[:10]:
            lines.append(f"- 5xx in `{d.name}`: {error}")
        if d.not_generated:
            lines.append(
                f"- `{d.name}`: schemathesis generated nothing for {len(d.not_generated)}"
                f" operation/mode pairs (e.g. {d.not_generated[0]})"
            )
    return "\n".join(lines)


def _codes(counts: Counter[int]) -> str:
    return ", ".join(f"{code} ({n:,})" for code, n in sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__)
    parser.add_argument(
        "--max-examples", type=int, default=4, help="requests per operation and mode (default 4)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="the RESULTS.md to update")
    args = parser.parse_args(argv)
    outcome = run(args.max_examples, log=lambda s: print(s, file=sys.stderr))
    report.update(args.output, {SECTION: render(outcome, machine.date())})
    print(render(outcome, machine.date()))
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())
