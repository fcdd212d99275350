"""The longest name a Kubernetes object may have.

Object names are DNS subdomains (RFC 1123): at most 253 characters. Defined here, below every
layer that makes a name (the Event names of ``toolkit.events``, the computed Device and
ResourcePool names) or checks one (``api.names``).
"""

MAX_NAME = 253
