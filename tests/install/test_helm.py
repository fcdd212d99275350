"""The Helm chart (charts/dra-apiserver): ``helm lint`` passes, and ``helm template`` of every
variant, rendered by the real helm binary, is valid against Kubernetes 1.37's schemas and
equals, object by object, the kustomize rendering of the same variant (the base, the ha
overlay, the other-group and scheduler-shim components, and what ``install-certs`` writes:
its ``helm-values.yaml`` plus its Secrets against its kustomization), Helm's own labels
aside."""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from devtools.kubectls import binary
from tests.e2e.harness import REPO
from tests.install.test_manifests import KUBERNETES, MANIFESTS, OTHER_GROUP, kustomize, make_certs
from tests.install.test_manifests import overlay as kustomize_overlay

CHART = REPO / "charts" / "dra-apiserver"
HELM_VERSION = "1.33"  # the newest kubectl release in the matrix that ships a helm
HELM_LABELS = {
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
}
HELM_HOME = tempfile.mkdtemp(prefix="helm-home-")
"""Where helm may keep its configuration and cache: never the reader's own."""
atexit.register(shutil.rmtree, HELM_HOME, True)
Doc = dict[str, Any]
Key = tuple[str, str, str, str]


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary(HELM_VERSION, "helm")), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"HOME": HELM_HOME, "PATH": os.environ.get("PATH", "")},
    )


def template(*args: str) -> list[Doc]:
    done = helm("template", "dra", str(CHART), *args)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def without_helm_labels(doc: Doc) -> Doc:
    labels = {k: v for k, v in doc["metadata"].get("labels", {}).items() if k not in HELM_LABELS}
    metadata = {k: v for k, v in doc["metadata"].items() if k != "labels"}
    if labels:
        metadata["labels"] = labels
    return {**doc, "metadata": metadata}


def by_key(docs: list[Doc]) -> dict[Key, Doc]:
    out: dict[Key, Doc] = {}
    for doc in docs:
        meta = doc["metadata"]
        key = (doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in out, key
        out[key] = doc
    return out


def secrets(directory: Path) -> list[Doc]:
    return [
        yaml.safe_load((directory / name).read_text())
        for name in ("secret.yaml", "shim-secret.yaml", "scheduler-secret.yaml")
        if (directory / name).exists()
    ]


VARIANTS: dict[str, tuple[list[str], list[str]]] = {
    # name: (the overlay's resources and components under manifests/, helm --set values)
    "base": (["base"], []),
    "ha": (["overlays/ha"], ["ha.enabled=true"]),
    "base+other-group": (["base", "components/other-group"], [f"group={OTHER_GROUP}"]),
    "ha+other-group": (
        ["overlays/ha", "components/other-group"],
        ["ha.enabled=true", f"group={OTHER_GROUP}"],
    ),
    "base+shim": (["base", "components/scheduler-shim"], ["schedulerShim.enabled=true"]),
    "ha+shim": (
        ["overlays/ha", "components/scheduler-shim"],
        ["ha.enabled=true", "schedulerShim.enabled=true"],
    ),
    "ha+shim+other-group": (
        ["overlays/ha", "components/scheduler-shim", "components/other-group"],
        ["ha.enabled=true", "schedulerShim.enabled=true", f"group={OTHER_GROUP}"],
    ),
}
CERTS_VARIANTS: dict[str, list[str]] = {
    # name: install-certs' arguments
    "certs-base": [],
    "certs-base+shim": ["--scheduler-shim"],
    "certs-ha+other-group": ["--base", str(MANIFESTS / "overlays" / "ha"), "--group", OTHER_GROUP],
    "certs-ha+shim+other-group": [
        "--base",
        str(MANIFESTS / "overlays" / "ha"),
        "--group",
        OTHER_GROUP,
        "--scheduler-shim",
    ],
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[Doc], list[Doc]]]:
    """Every variant as (helm template, kubectl kustomize)."""
    tmp = tmp_path_factory.mktemp("helm")
    out: dict[str, tuple[list[Doc], list[Doc]]] = {}
    for name, (parts, values) in VARIANTS.items():
        resources = [MANIFESTS / p for p in parts if not p.startswith("components/")]
        components = [MANIFESTS / p for p in parts if p.startswith("components/")]
        directory = kustomize_overlay(tmp, name, resources, components)
        sets = [arg for value in values for arg in ("--set", value)]
        out[name] = (template(*sets), kustomize(directory))
    for name, args in CERTS_VARIANTS.items():
        directory = tmp / name
        make_certs(directory, *args)
        helm_docs = template("-f", str(directory / "helm-values.yaml")) + secrets(directory)
        out[name] = (helm_docs, kustomize(directory))
    return out


