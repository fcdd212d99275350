"""The ResourceClaim controller of standalone mode, as kube-controller-manager runs it.

For a pod:
* each ``spec.resourceClaims`` entry with a ``resourceClaimTemplateName`` gets a claim made
  from that template (``generateName`` ``<pod>-<entry>-``, the template's labels and
  annotations, an owner reference to the pod as its controller, and the annotation
  ``resource.kubernetes.io/pod-claim-name``), and the pod's
  ``status.resourceClaimStatuses`` names it; a claim already made for the entry (found by
  owner and annotation) is named instead of making a second one.

For a claim:
* ``status.reservedFor`` loses every pod that is gone (or replaced under the same name) or
  done (phase Succeeded or Failed, or deleted before it was scheduled);
* when that leaves nobody, the allocation is cleared: the transition from "in use" to "not
  used" deallocates, so a claim allocated and never reserved is left alone (as upstream,
  which may not assume that a driver sets both together);
* a claim made for a pod that is gone, replaced or done, and that nobody uses, is deleted
  (uid precondition). Kubernetes leaves a vanished owner to its garbage collector; there is
  none here, so this controller does that part too.

In aggregated mode the cluster's own controller does all of this; it is not run there.
"""

from __future__ import annotations

import logging

from ..kinds.pod import PodStrategy
from ..kinds.resourceclaim import ResourceClaimStrategy
from ..machinery import DeleteOptions, Registry, StatusUpdate, WriteOptions, errors
from ..sources import Source, SourceEvent
from ..storage import EventType
from ..tasks import BackgroundTask
from ..toolkit import JSON, CoalescingQueue, TokenBucket, run_worker

log = logging.getLogger("apiserver.controllers.resourceclaims")

MANAGER = "resourceclaim-controller"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
"""Annotation on a claim made from a template: the pod's entry it was made for."""
_POD = "pod:"
_CLAIM = "claim:"
_GENERATE_NAME_MAX = 58
"""generateName is at most this long, so the name with its random suffix stays a valid
name (as upstream's controller truncates)."""


def pod_is_done(pod: JSON) -> bool:
    """The pod will not run (again): it finished, or it was deleted before it was scheduled."""
    phase = (pod.get("status") or {}).get("phase")
    deleted = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    return phase in ("Succeeded", "Failed") or (
        deleted and not (pod.get("spec") or {}).get("nodeName")
    )


def owning_pod(claim: JSON) -> tuple[str, str] | None:
    """(name, uid) of the pod a claim was made for, from its controller reference."""
    for ref in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if (
            isinstance(ref, dict)
            and ref.get("controller")
            and ref.get("kind") == "Pod"
            and ref.get("apiVersion") == "v1"
        ):
            return str(ref.get("name", "")), str(ref.get("uid", ""))
    return None


def _consumer_uids(claim: JSON) -> set[str]:
    """The uids of the pods a claim names: those in ``reservedFor`` and its owner."""
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    uids = {str(r.get("uid")) for r in reserved if isinstance(r, dict) and r.get("uid")}
    owner = owning_pod(claim)
    if owner is not None and owner[1]:
        uids.add(owner[1])
    return uids


def generate_name(pod: str, entry: str) -> str:
    """``<pod>-<entry>-``, each part cut to half the room when together they are too long."""
    if len(pod) + len(entry) + 2 > _GENERATE_NAME_MAX:
        half = (_GENERATE_NAME_MAX - 2) // 2
        pod, entry = pod[:half], entry[:half]
    return f"{pod}-{entry}-"


