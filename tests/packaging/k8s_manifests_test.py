"""The Kubernetes manifests (packaging/k8s), checked offline where no
cluster or kubelet runs: every document parses, has a kind of the API
version it belongs to and a name in the scuda namespace; the kustomization
lists every manifest but the Secrets and the example pod; each DaemonSet's
selector matches its pods and its mounts name volumes that exist, from
Secrets and ConfigMaps that exist with the keys the programs read
(secrets.yaml shows the Secrets' keys); the server runs on GPU nodes with
nvidia.com/gpu at the pool's port; the plugin's kubelet folder (where its
socket and kubelet.sock lie) is the node's /var/lib/kubelet/device-plugins,
its handout folder has the same path on the node and in the pod, its
options are the plugin's own, and its resource is the example pod's.
Usage: k8s_manifests_test.py SOURCE_DIR [PLUGIN_BIN]"""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

API_VERSIONS = {"Namespace": "v1", "Secret": "v1", "ConfigMap": "v1", "Pod": "v1",
                "DaemonSet": "apps/v1", "Kustomization": "kustomize.config.k8s.io/v1beta1"}
NAMESPACE = "scuda"
KUBELET_DIR = "/var/lib/kubelet/device-plugins"
RESOURCE = "scuda.dev/gpu"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Manifests:
    """Every document of the folder, by kind and name."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files = sorted(p.name for p in folder.glob("*.yaml"))
        self.docs = []
        for name in self.files:
            for doc in yaml.safe_load_all((folder / name).read_text()):
                if doc is not None:
                    self.docs.append((name, doc))

    def one(self, kind: str, name: str) -> dict:
        found = [d for _, d in self.docs
                 if d["kind"] == kind and d.get("metadata", {}).get("name") == name]
        assert len(found) == 1, f"{len(found)} {kind}s named {name}, not 1"
        return found[0]

    def keys_of(self, kind: str, name: str) -> set[str]:
        doc = self.one(kind, name)
        return set(doc.get("data") or {}) | set(doc.get("stringData") or {})


def check_documents(m: Manifests) -> None:
    for file, doc in m.docs:
        kind = doc.get("kind")
        assert kind in API_VERSIONS, f"{file}: unknown kind {kind}"
        assert doc.get("apiVersion") == API_VERSIONS[kind], \
            f"{file}: {kind} has apiVersion {doc.get('apiVersion')}, not {API_VERSIONS[kind]}"
        if kind == "Kustomization":
            continue
        meta = doc.get("metadata", {})
        assert DNS_LABEL.match(meta.get("name", "")), f"{file}: {kind} has no valid name"
        if kind != "Namespace":
            assert meta.get("namespace") == NAMESPACE, f"{file}: {kind} is not in {NAMESPACE}"


def check_kustomization(m: Manifests) -> None:
    kustomizations = [d for _, d in m.docs if d["kind"] == "Kustomization"]
    assert len(kustomizations) == 1, f"{len(kustomizations)} kustomizations, not 1"
    listed = kustomizations[0]["resources"]
    # Secrets are made from files, and the example is run by hand.
    expected = [f for f in m.files
                if f not in ("kustomization.yaml", "secrets.yaml", "example-pod.yaml")]
    assert sorted(listed) == expected, f"kustomization lists {listed}, the folder has {expected}"


def pod_spec(ds: dict) -> dict:
    return ds["spec"]["template"]["spec"]


def volumes(ds: dict) -> dict[str, dict]:
    return {v["name"]: v for v in pod_spec(ds).get("volumes", [])}


def mounts(container: dict) -> dict[str, dict]:
    """Mounts by their path in the container."""
    return {mt["mountPath"]: mt for mt in container.get("volumeMounts", [])}


def check_daemonset(m: Manifests, ds: dict) -> None:
    name = ds["metadata"]["name"]
    selector = ds["spec"]["selector"]["matchLabels"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert selector and selector.items() <= labels.items(), \
        f"{name}: selector {selector} does not match its pods' labels {labels}"
    assert pod_spec(ds).get("nodeSelector"), f"{name}: runs on every node (no nodeSelector)"
    vols = volumes(ds)
    for container in pod_spec(ds)["containers"]:
        assert container.get("image"), f"{name}: container {container['name']} has no image"
        for mount in container.get("volumeMounts", []):
            assert mount["name"] in vols, f"{name}: mount of unknown volume {mount['name']}"
    for vol in vols.values():
        if "secret" in vol:
            m.one("Secret", vol["secret"]["secretName"])
        if "configMap" in vol:
            m.one("ConfigMap", vol["configMap"]["name"])


def file_source(m: Manifests, ds: dict, path: str) -> tuple[str, str, str]:
    """(kind, name, key) of the Secret or ConfigMap that a file the pod reads
    at `path` comes from, checking that the key exists."""
    container = pod_spec(ds)["containers"][0]
    folder, _, key = path.rpartition("/")
    mount = mounts(container).get(folder)
    assert mount, f"{ds['metadata']['name']}: nothing is mounted at {folder} for {path}"
    vol = volumes(ds)[mount["name"]]
    kind, name = ("Secret", vol["secret"]["secretName"]) if "secret" in vol else \
        ("ConfigMap", vol["configMap"]["name"])
    assert key in m.keys_of(kind, name), f"{kind} {name} has no {key}, which {path} needs"
    return kind, name, key


def pool_servers(m: Manifests, ds: dict, path: str) -> list[dict]:
    kind, name, key = file_source(m, ds, path)
    doc = m.one(kind, name)
    servers = tomllib.loads(doc["data"][key])["server"]
    assert servers, f"{name}: the pool lists no server"
    for s in servers:
        assert re.match(r"^(tls://)?[^:/]+:\d+$", s["address"]), f"pool address {s['address']}"
        assert isinstance(s["gpus"], int) and s["gpus"] >= 1, f"{s['address']}: gpus {s['gpus']}"
    return servers


def server_command_files(source_dir: Path) -> list[str]:
    """The /etc/scuda files the server image's command reads."""
    text = (source_dir / "packaging/docker/Dockerfile.server").read_text()
    return sorted(set(re.findall(r"/etc/scuda/[\w.]+", text)))


