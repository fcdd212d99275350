"""Validation of core ``v1`` kinds."""
