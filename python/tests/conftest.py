"""pytest setup for kiln's Python tests: KILN_REQUIRE_BACKENDS as the C++ tests honour it (a
backend named there that found no device fails the run instead of skipping silently), and the
`device` fixture, which runs a test once on each available device."""

import os

import pytest

import kiln

_BACKENDS = {name: (available, reason) for name, available, reason in kiln.backend_status()}


def pytest_sessionstart(session):
    required = [b.strip().lower() for b in os.environ.get("KILN_REQUIRE_BACKENDS", "").split(",")]
    problems = []
    for backend in filter(None, required):
        if backend not in _BACKENDS:
            problems.append(f"unknown backend '{backend}'; expected cpu, cuda or opencl")
        elif not _BACKENDS[backend][0]:
            problems.append(f"the {backend} backend is unavailable: {_BACKENDS[backend][1]}")
    if problems:
        raise pytest.UsageError("KILN_REQUIRE_BACKENDS=" + os.environ["KILN_REQUIRE_BACKENDS"]
                                + ":\n  " + "\n  ".join(problems))


def _first_of_each_backend():
    seen = {}
    for d in kiln.devices():
        seen.setdefault(d.backend, d)
    return list(seen.values())


DEVICES = _first_of_each_backend()


@pytest.fixture(params=DEVICES, ids=[d.backend for d in DEVICES])
def device(request):
    """The first device of each backend kiln found (the CPU always)."""
    return request.param


def pytest_report_header(config):
    return "kiln devices: " + ", ".join(f"{d.backend}: {d.name}" for d in kiln.devices())
