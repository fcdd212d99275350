"""Authorizers asked in turn, and the two that answer without asking anyone.

Kubernetes' union authorizer: the first authorizer with an opinion (allow or deny) decides;
when none has one the request is refused with the reasons gathered. Delegated authorization
puts ``AlwaysAllowGroups`` (``system:masters``: the aggregator's availability probe is such a
user, and must not wait for a review) and ``AlwaysAllowPaths`` before the
SubjectAccessReview.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..machinery.user import MASTERS
from .authorizer import Authorization, Authorizer, Decision, RequestAttributes


class AuthorizerChain:
    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self.authorizers = list(authorizers)

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        reasons: list[str] = []
        for authorizer in self.authorizers:
            answer = await authorizer.authorize(attributes)
            if answer.decision is not Decision.NO_OPINION:
                return answer
            if answer.reason:
                reasons.append(answer.reason)
        return Authorization(Decision.NO_OPINION, ", ".join(reasons))


class AlwaysAllowGroups:
    def __init__(self, groups: Iterable[str] = (MASTERS,)) -> None:
        self.groups = frozenset(groups)

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        if self.groups.intersection(attributes.user.groups):
            return Authorization(Decision.ALLOW)
        return Authorization(Decision.NO_OPINION)


class AlwaysAllowPaths:
    """Non-resource paths anyone may use: exact paths, or prefixes written with a final ``*``."""

    def __init__(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        self.exact = frozenset(p for p in paths if not p.endswith("*"))
        self.prefixes = tuple(p[:-1] for p in paths if p.endswith("*"))

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        path = attributes.path
        if not attributes.resource_request and (
            path in self.exact or path.startswith(self.prefixes)
        ):
            return Authorization(Decision.ALLOW)
        return Authorization(Decision.NO_OPINION)
