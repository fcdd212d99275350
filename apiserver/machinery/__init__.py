"""Generic Kubernetes REST semantics (DESIGN §4), written once and driven by a per-kind strategy."""
