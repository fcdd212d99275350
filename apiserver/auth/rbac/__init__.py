"""Role-based access control: the rules, the index of roles and bindings, the authorizer,
and the bootstrap policy a standalone server starts with."""

from .authorizer import RBACAuthorizer, RuleSet, applies_to
from .index import RBACIndex
from .rules import Rule, rule_allows

__all__ = ["RBACAuthorizer", "RBACIndex", "Rule", "RuleSet", "applies_to", "rule_allows"]
