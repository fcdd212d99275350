"""Bind: allocate the pod's claims on the chosen node, wait for fabric devices to be
attached (KEP-5007), then bind the pod.

0. The pod is the one this shim's filter was given in the same scheduling cycle, as
   kube-scheduler binds from its cache rather than a fresh read; it is read only when this
   shim did not filter it (another replica did, or the cycle is older than
   ``CYCLE_SECONDS``). A pod read already bound to the chosen node is done: a repeated
   Bind (kube-scheduler retries one whose answer timed out) succeeds and changes nothing;
   one bound elsewhere fails the bind, and nothing is touched. A pod the filter saw
   unbound but bound since meets the binding's conflict in step 4, read as the same two
   cases (its claims are allocated already, so the bind wrote none).
1. A reserving AllocationReview of the pod's unallocated claims on the chosen node holds
   the devices it picks while they are written; an answer without a ``reservation`` (the
   devices could not be held) fails the bind: only held devices are committed. The claims
   are read first to tell which are unallocated, unless the filter's review of this cycle
   read every one unallocated: then the reserving review's reading of each (its
   ``status.claims``) stands in for reading it; if it read one allocated (since the filter:
   a repeated bind, a shared claim), what it held is let go and the claims are read.
2. Each claim's ``status.allocation`` and ``reservedFor`` (the pod) are written with the
   claim's resourceVersion as precondition; a conflict reads the claim again, and a claim
   another pod allocated meanwhile fails the bind. A claim allocated already (shared) only
   gains the pod in ``reservedFor``.
3. A device that must be attached — one the reserving review's answer lists in
   ``needsAttaching`` (a fabric device with ``kubernetes.io/needs-attaching: true`` in the
   device view) or one with upstream ``bindingConditions`` — is listed in
   ``status.devices`` with its node and ``kubernetes.io/needs-attaching=True``, in the same
   write. The bind then waits, by watching the claims, until every such device is
   attached (``kubernetes.io/is-attached=True``, or all its binding conditions) or one
   failed (``kubernetes.io/attach-failed=True``, or a binding failure condition), or the
   attach timeout passes.
4. The pod is bound through ``pods/binding``.

Once the allocations are stored the server releases the reservation itself, when its
caches show the claims holding the devices (so no review sees them free in between); a
bind that fails deletes its reservation at once. On failure the claims' allocations and
the pod's place in ``reservedFor`` are removed (a claim left with no consumer is
deallocated), and the error is the extender's answer, unless the pod is bound by then (a
concurrent bind of the same pod): no path deallocates a claim whose pod is bound. The attach state lives in the claim: a bind retried
after the shim restarted waits for the devices the claim still lists as needing attaching
to its node, and fails at once, leaving the claim as it is, on any other node.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..api.resource.resourceclaim import ATTACH_FAILED, IS_ATTACHED, NEEDS_ATTACHING
from ..kubeclient import APIError, ClientEventRecorder, Collection, KubeClient, ListWatch
from ..toolkit import JSON, Backoff
from ..toolkit.timestamps import now_rfc3339
from .claims import pod_claims, pod_namespace
from .extender import BindArgs
from .metrics import ShimMetrics
from .paths import UPSTREAM_VERSION, Paths
from .scheduling import FilterMemory, Remembered, review, why_infeasible

log = logging.getLogger(__name__)

CONFLICT_RETRIES = 10
ATTACH_TIMEOUT = 600.0
ATTACH_RETRY_MAX = 5.0
"""The longest wait before the claims are read again after a failed list or watch."""
COMPONENT = "dra-scheduler-shim"
"""Who the Events about attach waits name as their source."""


class BindFailure(Exception):
    """Why a bind cannot go on; the extender's ``Error``."""


class AttachTimedOut(BindFailure):
    """No device waited for was attached, nor failed, within the attach timeout."""


