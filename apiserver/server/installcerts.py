"""The serving certificate of the in-cluster install, and the kustomization that installs it.

Makes (or reuses) a CA and a serving certificate for the Service's DNS names in ``out``
(``certs/`` by default, whose contents git ignores: keys never leave it, never commit
them), and writes beside them:

- ``secret.yaml``: the ``kubernetes.io/tls`` Secret the Deployment mounts;
- ``kustomization.yaml``: the chosen manifests (``base``), that Secret, and the
  APIServices' ``caBundle`` set to the CA, so ``kubectl apply -k <out>`` installs it all;
- ``helm-values.yaml``: the same choices (caBundle, group, ha, scheduler shim, namespace,
  Secret names) as values of the chart in ``charts/dra-apiserver``, for ``kubectl apply -f
  <out>/secret.yaml`` then ``helm install -f <out>/helm-values.yaml`` (written when ``base``
  is the kustomize base or the ha overlay, the two the chart renders).

With ``--scheduler-shim`` it also issues the scheduler shim's serving certificate (from the
same CA, for the shim Service's names: the extender's ``urlPrefix`` names one of them), and
the second scheduler's client certificate (user ``dra-extension-scheduler``) from a CA of
its own (``scheduler-client-ca.crt``: it signs nothing else, so the shim trusts exactly the
scheduler). It writes two Secrets and adds the scheduler-shim component:

- ``shim-secret.yaml``: the shim's serving pair, ``ca.crt`` (its CA) and ``client-ca.crt``
  (the scheduler's client CA, the shim's ``--client-ca-file``);
- ``scheduler-secret.yaml``: the scheduler's client pair and ``ca.crt`` (the shim's CA),
  the files of its extender ``tlsConfig`` (``certFile``, ``keyFile``, ``caFile``).

The caller prints the caBundle (base64 PEM) it returns.

    python -m apiserver install-certs                        # one replica, resource.k8s.io
    python -m apiserver install-certs --base manifests/overlays/ha --group resource.x-k8s.io
    python -m apiserver install-certs --scheduler-shim       # and the scheduler shim

then either ``kubectl apply -k certs/`` or ``kubectl apply -f certs/secret.yaml`` and
``helm install dra-apiserver charts/dra-apiserver -f certs/helm-values.yaml``.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from ..api.resource.group import DRA_GROUP, OTHER_GROUP
from ..toolkit.options import option, switch
from .certs import _write, cert_pem, ensure_ca, issue_client_cert, issue_serving_cert, key_pem

VERSIONS = ("v1alpha3", "v1alpha1")
SHIM_SERVICE = "dra-scheduler-shim"
SHIM_SECRET = "dra-scheduler-shim-tls"
SCHEDULER_SECRET = "dra-extension-scheduler-client"
SCHEDULER_USER = "dra-extension-scheduler"
"""The second scheduler's name in its client certificate (the shim's ``--allowed-users``)."""
SCHEDULER_CA = "scheduler-client-ca"


def service_names(service: str, namespace: str, cluster_domain: str) -> list[str]:
    """The names the kube-apiserver (``<service>.<namespace>.svc``) and clients use."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.{cluster_domain}",
    ]


def secret(
    name: str,
    namespace: str,
    cert: bytes,
    key: bytes,
    ca: bytes,
    extra: dict[str, bytes] | None = None,
) -> dict[str, object]:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    data = {"tls.crt": b64(cert), "tls.key": b64(key), "ca.crt": b64(ca)}
    data.update({k: b64(v) for k, v in (extra or {}).items()})
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "data": data,
    }


def kustomization(
    out: Path,
    base: Path,
    components: Path,
    group: str,
    ca_bundle: str,
    *,
    scheduler_shim: bool = False,
) -> dict[str, object]:
    """The base, the Secrets, the scheduler-shim component when asked, the other-group
    component when ``group`` is not the default (after the shim's, which it also moves),
    and the caBundle of each APIService."""
    resources = [os.path.relpath(base.resolve(), out.resolve()), "secret.yaml"]
    chosen = []
    if scheduler_shim:
        resources += ["shim-secret.yaml", "scheduler-secret.yaml"]
        chosen.append(components / "scheduler-shim")
    doc: dict[str, object] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
        "patches": [
            {
                "target": {"kind": "APIService", "name": f"{version}.{group}"},
                "patch": yaml.safe_dump(
                    [{"op": "add", "path": "/spec/caBundle", "value": ca_bundle}]
                ),
            }
            for version in VERSIONS
        ],
    }
    if group != DRA_GROUP:
        if group != OTHER_GROUP:
            raise ValueError(
                f"--group: the manifests have a component for {OTHER_GROUP} only, not {group}"
            )
        chosen.append(components / "other-group")
    if chosen:
        doc["components"] = [os.path.relpath(c.resolve(), out.resolve()) for c in chosen]
    return doc


