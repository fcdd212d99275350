"""``apiextensions.k8s.io`` types."""