@dataclass(frozen=True)
class AttachWait:
    """One allocated device the bind waits for, and the conditions that end the wait."""

    claim: str
    driver: str
    pool: str
    device: str
    share_id: str | None
    ready: tuple[str, ...]
    """All must be True to go on."""
    failed: tuple[str, ...]
    """Any True fails the bind."""

    def matches(self, entry: JSON) -> bool:
        return (
            entry.get("driver") == self.driver
            and entry.get("pool") == self.pool
            and entry.get("device") == self.device
            and entry.get("shareID") == self.share_id
        )

    def status_entry(self, node: str) -> JSON:
        entry: JSON = {"driver": self.driver, "pool": self.pool, "device": self.device}
        if self.share_id:
            entry["shareID"] = self.share_id
        entry["nodeName"] = node
        entry["conditions"] = [
            {
                "type": NEEDS_ATTACHING,
                "status": "True",
                "lastTransitionTime": now_rfc3339(),
                "reason": "AttachRequested",
                "message": f"the device must be attached to node {node} before the pod binds",
            }
        ]
        return entry


def _outcome(claim: JSON, waits: list[AttachWait]) -> str | None:
    """``""`` when every device of ``waits`` in ``claim`` is attached, a message when one
    failed, None while still waiting."""
    entries = (claim.get("status") or {}).get("devices") or []
    done = True
    for wait in waits:
        entry = next((e for e in entries if isinstance(e, dict) and wait.matches(e)), None)
        true = {
            c.get("type")
            for c in (entry or {}).get("conditions") or []
            if isinstance(c, dict) and c.get("status") == "True"
        }
        failed = [t for t in wait.failed if t in true]
        if failed:
            return (
                f"device {wait.driver}/{wait.pool}/{wait.device} of claim {wait.claim}: {failed[0]}"
            )
        done = done and all(t in true for t in wait.ready)
    return "" if done else None


@dataclass
class _Done:
    """What a bind has done so far, for its undo."""

    reservation: str = ""
    written: list[str] = field(default_factory=list)
    """Claims whose allocation this bind wrote."""
    joined: list[str] = field(default_factory=list)
    """Allocated claims this bind added the pod to."""
    committed: bool = False


@dataclass
class _Chosen:
    """The reserving review's answer: each fresh claim's allocation, the devices that must
    be attached, and each claim as the review read it."""

    allocations: dict[str, JSON] = field(default_factory=dict)
    attach: set[tuple[str, str, str]] = field(default_factory=set)
    read: dict[str, JSON] = field(default_factory=dict)
    allocated_since: bool = False
    """The review read a claim allocated that the filter had read unallocated."""


def _allocated(claim: JSON) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def _as_read(namespace: str, names: list[str], reviewed: list[JSON]) -> dict[str, JSON] | None:
    """Each claim as the review read it (``status.claims``), for its status write: the
    object's identity and resourceVersion, and an empty status (the claim was unallocated,
    and an unallocated claim's status holds nothing). A write pinned to that version meets
    a conflict if the claim changed since, and then reads it. None when the review read
    one allocated (after the filter saw it unallocated). A claim the answer does not list
    is left out (read instead)."""
    by_name = {str(c.get("name")): c for c in reviewed if c.get("namespace") == namespace}
    out: dict[str, JSON] = {}
    for name in names:
        seen = by_name.get(name)
        if seen is None or not seen.get("resourceVersion"):
            continue
        if seen.get("allocated"):
            return None
        meta = {"namespace": namespace, "name": name, "uid": seen.get("uid")}
        meta["resourceVersion"] = seen["resourceVersion"]
        out[name] = {"apiVersion": UPSTREAM_VERSION, "kind": "ResourceClaim", "metadata": meta}
        out[name]["status"] = {}
    return out


