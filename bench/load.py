"""Load generators: wrk when it is installed, else a Python one; both in separate processes.

Both run a closed loop: a fixed number of keep-alive HTTPS connections, each sending its
next request as soon as the previous answer is read (no pipelining). A create body holds
``NAME_MARKER``, replaced by a name unique to the run, thread and request.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .objects import NAME_MARKER
from .stats import RoundResult


@dataclass
class LoadSpec:
    """One timed run of requests against one URL."""

    url: str
    method: str = "GET"
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    connections: int = 32
    duration: int = 3
    tag: str = "r"
    ca: str = ""


class Generator:
    name = ""
    description = ""
    caveat = ""

    def run(self, spec: LoadSpec) -> RoundResult:
        raise NotImplementedError


_WRK_SCRIPT = """
wrk.method = "{method}"
local body_prefix = [==[{prefix}]==]
local body_suffix = [==[{suffix}]==]
local templated = {templated}
local next_thread = 0
function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
end
function init(args)
  counter = 0
  tag = args[1] or "r"
end
if templated then
  function request()
    counter = counter + 1
    local name = "bench-" .. tag .. "-" .. tid .. "-" .. counter
    return wrk.format(nil, nil, nil, body_prefix .. name .. body_suffix)
  end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {{"requests":%d,"duration_us":%d,"errors":%d,"status_errors":%d,'
      .. '"p50_us":%d,"p99_us":%d}}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
"""


class Wrk(Generator):
    """wrk, the C load generator: cheap enough per request not to hide server differences."""

    name = "wrk"

    def __init__(self, binary: str, threads: int = 2) -> None:
        self.binary = binary
        self.threads = threads
        version = subprocess.run([binary, "--version"], capture_output=True, text=True)
        first = (version.stdout + version.stderr).strip().splitlines()
        self.description = (
            f"{first[0].split(' Copyright')[0] if first else 'wrk'}, {threads} threads"
        )

    def run(self, spec: LoadSpec) -> RoundResult:
        prefix, suffix, templated = "", "", "false"
        if spec.body is not None:
            if NAME_MARKER not in spec.body:
                raise ValueError("wrk runs only bodies with a name marker")
            prefix, suffix = spec.body.split(NAME_MARKER, 1)
            templated = "true"
        with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
            script = Path(tmp) / "bench.lua"
            script.write_text(
                _WRK_SCRIPT.format(
                    method=spec.method, prefix=prefix, suffix=suffix, templated=templated
                )
            )
            args = [
                self.binary,
                f"-t{min(self.threads, spec.connections)}",
                f"-c{spec.connections}",
                f"-d{spec.duration}s",
                "--timeout",
                "10s",
                "-s",
                str(script),
                "-H",
                "Accept: application/json",
            ]
            for key, value in spec.headers.items():
                args += ["-H", f"{key}: {value}"]
            if spec.body is not None:
                args += ["-H", "Content-Type: application/json"]
            args += [spec.url, "--", spec.tag]
            out = subprocess.run(args, capture_output=True, text=True, check=False)
        match = re.search(r"^BENCH (\{.*\})$", out.stdout, re.MULTILINE)
        if out.returncode != 0 or match is None:
            raise RuntimeError(f"wrk failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        data = json.loads(match.group(1))
        return RoundResult(
            ops=data["requests"],
            seconds=data["duration_us"] / 1e6,
            p50_ms=data["p50_us"] / 1e3,
            p99_ms=data["p99_us"] / 1e3,
            errors=data["errors"] + data["status_errors"],
        )


class PythonLoad(Generator):
    """``python -m bench.pyload``: asyncio + ssl on uvloop, in its own process."""

    name = "python"
    description = "bench.pyload (asyncio + ssl on uvloop, one process)"
    caveat = (
        "wrk was not available: this Python generator costs more CPU per request than the"
        " servers it drives, so it can cap the bare baseline and understate the gap"
    )

    def run(self, spec: LoadSpec) -> RoundResult:
        out = subprocess.run(
            [sys.executable, "-m", "bench.pyload"],
            input=json.dumps(asdict(spec)),
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(f"bench.pyload failed ({out.returncode}):\n{out.stderr}")
        return RoundResult(**json.loads(out.stdout))


def install_wrk() -> str | None:
    """wrk's path, installing the Debian package first when root with apt and allowed to."""
    found = shutil.which("wrk")
    if found or os.environ.get("BENCH_INSTALL_WRK", "1") == "0":
        return found
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "wrk"]
    for steps in ([install], [["apt-get", "update", "-qq"], install]):
        for step in steps:
            subprocess.run(step, env=env, capture_output=True, check=False)
        if shutil.which("wrk"):
            break
    return shutil.which("wrk")


def choose(preference: str) -> Generator:
    """``auto``: wrk if it is (or can be) installed, else the Python generator."""
    if preference == "python":
        return PythonLoad()
    binary = install_wrk()
    if binary is None:
        if preference == "wrk":
            raise RuntimeError("wrk is not installed and could not be installed")
        return PythonLoad()
    return Wrk(binary)