def check_server(m: Manifests, source_dir: Path) -> int:
    """The server DaemonSet; the port it is reached at."""
    ds = m.one("DaemonSet", "scuda-server")
    check_daemonset(m, ds)
    container = pod_spec(ds)["containers"][0]
    gpus = container["resources"]["limits"].get("nvidia.com/gpu")
    assert isinstance(gpus, int) and gpus >= 1, "scuda-server takes no nvidia.com/gpu"
    assert any("nvidia.com" in k for k in pod_spec(ds)["nodeSelector"]), \
        "scuda-server is not kept to NVIDIA GPU nodes"
    ports = [p for p in container["ports"] if p["containerPort"] == 14833]
    assert ports and ports[0].get("hostPort"), "scuda-server is not at a node port 14833"
    files = server_command_files(source_dir)
    assert files, "the server image reads no /etc/scuda file"
    for path in files:
        file_source(m, ds, path)
    return ports[0]["hostPort"]


def plugin_args(ds: dict) -> dict[str, str]:
    args = pod_spec(ds)["containers"][0]["args"]
    assert all(re.match(r"^--[a-z-]+=.+$", a) for a in args), f"plugin args {args}: --NAME=VALUE"
    return dict(a[2:].split("=", 1) for a in args)


def host_path_at(ds: dict, mount_path: str) -> str:
    """The node's path mounted at `mount_path` in the plugin's container."""
    mount = mounts(pod_spec(ds)["containers"][0]).get(mount_path)
    assert mount, f"scuda-device-plugin: nothing is mounted at {mount_path}"
    vol = volumes(ds)[mount["name"]]
    assert "hostPath" in vol, f"scuda-device-plugin: {mount_path} is not a node's folder"
    return vol["hostPath"]["path"]


def check_plugin(m: Manifests, server_port: int, plugin_bin: str | None) -> None:
    ds = m.one("DaemonSet", "scuda-device-plugin")
    check_daemonset(m, ds)
    args = plugin_args(ds)
    # The plugin's socket and kubelet.sock lie in this folder, on the node.
    assert args["device-plugin-dir"] == KUBELET_DIR, f"device-plugin-dir {args['device-plugin-dir']}"
    assert host_path_at(ds, KUBELET_DIR) == KUBELET_DIR, f"{KUBELET_DIR} is not the node's"
    # The kubelet mounts --host-dir from the node: the pod writes it there.
    assert host_path_at(ds, args["host-dir"]) == args["host-dir"], \
        f"--host-dir {args['host-dir']} is not the same folder on the node"
    for option in ("token-file", "tls-ca"):
        assert file_source(m, ds, args[option])[0] == "Secret", f"--{option} is not a Secret's"
    for server in pool_servers(m, ds, args["pool"]):
        assert server["address"].endswith(f":{server_port}"), \
            f"pool server {server['address']} is not at the servers' port {server_port}"
    assert args["resource"] == RESOURCE, f"--resource {args['resource']}"
    assert pod_spec(ds)["nodeSelector"] != pod_spec(m.one("DaemonSet", "scuda-server"))[
        "nodeSelector"], "the plugin runs on the servers' nodes"
    if plugin_bin:
        usage = subprocess.run([plugin_bin, "--help"], capture_output=True, text=True).stdout
        for option in args:
            assert re.search(rf"--{option}(?![\w-])", usage), \
                f"scuda-device-plugin has no --{option}"


def check_example(m: Manifests) -> None:
    pod = m.one("Pod", "scuda-example")
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert limits.get(RESOURCE) == 1, f"the example pod asks for {limits}, not {RESOURCE}"


def main() -> int:
    source_dir = Path(sys.argv[1])
    plugin_bin = sys.argv[2] if len(sys.argv) > 2 else None
    m = Manifests(source_dir / "packaging/k8s")
    checks = [lambda: check_documents(m), lambda: check_kustomization(m),
              lambda: check_plugin(m, check_server(m, source_dir), plugin_bin),
              lambda: check_example(m)]
    failed = 0
    for check in checks:
        try:
            check()
        except (AssertionError, KeyError, TypeError, ValueError) as e:
            print(f"FAIL: {type(e).__name__}: {e}")
            failed += 1
    print(f"{len(m.docs)} documents in {len(m.files)} files, {failed} checks failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
