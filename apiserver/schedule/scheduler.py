"""The scheduling loop: the pods that name this scheduler and have no node, each taken
through one cycle at a time — list the nodes, ``filter``, ``prioritize`` the nodes that
passed (skipped when only one did, as kube-scheduler skips scoring), pick the best score —
and then bound in the background (``bind`` may wait minutes for fabric devices to be
attached), so one slow bind holds up no other pod.

A cycle that finds no node, an extender that cannot be reached or answers an error, and a
failed bind all send the pod back after a per-pod backoff, as kube-scheduler's backoff
queue does, and each is told on the pod as kube-scheduler tells it: a Warning Event
``FailedScheduling`` with the reasons (one Event per pod, its count bumped on a repeat). The shim clears what a failed bind wrote, so the retry asks about the cluster
as it is now and may land elsewhere.

Ties: kube-scheduler picks at random among the best-scored nodes; here they are taken in
name order, one further on each attempt of the pod, so a retry after a failed bind tries
the next equally good node and the choice is reproducible.

Pods come from one list-then-watch (the client layer's ``ListWatch``) with the field
selector ``spec.schedulerName=<name>,spec.nodeName=``; a pod that is bound or deleted
leaves it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from ..kubeclient import APIError, ClientEventRecorder, Collection, KubeClient, ListWatch
from ..toolkit import JSON, Backoff, CoalescingQueue, TokenBucket, run_worker
from .extender import Extender, ExtenderError

log = logging.getLogger("apiserver.schedule")

NODES = "/api/v1/nodes"
PODS = "/api/v1/pods"


class Unschedulable(Exception):
    """No node fits the pod now."""


def best_node(scores: Mapping[str, int], attempt: int) -> str:
    """The node with the highest score; among equals, in name order, the one ``attempt``
    places further on."""
    top = max(scores.values())
    tied = sorted(n for n, s in scores.items() if s == top)
    return tied[attempt % len(tied)]


def _key(pod: JSON) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


class StandInScheduler:
    def __init__(
        self,
        api: KubeClient,
        extender: Extender,
        name: str,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        qps: float = 50.0,
    ) -> None:
        self.api = api
        self.extender = extender
        self.name = name
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.bucket = TokenBucket(qps, max(1, int(qps)))
        self.events = ClientEventRecorder(api, name)
        self.queue = CoalescingQueue(0.0)
        self.pods: dict[str, JSON] = {}
        """Pods waiting for a node, by namespace/name, as last seen."""
        self.attempts: dict[str, int] = {}
        self.backoffs: dict[str, Backoff] = {}
        self.retries: dict[str, asyncio.TimerHandle] = {}
        self.binding: dict[str, asyncio.Task[None]] = {}
        self.selector = f"spec.schedulerName={name},spec.nodeName="
        self.list_watch = ListWatch(
            Collection(api, PODS, field_selector=self.selector),
            name=f"pods of {name}",
            on_list=self._listed_pods,
            on_event=self._changed,
            log=log,
        )
        self._listed = False

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.list_watch.run())
            tasks.create_task(run_worker(self.queue, self.bucket, self._schedule, self._failed))

    # -- the pods ------------------------------------------------------------------------

    async def _listed_pods(self, pods: list[JSON]) -> None:
        seen = {_key(p): p for p in pods}
        for key in set(self.pods) - set(seen):
            self._gone(key)
        for key, pod in seen.items():
            self._seen(key, pod)
        if not self._listed:
            self._listed = True
            log.info("watching pods with spec.schedulerName=%s: %d waiting", self.name, len(seen))

    async def _changed(self, kind: str, pod: JSON) -> None:
        key = _key(pod)
        if kind == "DELETED" or (pod.get("spec") or {}).get("nodeName"):
            self._gone(key)
        else:
            self._seen(key, pod)

    def _seen(self, key: str, pod: JSON) -> None:
        new = key not in self.pods
        self.pods[key] = pod
        # A pod waiting out its backoff, or being bound, is not taken again because it
        # changed; a new one is taken at once.
        if new and key not in self.retries and key not in self.binding:
            self.queue.add(key)

    def _gone(self, key: str) -> None:
        self.pods.pop(key, None)
        self.queue.forget(key)
        self.attempts.pop(key, None)
        self.backoffs.pop(key, None)
        retry = self.retries.pop(key, None)
        if retry is not None:
            retry.cancel()

    # -- one cycle -----------------------------------------------------------------------

    async def _schedule(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or key in self.binding:
            return
        try:
            await self._cycle(key, pod)
        except (Unschedulable, ExtenderError) as err:
            await self._failed_scheduling(pod, str(err))
            raise

    async def _failed_scheduling(self, pod: JSON, message: str) -> None:
        try:
            await self.events.warn(pod, "FailedScheduling", "FailedScheduling", message)
        except APIError as err:
            log.warning("pod %s: the FailedScheduling event was not written: %s", _key(pod), err)

    async def _cycle(self, key: str, pod: JSON) -> None:
        nodes = (await self.api.get(NODES)).get("items") or []
        if not nodes:
            raise Unschedulable("0 nodes are available")
        filtered = await self.extender.filter(pod, nodes)
        if not filtered.fits:
            why = "; ".join(f"{n}: {r}" for n, r in sorted(filtered.failed.items()))
            raise Unschedulable(f"0/{len(nodes)} nodes are available: {why}")
        fits = set(filtered.fits)
        fitting = [n for n in nodes if n["metadata"]["name"] in fits]
        if len(fitting) == 1:
            scores = {fitting[0]["metadata"]["name"]: 0}
        else:
            answered = await self.extender.prioritize(pod, fitting)
            scores = {
                n["metadata"]["name"]: answered.get(n["metadata"]["name"], 0) for n in fitting
            }
        attempt = self.attempts.get(key, 0)
        self.attempts[key] = attempt + 1
        node = best_node(scores, attempt)
        log.info("pod %s: binding to %s (scores %s)", key, node, dict(sorted(scores.items())))
        self.binding[key] = asyncio.create_task(self._bind(key, pod, node))

    async def _bind(self, key: str, pod: JSON, node: str) -> None:
        try:
            await self.extender.bind(pod, node)
        except ExtenderError as err:
            log.warning("pod %s: binding to %s failed: %s", key, node, err)
            await self._failed_scheduling(pod, f"binding to {node} failed: {err}")
            self._retry(key)
            return
        finally:
            self.binding.pop(key, None)
        log.info("pod %s: bound to %s", key, node)
        self.backoffs.pop(key, None)

    def _failed(self, key: str, err: Exception) -> None:
        if isinstance(err, Unschedulable | ExtenderError | APIError):
            log.warning("pod %s: %s", key, err)
        else:
            log.error("pod %s: scheduling failed", key, exc_info=err)
        self._retry(key)

    def _retry(self, key: str) -> None:
        """Take the pod again after its backoff (if it still waits for a node)."""
        if key not in self.pods:
            return
        backoff = self.backoffs.setdefault(key, Backoff(self.initial_backoff, self.max_backoff))
        delay = backoff.delay()
        log.info("pod %s: trying again in %.1f s", key, delay)

        def due() -> None:
            self.retries.pop(key, None)
            if key in self.pods:
                self.queue.add(key)

        self.retries[key] = asyncio.get_running_loop().call_later(delay, due)
