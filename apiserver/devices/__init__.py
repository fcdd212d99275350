"""The device view: devices as the cluster offers them (mixins flattened, KEP-5027 patches
applied), kept current incrementally from the sources, and served read-only.

``DeviceView`` computes and publishes device states (``subscribe`` for commits,
``subscribe_patches`` for per-patch reports); ``merge`` and ``patch_outcome`` are the pure
rules it applies; ``DeviceStore`` serves the view to the generic registry as the Device kind.
"""

from .matching import Candidate, SelectorFailure, patch_outcome
from .merging import local_name, merge
from .names import device_object_name, device_object_uid
from .objects import device_object
from .patches import CompiledClass, CompiledPatch, compile_class, compile_patch
from .state import (
    Commit,
    DeviceChange,
    DeviceListener,
    DeviceState,
    FaultSummary,
    PatchListener,
    PatchMark,
    PatchReport,
    SelectorFault,
)
from .store import DeviceStore
from .taintrules import PatchesAndRules, rule_as_patch
from .unpatched import unpatched_states
from .view import DeviceView, snapshot

__all__ = [
    "Candidate",
    "Commit",
    "CompiledClass",
    "CompiledPatch",
    "DeviceChange",
    "DeviceListener",
    "DeviceState",
    "DeviceStore",
    "DeviceView",
    "FaultSummary",
    "PatchListener",
    "PatchMark",
    "PatchReport",
    "PatchesAndRules",
    "SelectorFailure",
    "SelectorFault",
    "compile_class",
    "compile_patch",
    "device_object",
    "device_object_name",
    "device_object_uid",
    "local_name",
    "merge",
    "patch_outcome",
    "rule_as_patch",
    "snapshot",
    "unpatched_states",
]
