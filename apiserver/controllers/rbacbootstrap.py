"""Creates the bootstrap RBAC policy at start, and reconciles what is already stored.

Like kube-apiserver's RBAC bootstrap: each missing role or binding is created; one that
exists and allows auto-update gets back what the bootstrap version adds (see
``apiserver.auth.rbac.bootstrap.reconcile``). Several replicas may do this at once: a
create that finds the object already there, or an update that loses a race, is tried again
against what is stored.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..auth.rbac.bootstrap import reconcile
from ..machinery import Registry, WriteOptions, errors

log = logging.getLogger("apiserver.controllers.rbacbootstrap")
MANAGER = "rbac-bootstrap"
_ATTEMPTS = 5


async def ensure_policy(
    objects: Sequence[dict[str, Any]], registries: Mapping[str, Registry]
) -> list[str]:
    """Create or reconcile each object (``registries`` by kind); ``kind/name`` of each write."""
    written = []
    options = WriteOptions(field_manager=MANAGER)
    for wanted in objects:
        registry = registries[wanted["kind"]]
        name = wanted["metadata"]["name"]
        for _ in range(_ATTEMPTS):
            try:
                await registry.create(None, copy.deepcopy(wanted), options)
                written.append(f"{wanted['kind']}/{name}")
                log.info("created %s %s", wanted["kind"], name)
                break
            except errors.StatusError as err:
                if err.code != 409:
                    raise
            try:
                current = await registry.get(None, name)
            except errors.StatusError as err:
                if err.code == 404:
                    continue  # deleted meanwhile: create it again
                raise
            updated = reconcile(current.obj, wanted)
            if updated is None:
                break
            try:
                await registry.update(None, name, updated, options)
            except errors.StatusError as err:
                if err.code == 409:
                    continue
                raise
            written.append(f"{wanted['kind']}/{name}")
            log.info("reconciled %s %s", wanted["kind"], name)
            break
    return written
