"""The group and version of the ``resource.k8s.io`` kinds."""

DRA_GROUP = "resource.k8s.io"
"""The group of the DRA kinds upstream serves (ResourceSlice, DeviceClass, ResourceClaim…),
and the default group of the kinds this server adds (``--group``)."""
DRA_VERSION = "v1"
"""The version of the DRA kinds upstream serves."""
OTHER_GROUP = "resource.x-k8s.io"
"""The group the README suggests where the cluster serves ``resource.k8s.io`` alpha versions
itself."""
