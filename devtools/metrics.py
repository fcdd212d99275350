"""Reading a process's Prometheus ``/metrics`` text: what the tests and the benchmarks ask
of it in more than one place."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def gc_collections(text: str) -> dict[str, float]:
    """``python_gc_collections_total`` per generation (``"0"`` young .. ``"2"`` full)."""
    return {
        sample.labels["generation"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "python_gc_collections_total"
    }
