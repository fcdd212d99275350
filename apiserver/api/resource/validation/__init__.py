"""Validation of ``resource.k8s.io`` kinds: pure functions from typed objects to field errors."""