class ResourceClaimController:
    def __init__(
        self,
        pods: Source,
        claims: Source,
        pods_registry: Registry,
        claims_registry: Registry,
        templates_registry: Registry,
        *,
        interval: float = 0.05,
        rate: float = 100.0,
        burst: int = 200,
    ) -> None:
        """``pods``: a source this controller starts and closes; ``claims``: the cluster's
        claim source (started by the cluster); the registries write pods' status, claims,
        and read templates."""
        self.pods = pods
        self.claims = claims
        self.pod_registry = pods_registry
        self.claim_registry = claims_registry
        self.template_registry = templates_registry
        self.pod_status = StatusUpdate(PodStrategy.core())
        self.claim_status = StatusUpdate(ResourceClaimStrategy.upstream())
        self.queue = CoalescingQueue(interval)
        self.bucket = TokenBucket(rate, burst)
        self._task = BackgroundTask("resourceclaim controller", self._run, log)
        self._consumers: dict[str, set[str]] | None = None
        """See ``_consumed_by``."""
        pods.add_handler(self._on_pod)
        claims.add_handler(self._on_claim)

    # -- events ----------------------------------------------------------------------

    def _on_pod(self, event: SourceEvent) -> None:
        namespace = (event.obj.get("metadata") or {}).get("namespace") or "default"
        if event.type is not EventType.DELETED:
            self.queue.add(_POD + event.key)
        # The claims this pod uses or owns may have lost their consumer.
        uid = str((event.obj.get("metadata") or {}).get("uid") or "")
        for key in sorted(self._consumed_by().get(uid, ())):
            if key.startswith(namespace + "/"):
                self.queue.add(_CLAIM + key)

    def _consumed_by(self) -> dict[str, set[str]]:
        """Per pod uid, the keys of the claims that name it (``reservedFor``, owner), made
        from the claim cache when first asked and kept by ``_on_claim`` from then on, so a
        pod's event costs a look-up rather than a walk of every claim."""
        if self._consumers is None:
            self._consumers = {}
            for claim in self.claims.items():
                meta = claim.get("metadata") or {}
                key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                for uid in _consumer_uids(claim):
                    self._consumers.setdefault(uid, set()).add(key)
        return self._consumers

    def _on_claim(self, event: SourceEvent) -> None:
        if self._consumers is not None:
            gone = _consumer_uids(event.old) if event.old is not None else set()
            if event.type is EventType.DELETED:
                gone |= _consumer_uids(event.obj)  # the last state known
            for uid in gone:
                keys = self._consumers.get(uid)
                if keys is not None:
                    keys.discard(event.key)
                    if not keys:
                        del self._consumers[uid]
            if event.type is not EventType.DELETED:
                for uid in _consumer_uids(event.obj):
                    self._consumers.setdefault(uid, set()).add(event.key)
        if event.type is not EventType.DELETED:
            self.queue.add(_CLAIM + event.key)
        owner = owning_pod(event.obj)
        if owner is not None:
            namespace = (event.obj.get("metadata") or {}).get("namespace") or "default"
            self.queue.add(_POD + f"{namespace}/{owner[0]}")

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        await self.pods.start()
        self._task.start()

    async def close(self) -> None:
        await self._task.close()
        await self.pods.close()

    def readiness(self) -> dict[str, bool]:
        return {"informer-pods": self.pods.has_synced}

    async def _run(self) -> None:
        await self.pods.wait_synced()
        await self.claims.wait_synced()
        await run_worker(self.queue, self.bucket, self.sync, self._failed)

    def _failed(self, key: str, exc: Exception) -> None:
        log.warning("%s: %s; retrying", key, exc)
        self.queue.add(key)

    async def sync(self, key: str) -> None:
        if key.startswith(_POD):
            await self.sync_pod(key.removeprefix(_POD))
        else:
            await self.sync_claim(key.removeprefix(_CLAIM))

    # -- pods ------------------------------------------------------------------------

    async def sync_pod(self, key: str) -> None:
        """Make the claims of the pod's templates that are not made yet, and name them in
        the pod's status."""
        pod = self.pods.get(key)
        if pod is None or pod_is_done(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        meta = pod["metadata"]
        namespace = str(meta.get("namespace") or "default")
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        named = {s.get("name") for s in statuses if isinstance(s, dict)}
        added = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            template = entry.get("resourceClaimTemplateName") if isinstance(entry, dict) else None
            if not template or entry.get("name") in named:
                continue
            claim = self._made_for(pod, str(entry["name"])) or await self._make_claim(
                pod, str(entry["name"]), str(template)
            )
            added.append({"name": entry["name"], "resourceClaimName": claim})
        if not added:
            return
        updated = {**pod, "status": {**(pod.get("status") or {})}}
        updated["status"]["resourceClaimStatuses"] = statuses + added
        await self.pod_registry.update(
            namespace,
            str(meta["name"]),
            updated,
            WriteOptions(field_manager=MANAGER),
            update=self.pod_status,
        )
        log.info("pod %s: claims %s", key, ", ".join(a["resourceClaimName"] for a in added))

    def _made_for(self, pod: JSON, entry: str) -> str | None:
        """The claim already made for this pod's ``entry``, if any (a status write lost)."""
        meta = pod["metadata"]
        for claim in self.claims.items():
            claim_meta = claim.get("metadata") or {}
            if (
                claim_meta.get("namespace") == meta.get("namespace")
                and owning_pod(claim) == (meta.get("name"), meta.get("uid"))
                and (claim_meta.get("annotations") or {}).get(POD_CLAIM_NAME) == entry
            ):
                return str(claim_meta["name"])
        return None

    async def _make_claim(self, pod: JSON, entry: str, template_name: str) -> str:
        meta = pod["metadata"]
        namespace = str(meta.get("namespace") or "default")
        template = await self.template_registry.get(namespace, template_name)
        spec = template.obj.get("spec") or {}
        template_meta = spec.get("metadata") or {}
        claim = {
            "apiVersion": self.claim_registry.resource.group_version,
            "kind": self.claim_registry.resource.kind,
            "metadata": {
                "generateName": generate_name(str(meta["name"]), entry),
                "namespace": namespace,
                "labels": dict(template_meta.get("labels") or {}),
                "annotations": {
                    **(template_meta.get("annotations") or {}),
                    POD_CLAIM_NAME: entry,
                },
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec.get("spec") or {},
        }
        result = await self.claim_registry.create(
            namespace, claim, WriteOptions(field_manager=MANAGER)
        )
        return str(result.obj.obj["metadata"]["name"])

    # -- claims ----------------------------------------------------------------------

    async def sync_claim(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        meta = claim["metadata"]
        namespace = str(meta.get("namespace") or "default")
        status = claim.get("status") or {}
        reserved = [r for r in status.get("reservedFor") or [] if isinstance(r, dict)]
        valid = [r for r in reserved if not self._pod_gone(namespace, r)]
        if len(valid) < len(reserved):
            await self._prune(claim, valid)
            return  # the write comes back as an event, and the claim is looked at again
        if not valid and self._owner_gone(claim):
            try:
                await self.claim_registry.delete(
                    namespace, str(meta["name"]), DeleteOptions(precondition_uid=meta.get("uid"))
                )
            except errors.StatusError as err:
                if err.code not in (404, 409):
                    raise
                return
            log.info("claim %s deleted: the pod it was made for is gone", key)

    def _pod_gone(self, namespace: str, ref: JSON) -> bool:
        if ref.get("resource") != "pods" or ref.get("apiGroup"):
            return False  # a consumer of another kind: not this controller's to judge
        pod = self.pods.get(f"{namespace}/{ref.get('name')}")
        return (
            pod is None or (pod.get("metadata") or {}).get("uid") != ref.get("uid")
        ) or pod_is_done(pod)

    def _owner_gone(self, claim: JSON) -> bool:
        owner = owning_pod(claim)
        if owner is None:
            return False
        namespace = (claim.get("metadata") or {}).get("namespace") or "default"
        pod = self.pods.get(f"{namespace}/{owner[0]}")
        return pod is None or (pod.get("metadata") or {}).get("uid") != owner[1] or pod_is_done(pod)

    async def _prune(self, claim: JSON, valid: list[JSON]) -> None:
        meta = claim["metadata"]
        status = dict(claim.get("status") or {})
        status["reservedFor"] = valid
        if not valid:
            status.pop("reservedFor")
            # In use until now, unused from now: deallocate, so the devices are free again
            # and the next consumer is not bound to the node chosen for the last one.
            status.pop("allocation", None)
            status.pop("devices", None)
        # The stored resourceVersion is the precondition: a concurrent write wins, and
        # the claim is looked at again from its event.
        await self.claim_registry.update(
            str(meta.get("namespace") or "default"),
            str(meta["name"]),
            {**claim, "status": status},
            WriteOptions(field_manager=MANAGER),
            update=self.claim_status,
        )
        log.info(
            "claim %s/%s: %d consumer(s) left%s",
            meta.get("namespace"),
            meta["name"],
            len(valid),
            "" if valid else ", deallocated",
        )
