"""Types of the ``authorization.k8s.io`` group: access reviews and rules reviews."""

AUTHORIZATION_GROUP = "authorization.k8s.io"
AUTHORIZATION_VERSION = "v1"