class Binder:
    """The extender's bind verb."""

    def __init__(
        self,
        api: KubeClient,
        paths: Paths,
        *,
        attach_timeout: float = ATTACH_TIMEOUT,
        metrics: ShimMetrics | None = None,
        filtered: FilterMemory | None = None,
    ):
        """``filtered``: the filter's memory of the pods it was given."""
        self.api = api
        self.paths = paths
        self.attach_timeout = attach_timeout
        self.metrics = metrics if metrics is not None else ShimMetrics()
        self.events = ClientEventRecorder(api, COMPONENT)
        self.filtered = filtered

    async def bind(self, args: BindArgs) -> str:
        """``""`` once the pod is bound, else why not (and nothing of the bind is left)."""
        namespace, node = args.pod_namespace, args.node
        filtered = self._filtered(args)
        pod = filtered.pod if filtered is not None else None
        if pod is None:
            try:
                pod = await self.api.get(self.paths.pod(namespace, args.pod_name))
            except APIError as err:
                return f"reading pod {namespace}/{args.pod_name}: {err}"
        uid = str(pod["metadata"].get("uid") or "")
        if args.pod_uid and args.pod_uid != uid:
            return f"pod {namespace}/{args.pod_name} has uid {uid}, not {args.pod_uid}"
        bound = _bound_to(pod)
        if bound == node:
            return ""  # a repeated bind: done already
        if bound:
            return f'pod {namespace}/{args.pod_name} is already assigned to node "{bound}"'
        done = _Done()
        try:
            claims = pod_claims(pod)
            if claims.pending:
                raise BindFailure(f"claims not made yet for {', '.join(claims.pending)}")
            # The filter's review read every claim unallocated: the reserving review's
            # reading of them stands in for reading each claim.
            stand_in = filtered is not None and filtered.unallocated
            current, chosen = await self._claims_and_choice(args, claims.names, done, stand_in)
            waits = await self._write_claims(pod, current, chosen, node, done)
            if waits:
                await self._wait_told(pod, list(current.values()), waits, node)
            await self._bind_pod(namespace, args.pod_name, uid, node)
            done.committed = True
        except (BindFailure, APIError) as err:
            log.info("bind of %s/%s to %s failed: %s", namespace, args.pod_name, node, err)
            await self._undo(namespace, args.pod_name, uid, done.written, done.joined)
            return str(err)
        finally:
            if done.reservation and not done.committed:
                await self._release(done.reservation)
        return ""

    def _filtered(self, args: BindArgs) -> Remembered | None:
        """What this shim's filter was given and answered in this scheduling cycle, if it
        filtered this pod."""
        if self.filtered is None or not args.pod_uid:
            return None
        found = self.filtered.of_cycle(args.pod_uid)
        if found is None:
            return None
        name = (found.pod.get("metadata") or {}).get("name")
        same = (name, pod_namespace(found.pod)) == (args.pod_name, args.pod_namespace)
        return found if same else None

    async def _claims_and_choice(
        self, args: BindArgs, names: list[str], done: _Done, stand_in: bool
    ) -> tuple[dict[str, JSON], _Chosen]:
        """The pod's claims as read, and the reserving review's choice for the unallocated
        ones (none without any); with ``stand_in``, the reserving review's reading of the
        claims instead of reading them first."""
        namespace, node = args.pod_namespace, args.node
        if stand_in:
            chosen = await self._reserve(namespace, names, node, done, stand_in=True)
            if not chosen.allocated_since:
                return {
                    n: chosen.read.get(n) or await self.api.get(self.paths.claim(namespace, n))
                    for n in names
                }, chosen
            # Allocated since the filter read them (a repeated bind, or a shared claim):
            # what this review held is let go, and the claims are read.
            if done.reservation:
                await self._release(done.reservation)
                done.reservation = ""
        current = {n: await self.api.get(self.paths.claim(namespace, n)) for n in names}
        fresh = [n for n, c in current.items() if not _allocated(c)]
        if not fresh:
            return current, _Chosen()
        return current, await self._reserve(namespace, fresh, node, done)

    async def _reserve(
        self, namespace: str, fresh: list[str], node: str, done: _Done, *, stand_in: bool = False
    ) -> _Chosen:
        """A reserving review of the unallocated claims on the node: their allocations and
        the devices to attach, held in the reservation named in ``done``; with
        ``stand_in``, each claim as the review read it (``_Chosen.read``), or only that it
        read one of them allocated."""
        status = await review(self.api, self.paths, namespace, fresh, [node], reserve=True)
        done.reservation = str((status.get("reservation") or {}).get("name") or "")
        read: dict[str, JSON] = {}
        if stand_in:
            found = _as_read(namespace, fresh, status.get("claims") or [])
            if found is None:
                return _Chosen(allocated_since=True)
            read = found
        entry = next((e for e in status.get("nodes") or [] if e.get("nodeName") == node), None)
        if entry is None or not entry.get("feasible"):
            why = why_infeasible(entry or {})
            raise BindFailure(f"the claims cannot be allocated on node {node}: {why}")
        if not done.reservation:
            raise BindFailure(f"the devices for the claims on node {node} could not be held; retry")
        return _Chosen(
            dict(zip(fresh, entry.get("allocations") or [], strict=True)),
            {_device_id(d) for d in entry.get("needsAttaching") or []},
            read,
        )

    async def _write_claims(
        self, pod: JSON, current: dict[str, JSON], chosen: _Chosen, node: str, done: _Done
    ) -> list[AttachWait]:
        """Each claim's allocation (a fresh one) or the pod's place in ``reservedFor`` (one
        allocated already), noted in ``done``; the devices the bind must wait for."""
        namespace = pod["metadata"].get("namespace") or "default"
        waits: list[AttachWait] = []
        for name, read in current.items():
            allocation = chosen.allocations.get(name)
            if allocation is not None:
                devices = _attach_waits(name, allocation, chosen.attach)
                await self._write_allocation(namespace, name, pod, allocation, devices, node, read)
                done.written.append(name)
                waits += devices
            else:
                elsewhere = _attached_elsewhere(name, read, node)
                if elsewhere:
                    raise BindFailure(elsewhere)
                stored = await self._join(namespace, name, pod, read)
                done.joined.append(name)
                waits += _attach_requested(name, stored, node)
        return waits

    # -- the steps -------------------------------------------------------------------------

    async def _bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        """``pods/binding``; a conflict because the pod is bound to ``node`` already (a
        concurrent bind of the same pod won) is success."""
        try:
            await self.api.create(
                f"{self.paths.pod(namespace, name)}/binding",
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name, "namespace": namespace, "uid": uid},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                },
            )
        except APIError as err:
            if err.code != 409 or await self._bound(namespace, name) != node:
                raise

    async def _update_claim(
        self, namespace: str, name: str, change: Callable[[JSON], None], read: JSON | None = None
    ) -> JSON:
        """Read, change, write the claim's status; a lost race reads again. ``read``: the
        claim as this bind read it already, tried first (its resourceVersion is the
        precondition, so a stale copy costs a conflict and a read, never a lost write)."""
        path = f"{self.paths.claim(namespace, name)}/status"
        for _ in range(CONFLICT_RETRIES):
            if read is not None:
                claim, read = copy.deepcopy(read), None
            else:
                claim = await self.api.get(self.paths.claim(namespace, name))
            change(claim)
            try:
                return await self.api.update(path, claim)
            except APIError as err:
                if err.code != 409:
                    raise
        raise BindFailure(f"claim {namespace}/{name} kept changing; gave up writing it")

    async def _write_allocation(
        self,
        namespace: str,
        name: str,
        pod: JSON,
        allocation: JSON,
        waits: list[AttachWait],
        node: str,
        read: JSON,
    ) -> None:
        def change(claim: JSON) -> None:
            status = claim.setdefault("status", {})
            if status.get("allocation"):
                raise BindFailure(f"claim {namespace}/{name} was allocated meanwhile")
            status["allocation"] = dict(allocation)
            if waits:
                status["allocation"].setdefault("allocationTimestamp", now_rfc3339())
                status["devices"] = [
                    *(status.get("devices") or []),
                    *(w.status_entry(node) for w in waits),
                ]
            status["reservedFor"] = [*(status.get("reservedFor") or []), _consumer(pod)]

        await self._update_claim(namespace, name, change, read)

    async def _join(self, namespace: str, name: str, pod: JSON, read: JSON) -> JSON:
        uid = pod["metadata"].get("uid")

        def change(claim: JSON) -> None:
            status = claim.setdefault("status", {})
            if not status.get("allocation"):
                raise BindFailure(f"claim {namespace}/{name} was deallocated meanwhile")
            users = status.get("reservedFor") or []
            if not any(u.get("uid") == uid for u in users):
                status["reservedFor"] = [*users, _consumer(pod)]

        return await self._update_claim(namespace, name, change, read)

    async def _wait_told(
        self, pod: JSON, claims: list[JSON], waits: list[AttachWait], node: str
    ) -> None:
        """Wait for the attach, telling it on the pod and on the claims waited for, as
        Events: the wait beginning, and a failure or a timeout."""
        about = [pod, *(c for c in claims if c["metadata"]["name"] in {w.claim for w in waits})]
        devices = ", ".join(f"{w.driver}/{w.pool}/{w.device}" for w in waits)
        await self._tell(
            about,
            "Normal",
            "WaitingForAttach",
            f"waiting up to {self.attach_timeout:g} s for {devices} to be attached to node {node}",
        )
        try:
            await self._wait_attached(pod["metadata"].get("namespace") or "default", waits)
        except AttachTimedOut as err:
            await self._tell(about, "Warning", "AttachTimeout", str(err))
            raise
        except BindFailure as err:
            await self._tell(about, "Warning", "AttachFailed", str(err))
            raise

    async def _tell(self, about: list[JSON], event_type: str, reason: str, message: str) -> None:
        for obj in about:
            try:
                await self.events.record(obj, reason, reason, message, event_type)
            except APIError as err:  # an Event is worth a try, never a failed bind
                log.warning(
                    "recording %s about %s failed: %s", reason, obj["metadata"]["name"], err
                )

    async def _wait_attached(self, namespace: str, waits: list[AttachWait]) -> None:
        """Watch the claims until every device waited for is attached, or one failed."""
        by_claim: dict[str, list[AttachWait]] = {}
        for wait in waits:
            by_claim.setdefault(wait.claim, []).append(wait)
        try:
            with self.metrics.attach_wait():
                async with asyncio.timeout(self.attach_timeout):
                    await self._watch_until_attached(namespace, by_claim)
        except TimeoutError:
            raise AttachTimedOut(
                f"timed out after {self.attach_timeout:g} s waiting for"
                f" {', '.join(f'{w.driver}/{w.pool}/{w.device}' for w in waits)} to be attached"
            ) from None

    async def _watch_until_attached(
        self, namespace: str, by_claim: dict[str, list[AttachWait]]
    ) -> None:
        """List and watch the namespace's claims (resumed after a dropped watch, listed
        again after a 410, with a backoff between failures) until no device is waited for;
        a failed attach or a deleted claim raises ``BindFailure``."""
        pending = set(by_claim)
        failure: list[BindFailure] = []

        def seen(claim: JSON) -> None:
            name = claim.get("metadata", {}).get("name")
            if name not in pending:
                return
            outcome = _outcome(claim, by_claim[name])
            if outcome:
                failure.append(BindFailure(f"attaching failed: {outcome}"))
            if outcome == "":
                pending.discard(name)

        async def listed(claims: list[JSON]) -> None:
            for claim in claims:
                seen(claim)
            finish()

        async def changed(kind: str, claim: JSON) -> None:
            name = claim.get("metadata", {}).get("name")
            if kind == "DELETED" and name in pending:
                failure.append(BindFailure(f"claim {namespace}/{name} was deleted"))
            elif kind != "DELETED":
                seen(claim)
            finish()

        def finish() -> None:
            if failure or not pending:
                claims.stop()

        claims = ListWatch(
            Collection(self.api, self.paths.claims(namespace)),
            name=f"claims of {namespace}",
            on_list=listed,
            on_event=changed,
            log=log,
            backoff=Backoff(initial=0.1, maximum=ATTACH_RETRY_MAX),
        )
        await claims.run()
        if failure:
            raise failure[0]

    async def _bound(self, namespace: str, name: str) -> str:
        """The node the pod is bound to now ("" when unbound, or unreadable)."""
        try:
            return _bound_to(await self.api.get(self.paths.pod(namespace, name)))
        except APIError as err:
            log.warning("reading pod %s/%s failed: %s", namespace, name, err)
            return ""

    async def _undo(
        self, namespace: str, pod: str, uid: str, written: list[str], joined: list[str]
    ) -> None:
        """Take back what the bind wrote: the allocations it made, the pod's places; nothing
        if the pod is bound by now (its claims are in use)."""
        if (written or joined) and await self._bound(namespace, pod):
            log.warning("pod %s/%s is bound: its claims are left as they are", namespace, pod)
            return

        def deallocate(claim: JSON) -> None:
            status = claim.setdefault("status", {})
            for key in ("allocation", "reservedFor", "devices"):
                status.pop(key, None)

        def leave(claim: JSON) -> None:
            status = claim.setdefault("status", {})
            users = [u for u in status.get("reservedFor") or [] if u.get("uid") != uid]
            if users:
                status["reservedFor"] = users
            else:  # no one uses the claim: it is deallocated, as Kubernetes does
                deallocate(claim)

        for names, change in ((written, deallocate), (joined, leave)):
            for name in names:
                try:
                    await self._update_claim(namespace, name, change)
                except (APIError, BindFailure) as err:
                    log.warning("undoing the bind on claim %s/%s failed: %s", namespace, name, err)

    async def _release(self, reservation: str) -> None:
        try:
            await self.api.delete(self.paths.reservation(reservation))
        except APIError as err:
            if err.code != 404:
                log.warning("releasing reservation %s failed: %s", reservation, err)


