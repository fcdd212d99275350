"""A Kubernetes extension API server for Dynamic Resource Allocation (DRA).

Layers (DESIGN §5), lowest first: ``api`` (typed models and pure validation),
``storage`` (the Store protocol and its backends), ``machinery`` (generic
Kubernetes REST semantics) with ``auth``, ``registry`` (one strategy per kind),
``server`` (assembly, TLS, uvicorn) and ``cli``.
"""

__version__ = "0.1.0"
