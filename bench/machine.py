"""What the numbers were measured on: date, CPU, cores, memory, Python and server versions."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata


def date() -> str:
    try:
        out = subprocess.run(["date"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    return out or datetime.datetime.now(datetime.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory() -> str:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    kib = int(line.split()[1])
                    return f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return "unknown"


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe(generator: str, caveat: str = "") -> list[str]:
    """Markdown list items describing this machine and the load generator."""
    packages = ", ".join(
        f"{name} {version(name)}" for name in ("uvloop", "httptools", "starlette", "fastapi")
    )
    return [
        f"- Date: {date()}",
        f"- CPU: {cpu_model()}, {cores()} cores ({platform.machine()}, Linux {platform.release()})",
        f"- Memory: {memory()}",
        f"- Python {platform.python_version()}, uvicorn {version('uvicorn')} ({packages})",
        f"- Load generator: {generator}, on this machine: it shares the {cores()} cores"
        " with the server under test, so absolute figures are lower than on a separate client;"
        " compare the ratios" + (f"; {caveat}" if caveat else ""),
    ]
