"""Types of the ``resource.k8s.io`` group: DRA devices and the kinds of the five proposals."""
