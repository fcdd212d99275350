"""What handing the TLS client certificate to the app costs a GET (server/tlspeer.py).

Two processes of this server, alike but for the TLS hook: *as shipped* (client certificates
asked for in the handshake, the peer certificate put into every request's scope) and *stock*
(``bench.stockserve``: uvicorn's own httptools protocol and TLS context, as before). Both
answer the same GET with the admin token, over kept-alive connections (the load generator)
and over a fresh TLS connection per request (a handshake each time, where the certificate
request is paid), taken in turn within each round.
"""

from __future__ import annotations

import os
import socket
import ssl
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from apiserver.server.certs import (
    cert_pem,
    ensure_serving_certs,
    issue_client_cert,
    key_pem,
    make_ca,
)
from apiserver.server.tlspeer import peer_certificate_chain, request_client_certificates

from . import report
from .load import Generator
from .objects import COLLECTION_PATH, object_path, patch
from .stats import Figure, RoundResult, Series, percentile
from .suite import Settings, _Runner
from .targets import APIServerTarget

SECTION = "tls-client-cert"
FRESH_THREADS = 4


@dataclass
class StockTarget(APIServerTarget):
    def command(self) -> list[str]:
        command = super().command()
        return [sys.executable, "-m", "bench.stockserve", *command[3:]]


HANDSHAKES_PER_ROUND = 200


@dataclass
class Outcome:
    kept_alive: tuple[Series, Series]
    cpu_per_get: tuple[Figure, Figure]
    """The server process's CPU µs per kept-alive GET (user + system), this server and stock."""
    fresh: tuple[Series, Series]
    handshakes: dict[str, Figure]
    """µs per handshake (both sides in one process) by case."""
    settings: Settings


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> list[str]:
    """One TLS handshake over memory BIOs; the certificate the server hands to the app."""
    to_server, from_server, to_client, from_client = (ssl.MemoryBIO() for _ in range(4))
    s = server.wrap_bio(to_server, from_server, server_side=True)
    c = client.wrap_bio(to_client, from_client, server_hostname="localhost")
    client_done = server_done = False
    while not (client_done and server_done):
        if not client_done:
            try:
                c.do_handshake()
                client_done = True
            except ssl.SSLWantReadError:
                pass
        to_server.write(from_client.read())
        if not server_done:
            try:
                s.do_handshake()
                server_done = True
            except ssl.SSLWantReadError:
                pass
        to_client.write(from_server.read())
    return peer_certificate_chain(s)


