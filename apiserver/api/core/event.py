"""Core ``v1`` Event: what controllers report about objects, shown by ``kubectl describe``."""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel, Time
from ..meta import KindModel


class ObjectReference(APIModel):
    """Which object an event is about."""

    kind: str | None = Field(None, description="Kind of the referent.")
    namespace: str | None = Field(
        None, description="Namespace of the referent; empty for cluster-scoped objects."
    )
    name: str | None = Field(None, description="Name of the referent.")
    uid: str | None = Field(None, description="UID of the referent.")
    api_version: str | None = Field(None, description="API version of the referent.")
    resource_version: str | None = Field(
        None, description="Specific resourceVersion the event refers to."
    )
    field_path: str | None = Field(
        None, description="A piece of the object the event is about, e.g. spec.devices."
    )


class EventSource(APIModel):
    """Who reported the event."""

    component: str | None = Field(None, description="Component from which the event is generated.")
    host: str | None = Field(None, description="Node name on which the event is generated.")


class EventSeries(APIModel):
    """A series of repeated events."""

    count: int | None = Field(
        None, description="Number of occurrences in this series up to the last heartbeat."
    )
    last_observed_time: Time | None = Field(
        None, description="Time of the last occurrence observed."
    )


class Event(KindModel):
    """A report of an event somewhere in the cluster."""

    involved_object: ObjectReference = Field(description="The object this event is about.")
    reason: str | None = Field(
        None, description="Short, machine understandable string: why the transition happened."
    )
    message: str | None = Field(
        None, description="A human-readable description of the status of this operation."
    )
    source: EventSource | None = Field(None, description="The component reporting this event.")
    first_timestamp: Time | None = Field(
        None, description="The time at which the event was first recorded."
    )
    last_timestamp: Time | None = Field(
        None, description="The time at which the most recent occurrence was recorded."
    )
    count: int | None = Field(None, description="The number of times this event has occurred.")
    type: str | None = Field(None, description="Type of this event (Normal, Warning).")
    event_time: Time | None = Field(None, description="Time when this event was first observed.")
    series: EventSeries | None = Field(
        None, description="Data about the event series this event represents."
    )
    action: str | None = Field(
        None, description="What action was taken or failed regarding the object."
    )
    related: ObjectReference | None = Field(
        None, description="Optional secondary object for more complex actions."
    )
    reporting_component: str | None = Field(
        None, description="Name of the controller that emitted this event."
    )
    reporting_instance: str | None = Field(None, description="ID of the controller instance.")
