"""Media types of the Kubernetes API that more than one layer writes: the server's patch
handling and the client layer's patches name the same wire constant."""

MERGE_PATCH = "application/merge-patch+json"