def _handshakes(workdir: Path, rounds: int) -> dict[str, Figure]:
    """CPU cost of a handshake: stock context, shipped without and with a client certificate."""
    files = ensure_serving_certs(workdir / "handshake-certs")
    cert, key = issue_client_cert(*make_ca("bench-client-ca"), "bench-user")
    (workdir / "client.crt").write_bytes(cert_pem(cert))
    (workdir / "client.key").write_bytes(key_pem(key))

    def server(shipped: bool) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(files.cert), str(files.key))
        if shipped:
            request_client_certificates(context)
        return context

    def client(with_cert: bool) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(files.ca_cert))
        if with_cert:
            context.load_cert_chain(str(workdir / "client.crt"), str(workdir / "client.key"))
        return context

    cases = {
        "stock uvicorn TLS, no client certificate": (server(False), client(False), False),
        "this server, no client certificate": (server(True), client(False), False),
        "this server, client certificate handed to the app": (server(True), client(True), True),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (server_context, client_context, expect_cert) in cases.items():
            # CPU time of this process (both sides): other processes on the machine do not
            # count, as they would in wall time.
            began = time.process_time()
            for _ in range(HANDSHAKES_PER_ROUND):
                pem = _handshake(server_context, client_context)
            elapsed = time.process_time() - began
            if bool(pem) != expect_cert:
                raise RuntimeError(f"{name}: the server saw the wrong certificate")
            timings[name].append(elapsed / HANDSHAKES_PER_ROUND * 1e6)
    return {name: Figure(values) for name, values in timings.items()}


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kept_alive(
    generator: Generator, settings: Settings, targets: tuple[APIServerTarget, ...], path: str
) -> tuple[tuple[Series, Series], tuple[Figure, Figure]]:
    """The load generator's GETs, targets in turn each round, with the server's CPU per GET."""
    runner = _Runner(generator, settings)
    series = (Series("this server"), Series("stock uvicorn TLS"))
    cpu: tuple[list[float], list[float]] = ([], [])
    specs = [runner.spec(target, path, "get") for target in targets]
    for spec in specs:
        spec.duration = settings.warmup
        generator.run(spec)
    for _ in range(settings.rounds):
        for index, (target, spec) in enumerate(zip(targets, specs, strict=True)):
            spec.duration = settings.seconds
            before = _cpu_seconds(target.pid)
            result = generator.run(spec)
            used = _cpu_seconds(target.pid) - before
            if result.errors:
                raise RuntimeError(f"{target.name}: {result.errors} failed requests")
            series[index].add(result)
            cpu[index].append(used / result.ops * 1e6 if result.ops else 0.0)
            print(
                f"  {series[index].label} GET: {result.rate:,.0f}/s, p50 {result.p50_ms:.2f} ms,"
                f" {cpu[index][-1]:.0f} CPU µs per GET",
                file=sys.stderr,
            )
    return series, (Figure(cpu[0]), Figure(cpu[1]))


def _fresh_connections(target: APIServerTarget, path: str, seconds: float) -> RoundResult:
    """GETs each on a new TLS connection, from a few threads, for ``seconds``."""
    context = ssl.create_default_context(cafile=str(target.ca))
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {target.token}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker() -> None:
        nonlocal errors
        while time.monotonic() < deadline:
            began = time.perf_counter()
            try:
                with (
                    socket.create_connection(("127.0.0.1", target.port)) as raw,
                    context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
                ):
                    tls.sendall(request)
                    answer = b""
                    while chunk := tls.recv(65536):
                        answer += chunk
                ok = answer.startswith(b"HTTP/1.1 200")
            except OSError:
                ok = False
            with lock:
                if ok:
                    latencies.append((time.perf_counter() - began) * 1e3)
                else:
                    errors += 1

    began = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(FRESH_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    latencies.sort()
    return RoundResult(
        len(latencies), elapsed, percentile(latencies, 50), percentile(latencies, 99), errors
    )


def run(generator: Generator, settings: Settings) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmp:
        shipped = APIServerTarget("apiserver", Path(tmp) / "shipped")
        stock = StockTarget("stock", Path(tmp) / "stock")
        targets = (shipped, stock)
        try:
            for target in targets:
                target.workdir.mkdir(parents=True)
                target.start()
                with target.client() as client:
                    created = client.post(COLLECTION_PATH, content=orjson.dumps(patch("tls-0")))
                    if created.status_code != 201:
                        raise RuntimeError(f"seeding {target.name}: {created.text}")
            path = object_path("tls-0")
            kept, cpu = _kept_alive(generator, settings, targets, path)
            fresh = (Series("this server"), Series("stock uvicorn TLS"))
            for _ in range(settings.rounds):
                for series, target in zip(fresh, targets, strict=True):
                    result = _fresh_connections(target, path, settings.seconds)
                    if result.errors:
                        raise RuntimeError(f"{target.name}: {result.errors} failed requests")
                    series.add(result)
                    print(
                        f"  {series.label} fresh-connection GET: {result.rate:,.0f}/s,"
                        f" p50 {result.p50_ms:.2f} ms",
                        file=sys.stderr,
                    )
            handshakes = _handshakes(Path(tmp), settings.rounds)
            return Outcome(kept, cpu, fresh, handshakes, settings)
        finally:
            for target in targets:
                target.stop()


def _verdict(mine: Series, stock: Series) -> str:
    """Whether the throughput ratio stands out of the rounds' own spread."""
    ratio = mine.rate.median / stock.rate.median if stock.rate.median else 0.0
    noise = mine.rate.spread + stock.rate.spread
    if abs(ratio - 1) <= noise:
        return (
            f"Throughput ratio {ratio:.2f}, within the rounds' spread (±{noise:.0%} together):"
            " no difference this run can tell."
        )
    word = "faster" if ratio > 1 else "slower"
    return f"Throughput ratio {ratio:.2f}: {word} beyond the rounds' spread (±{noise:.0%})."


def render(outcome: Outcome, generator: str, date: str) -> str:
    s = outcome.settings
    lines = [
        "## TLS client certificates: GET with the certificate handed to the app, against stock"
        " uvicorn TLS",
        "",
        f"Run: {date}; {generator}; {s.rounds} rounds of {s.seconds} s per target, the targets"
        " taken in turn within each round.",
        "",
        "- *this server*: `python -m apiserver serve` as shipped: the handshake asks for a client"
        " certificate (and accepts any, for the authenticators to verify), and every request's"
        " scope carries the peer certificate (server/tlspeer.py). The client here sends none"
        " (admin bearer token), as most do.",
        "- *stock uvicorn TLS*: the same server with uvicorn's own httptools protocol and TLS"
        " context (`bench.stockserve`), as before this change.",
        "- Ratio: this server ÷ baseline.",
        "",
        f"### GET one ResourceSlicePatch, kept-alive connections ({s.connections['get']})",
        "",
        report.table(outcome.kept_alive[0], [outcome.kept_alive[1]], "req/s", over_http=True),
        "",
        _verdict(*outcome.kept_alive),
        "",
        "The server process's CPU time per GET over the same rounds (user + system; what other"
        " processes on the machine do does not count):",
        "",
        "| this server | stock uvicorn TLS | ratio |",
        "|---|---|---|",
        f"| {report.with_spread(outcome.cpu_per_get[0], ' µs')}"
        f" | {report.with_spread(outcome.cpu_per_get[1], ' µs')}"
        f" | {report.ratio(outcome.cpu_per_get[0].median, outcome.cpu_per_get[1].median)} |",
        "",
        f"### GET one ResourceSlicePatch, a new TLS connection per request ({FRESH_THREADS}"
        " client threads)",
        "",
        report.table(outcome.fresh[0], [outcome.fresh[1]], "req/s", over_http=True),
        "",
        _verdict(*outcome.fresh),
        "",
        f"### One TLS handshake, client and server in one process over memory BIOs"
        f" ({HANDSHAKES_PER_ROUND} per round)",
        "",
        "| case | CPU µs per handshake (both sides) | ratio to stock |",
        "|---|---|---|",
    ]
    stock = next(iter(outcome.handshakes.values())).median
    for name, figure in outcome.handshakes.items():
        lines.append(
            f"| {name} | {report.with_spread(figure)} | {report.ratio(figure.median, stock)} |"
        )
    lines += [
        "",
        "Asking for a certificate adds a CertificateRequest to every handshake; a client that"
        " sends one also pays for signing it and the server for checking that signature,"
        " reading it out and encoding it as PEM, once per connection. Per request on a kept"
        " connection, the scope gets one more key.",
        "",
    ]
    return "\n".join(lines)