def _wait_for(claim: str, result: JSON) -> AttachWait:
    """The wait for one allocated device: its own binding conditions if it has them, else
    ``kubernetes.io/is-attached``; ``kubernetes.io/attach-failed`` fails it either way."""
    ready = tuple(result.get("bindingConditions") or ()) or (IS_ATTACHED,)
    failed = tuple(dict.fromkeys((*(result.get("bindingFailureConditions") or ()), ATTACH_FAILED)))
    return AttachWait(
        claim,
        result["driver"],
        result["pool"],
        result["device"],
        result.get("shareID"),
        ready,
        failed,
    )


def _true(entry: JSON) -> set[str]:
    return {
        str(c.get("type"))
        for c in entry.get("conditions") or []
        if isinstance(c, dict) and c.get("status") == "True"
    }


def _attached_elsewhere(claim: str, stored: JSON, node: str) -> str:
    """Why an allocated claim cannot serve a pod on ``node``: a device of it is attached,
    or being attached, to another node (a bind retried after the shim restarted may be
    sent to any node the claim fits). A failed attach does not count: that bind reads the
    failure and clears the claim."""
    for entry in (stored.get("status") or {}).get("devices") or []:
        if not isinstance(entry, dict):
            continue
        true, target = _true(entry), entry.get("nodeName")
        if NEEDS_ATTACHING in true and ATTACH_FAILED not in true and target and target != node:
            device = f"{entry.get('driver')}/{entry.get('pool')}/{entry.get('device')}"
            return f"claim {claim}: device {device} is attached or being attached to node {target}"
    return ""


