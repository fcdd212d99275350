"""GET with RBAC authorization beside GET with authorization off, and the authorizer alone.

Two servers, started alike, each with one extra user ``reader`` (not a superuser) from a
token file: one with ``--authorization-mode RBAC`` (the default), where ``reader`` holds
``view`` through a ClusterRoleBinding among ``BINDINGS`` others, and one with
``--authorization-mode AlwaysAllow``. ``reader`` GETs the same ResourceSlicePatch from
both; the ratio is what RBAC costs a warm request. In-process, the authorizer's decision
for the same request is timed alone, warm (its per-user rule cache filled) and cold (every
decision a fresh user, so the bindings are walked each time).
"""

from __future__ import annotations

import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from apiserver.auth import RequestAttributes, UserInfo
from apiserver.auth.rbac import RBACAuthorizer, RBACIndex
from apiserver.auth.rbac.bootstrap import policy
from apiserver.machinery.user import AUTHENTICATED

from . import report
from .load import Generator, LoadSpec
from .objects import COLLECTION_PATH, RESOURCE, object_path, patch
from .stats import Figure, Series
from .targets import APIServerTarget

SECTION = "rbac"
CONNECTIONS = 32
BINDINGS = 500
DECISIONS = 20_000


@dataclass
class Settings:
    rounds: int = 5
    seconds: int = 3
    warmup: int = 2


@dataclass
class Outcome:
    rbac: Series
    allow: Series
    warm_us: Figure
    cold_us: Figure
    settings: Settings = field(default_factory=Settings)


@dataclass
class ReaderTarget(APIServerTarget):
    """This server with an admin and a ``reader`` user, and an authorization mode."""

    mode: str = "RBAC"
    reader_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    def command(self) -> list[str]:
        tokens = self.workdir / "certs" / "tokens.csv"
        tokens.parent.mkdir(parents=True, exist_ok=True)
        admin = secrets.token_urlsafe(24)
        tokens.write_text(f'{admin},admin,admin,"system:masters"\n{self.reader_token},reader,r\n')
        return [
            *super().command(),
            "--token-auth-file",
            str(tokens),
            "--authorization-mode",
            self.mode,
        ]


def _binding(name: str, user: str, role: str) -> dict[str, object]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": user}],
    }


def _prepare(target: ReaderTarget) -> None:
    with target.client() as client:
        client.post(COLLECTION_PATH, json=patch("bench-rbac")).raise_for_status()
        if target.mode != "RBAC":
            return
        bindings = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        for i in range(BINDINGS):
            client.post(
                bindings, json=_binding(f"other-{i}", f"user-{i}", "edit")
            ).raise_for_status()
        client.post(bindings, json=_binding("reader-view", "reader", "view")).raise_for_status()


def _spec(target: ReaderTarget, seconds: int) -> LoadSpec:
    return LoadSpec(
        url=f"{target.url}{object_path('bench-rbac')}",
        headers={"Authorization": f"Bearer {target.reader_token}"},
        connections=CONNECTIONS,
        duration=seconds,
        ca=str(target.ca),
    )


def _measure(generator: Generator, targets: list[ReaderTarget], settings: Settings) -> list[Series]:
    """Rounds taken in turn, one target after the other, so that whatever else the machine
    does weighs on both alike."""
    for target in targets:
        warm = generator.run(_spec(target, settings.warmup))
        if warm.ops == 0 or warm.errors:
            raise RuntimeError(f"{target.name}: GET as reader failed during warm-up: {warm}")
    series = [Series(t.name) for t in targets]
    for _ in range(settings.rounds):
        for target, results in zip(targets, series, strict=True):
            results.add(generator.run(_spec(target, settings.seconds)))
    return series