def helm_values(
    base: Path,
    components: Path,
    group: str,
    ca_bundle: str,
    *,
    namespace: str,
    secret_name: str,
    scheduler_shim: bool,
) -> dict[str, object] | None:
    """The chart's values for the same install; None for a base the chart does not render."""
    manifests = components.resolve().parent
    chosen = base.resolve()
    if chosen not in (manifests / "base", manifests / "overlays" / "ha"):
        return None
    return {
        "namespace": namespace,
        "group": group,
        "caBundle": ca_bundle,
        "tls": {"secretName": secret_name},
        "ha": {"enabled": chosen == manifests / "overlays" / "ha"},
        "schedulerShim": {
            "enabled": scheduler_shim,
            "tls": {"secretName": SHIM_SECRET},
            "clientSecretName": SCHEDULER_SECRET,
        },
    }


@dataclass
class InstallCertsOptions:
    out: str = option(
        "--out", "certs", "where to write them (default {default}, which git ignores)"
    )
    base: str = option(
        "--base",
        "manifests/base",
        "the manifests to install: manifests/base or manifests/overlays/ha",
    )
    components: str = option("--components", "manifests/components", "kustomize components")
    group: str = option("--group", DRA_GROUP, f"API group of our kinds, or {OTHER_GROUP}")
    namespace: str = option("--namespace", "dra-system", "the namespace of the Service")
    service: str = option("--service", "dra-apiserver", "the Service the certificate is for")
    secret_name: str = option("--secret", "dra-apiserver-tls", "the Secret that carries it")
    cluster_domain: str = option("--cluster-domain", "cluster.local", "the cluster's DNS domain")
    scheduler_shim: bool = switch(
        "--scheduler-shim",
        "also the scheduler shim and a second kube-scheduler using it, with the shim's"
        " serving certificate",
    )


def install_certs(options: InstallCertsOptions) -> str:
    """Write the certificates, the Secrets and the kustomization into ``out``; the caBundle."""
    out, base, components = Path(options.out), Path(options.base), Path(options.components)
    namespace, secret_name = options.namespace, options.secret_name
    group, scheduler_shim = options.group, options.scheduler_shim
    out.mkdir(parents=True, exist_ok=True)
    ca, ca_key = ensure_ca(out)
    names = service_names(options.service, namespace, options.cluster_domain)
    cert, key = issue_serving_cert(ca, ca_key, names[2], names)
    cert_bytes, key_bytes, ca_bytes = cert_pem(cert), key_pem(key), cert_pem(ca)
    _write(out / "tls.crt", cert_bytes)
    _write(out / "tls.key", key_bytes, private=True)
    manifest = secret(secret_name, namespace, cert_bytes, key_bytes, ca_bytes)
    _write(out / "secret.yaml", yaml.safe_dump(manifest).encode(), private=True)
    if scheduler_shim:
        _shim_certs(out, namespace, options.cluster_domain, ca, ca_key)
    ca_bundle = base64.b64encode(ca_bytes).decode()
    doc = kustomization(out, base, components, group, ca_bundle, scheduler_shim=scheduler_shim)
    _write(out / "kustomization.yaml", yaml.safe_dump(doc, sort_keys=False).encode())
    values = helm_values(
        base,
        components,
        group,
        ca_bundle,
        namespace=namespace,
        secret_name=secret_name,
        scheduler_shim=scheduler_shim,
    )
    if values is not None:
        _write(out / "helm-values.yaml", yaml.safe_dump(values, sort_keys=False).encode())
    return ca_bundle


def _shim_certs(
    out: Path,
    namespace: str,
    cluster_domain: str,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
) -> None:
    """The shim's serving certificate, the scheduler's client certificate (from a CA kept
    in ``out`` beside the server's, so a second run issues from the same one), and the two
    Secrets that carry them."""
    ca_bytes = cert_pem(ca)
    shim_names = service_names(SHIM_SERVICE, namespace, cluster_domain)
    shim_cert, shim_key = issue_serving_cert(ca, ca_key, shim_names[2], shim_names)
    shim_cert_bytes, shim_key_bytes = cert_pem(shim_cert), key_pem(shim_key)
    _write(out / "shim-tls.crt", shim_cert_bytes)
    _write(out / "shim-tls.key", shim_key_bytes, private=True)
    client_ca, client_ca_key = ensure_ca(out, SCHEDULER_CA, "dra-extension-scheduler-client-ca")
    client_ca_bytes = cert_pem(client_ca)
    client, client_key = issue_client_cert(client_ca, client_ca_key, SCHEDULER_USER)
    client_bytes, client_key_bytes = cert_pem(client), key_pem(client_key)
    _write(out / "scheduler-client.crt", client_bytes)
    _write(out / "scheduler-client.key", client_key_bytes, private=True)
    shim_secret = secret(
        SHIM_SECRET,
        namespace,
        shim_cert_bytes,
        shim_key_bytes,
        ca_bytes,
        {"client-ca.crt": client_ca_bytes},
    )
    _write(out / "shim-secret.yaml", yaml.safe_dump(shim_secret).encode(), private=True)
    scheduler_secret = secret(SCHEDULER_SECRET, namespace, client_bytes, client_key_bytes, ca_bytes)
    _write(out / "scheduler-secret.yaml", yaml.safe_dump(scheduler_secret).encode(), private=True)