def _attach_requested(claim: str, stored: JSON, node: str) -> list[AttachWait]:
    """The devices an allocated claim still has listed as needing attaching to ``node``,
    or whose attach failed on any node: a bind that is retried (after the shim restarted,
    say) waits for them again, since the claim, not the shim, holds that state."""
    status = stored.get("status") or {}
    results = (status.get("allocation") or {}).get("devices", {}).get("results") or []
    waits = []
    for entry in status.get("devices") or []:
        true = _true(entry)
        if NEEDS_ATTACHING not in true:
            continue
        if entry.get("nodeName") != node and ATTACH_FAILED not in true:
            continue
        for result in results:
            wait = _wait_for(claim, result)
            if wait.matches(entry):
                waits.append(wait)
    return waits


def _bound_to(pod: JSON) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _consumer(pod: JSON) -> JSON:
    meta = pod["metadata"]
    return {"resource": "pods", "name": meta["name"], "uid": meta.get("uid")}


def _device_id(entry: JSON) -> tuple[str, str, str]:
    return (str(entry.get("driver")), str(entry.get("pool")), str(entry.get("device")))


def _attach_waits(
    claim: str, allocation: JSON, attach: set[tuple[str, str, str]]
) -> list[AttachWait]:
    """The devices of ``allocation`` that must be attached before the pod binds: those the
    review said need attaching (``attach``), and any with binding conditions."""
    return [
        _wait_for(claim, result)
        for result in (allocation.get("devices") or {}).get("results") or []
        if result.get("bindingConditions") or _device_id(result) in attach
    ]