def test_helm_lint() -> None:
    for args in ([], ["--set", "ha.enabled=true,schedulerShim.enabled=true"]):
        done = helm("lint", "--strict", str(CHART), *args)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("variant", [*VARIANTS, *CERTS_VARIANTS])
def test_helm_template_is_valid_against_kubernetes_1_37(
    rendered: dict[str, tuple[list[Doc], list[Doc]]], variant: str
) -> None:
    docs, _ = rendered[variant]
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


@pytest.mark.parametrize("variant", [*VARIANTS, *CERTS_VARIANTS])
def test_helm_template_equals_the_kustomize_rendering(
    rendered: dict[str, tuple[list[Doc], list[Doc]]], variant: str
) -> None:
    helm_docs, kustomize_docs = rendered[variant]
    ours = by_key([without_helm_labels(d) for d in helm_docs])
    theirs = by_key(kustomize_docs)
    assert sorted(ours) == sorted(theirs)
    for key, doc in theirs.items():
        assert ours[key] == doc, key
    # Helm's labels are on every object it renders, and only those are set aside.
    for doc in helm_docs:
        if doc["kind"] != "Secret":
            assert set(doc["metadata"]["labels"]) >= HELM_LABELS, doc["metadata"]["name"]


def test_the_comparison_sees_a_difference(
    rendered: dict[str, tuple[list[Doc], list[Doc]]],
) -> None:
    """The equivalence above can fail: a value that changes one field shows."""
    changed = by_key(
        [without_helm_labels(d) for d in template("--set", "tls.secretName=other-tls")]
    )
    _, kustomize_docs = rendered["base"]
    theirs = by_key(kustomize_docs)
    assert sorted(changed) == sorted(theirs)
    differ = [key for key, doc in theirs.items() if changed[key] != doc]
    assert differ == [("apps/v1", "Deployment", "dra-system", "dra-apiserver")]


def test_values_name_the_image_and_the_ca_bundle() -> None:
    docs = by_key(
        template(
            "--set",
            "image.repository=registry.example/dra,image.tag=9.9.9,caBundle=Q0E=",
            "--set",
            "schedulerShim.enabled=true",
        )
    )
    images = {
        c["image"]
        for d in docs.values()
        if d["kind"] == "Deployment"
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert "registry.example/dra:9.9.9" in images
    assert not any(i.startswith("dra-apiserver") for i in images)
    bundles = {d["spec"].get("caBundle") for d in docs.values() if d["kind"] == "APIService"}
    assert bundles == {"Q0E="}


def test_install_certs_values_are_only_written_for_what_the_chart_renders(tmp_path: Path) -> None:
    """A base of one's own has no chart equivalent: no values file that would install
    something else."""
    own = kustomize_overlay(tmp_path, "own", [MANIFESTS / "base"], [])
    make_certs(tmp_path / "certs", "--base", str(own))
    assert not (tmp_path / "certs" / "helm-values.yaml").exists()
    assert (tmp_path / "certs" / "kustomization.yaml").exists()


def test_the_readme_helm_install_renders_what_install_certs_chose(tmp_path: Path) -> None:
    """The README's ``helm install`` line, as ``helm template`` (same arguments) over the
    files ``install-certs`` wrote: the APIServices carry its caBundle, the image is the
    reader's, and the Secrets the README applies beside it are the ones the chart mounts."""
    readme = (REPO / "README.md").read_text()
    [block] = [
        b
        for b in re.findall(r"^ *```sh\n(.*?)^ *```$", readme, flags=re.DOTALL | re.MULTILINE)
        if "helm install" in b
    ]
    lines = [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    [install] = [line for line in lines if line.startswith("helm install")]
    applied = [
        word
        for line in lines
        if line.startswith("kubectl apply -f")
        for word in line.split("#")[0].split()[3:]
    ]
    certs = tmp_path / "certs"
    bundle = make_certs(certs)
    args = shlex.split(
        install.replace("<your registry>", "registry.example").replace("certs/", f"{certs}/")
    )
    assert args[:2] == ["helm", "install"]
    _release, chart, *rest = args[2:]
    assert (REPO / chart).resolve() == CHART
    docs = template(*rest)
    assert {d["spec"]["caBundle"] for d in docs if d["kind"] == "APIService"} == {bundle}
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    [server] = deployment["spec"]["template"]["spec"]["containers"]
    assert server["image"].startswith("registry.example/dra-apiserver:")
    mounted = {
        v["secret"]["secretName"]
        for v in deployment["spec"]["template"]["spec"]["volumes"]
        if "secret" in v
    }
    secret_files = [Path(p.replace("certs/", f"{certs}/")) for p in applied]
    assert secret_files
    assert all(p.exists() for p in secret_files)
    names = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in secret_files}
    assert mounted <= names
