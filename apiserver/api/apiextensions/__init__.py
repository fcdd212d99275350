"""``apiextensions.k8s.io`` types.

The group's face: other layers import from here, never from its modules."""

from .customresourcedefinition import CustomResourceDefinition

__all__ = ["CustomResourceDefinition"]