def _decisions(rounds: int) -> tuple[Figure, Figure]:
    index = RBACIndex()
    for obj in policy(RESOURCE.group):
        index.upsert(obj)
    for i in range(BINDINGS):
        index.upsert(_binding(f"other-{i}", f"user-{i}", "edit"))
    index.upsert(_binding("reader-view", "reader", "view"))
    authorizer = RBACAuthorizer(index)

    def ask(user: UserInfo) -> RequestAttributes:
        return RequestAttributes(
            user=user,
            verb="get",
            resource_request=True,
            api_group=RESOURCE.group,
            api_version=RESOURCE.version,
            resource=RESOURCE.plural,
            name="bench-rbac",
        )

    reader = ask(UserInfo("reader", groups=(AUTHENTICATED,)))
    cold_asks = [
        ask(UserInfo(f"user-{i % BINDINGS}-{i}", groups=(AUTHENTICATED,))) for i in range(DECISIONS)
    ]
    warm, cold = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(DECISIONS):
            assert authorizer.decide(reader).allowed
        warm.append((time.perf_counter() - start) / DECISIONS * 1e6)
        start = time.perf_counter()
        for attributes in cold_asks:
            authorizer.decide(attributes)
        cold.append((time.perf_counter() - start) / DECISIONS * 1e6)
    return Figure(warm), Figure(cold)


def run(generator: Generator, settings: Settings) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="bench-rbac-") as tmp:
        targets = []
        try:
            for mode in ("RBAC", "AlwaysAllow"):
                workdir = Path(tmp) / mode
                workdir.mkdir()
                target = ReaderTarget(f"apiserver-{mode}", workdir, mode=mode)
                targets.append(target)
                target.start()
                _prepare(target)
            print("rbac: measuring GET with RBAC and with AlwaysAllow, in turn", file=sys.stderr)
            rbac, allow = _measure(generator, targets, settings)
        finally:
            for target in targets:
                target.stop()
        warm, cold = _decisions(settings.rounds)
        return Outcome(rbac, allow, warm, cold, settings)


def render(outcome: Outcome, generator: str, date: str) -> str:
    s = outcome.settings
    rows = ["| figure | RBAC | authorization off | ratio |", "|---|---|---|---|"]
    rows.append(
        f"| GET one object, ops/s | {report.with_spread(outcome.rbac.rate)}"
        f" | {report.with_spread(outcome.allow.rate)}"
        f" | {report.ratio(outcome.rbac.rate.median, outcome.allow.rate.median)} |"
    )
    for name, mine, base in (
        ("p50", outcome.rbac.p50, outcome.allow.p50),
        ("p99", outcome.rbac.p99, outcome.allow.p99),
    ):
        rows.append(
            f"| GET one object, {name} latency | {report.with_spread(mine, ' ms')}"
            f" | {report.with_spread(base, ' ms')} | {report.ratio(mine.median, base.median)}x |"
        )
    return "\n".join(
        [
            "## Authorization: GET with RBAC beside GET with authorization off",
            "",
            f"Run: {date}; {generator}; {s.rounds} rounds of {s.seconds} s after {s.warmup} s"
            f" of warm-up, the two servers' rounds taken in turn; {CONNECTIONS} connections;"
            " SQLite storage, watch cache on.",
            "",
            "- Both servers started alike with a non-superuser `reader` from a token file:"
            " *RBAC* (`--authorization-mode RBAC`, the default) with the bootstrap policy,"
            f" {BINDINGS} other ClusterRoleBindings and `reader` bound to `view`;"
            " *authorization off* (`--authorization-mode AlwaysAllow`).",
            "- Ratio: RBAC ÷ off; for throughput the fraction kept, for latency how many"
            " times longer.",
            "",
            "\n".join(rows),
            "",
            f"The authorizer alone, in-process, the same request ({DECISIONS:,} decisions a"
            f" round, {BINDINGS + 5} ClusterRoleBindings): warm (the user's rules cached)"
            f" {report.with_spread(outcome.warm_us, ' µs')} a decision; cold (a new user each"
            " time: its bindings found through the index by user and group, its rules"
            f" gathered) {report.with_spread(outcome.cold_us, ' µs')}.",
        ]
    )
