"""Realistic Node and DaemonSet-Pod objects for the informer benchmarks.

Shapes follow what kube-apiserver returns for a kubelet-registered node and for a running
DaemonSet pod (auto tolerations, target-node affinity, one managedFields entry, container
status), so the byte sizes and the dict overhead are representative. Deterministic by index.
"""

from __future__ import annotations

from typing import Any

__all__ = ["daemon_pod", "node"]

_TS = "2026-11-30T10:00:00Z"


def node(i: int) -> dict[str, Any]:
    """Node ``node-<i>``: ~2.6 KB of JSON, like the measured NodeList in the facts document."""
    name = f"node-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "uid": f"6f1c{i:08x}-0000-4000-8000-{i:012x}",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": _TS,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m5.xlarge",
                "topology.kubernetes.io/region": "eu-west-1",
                "topology.kubernetes.io/zone": f"eu-west-1{'abc'[i % 3]}",
                "pool": f"pool-{i % 7}",
                "role": "worker",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24",
            "podCIDRs": [f"10.{i // 256 % 256}.{i % 256}.0/24"],
            "providerID": f"aws:///eu-west-1a/i-{i:017x}",
            "taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
            if i % 10 == 0
            else [],
        },
        "status": {
            "capacity": {"cpu": "4", "ephemeral-storage": "101430960Ki",
                         "hugepages-2Mi": "0", "memory": "16093676Ki", "pods": "110"},
            "allocatable": {"cpu": "3920m", "ephemeral-storage": "93478772582",
                            "hugepages-2Mi": "0", "memory": "15106540Ki", "pods": "110"},
            "conditions": [
                {"type": t, "status": "False", "lastHeartbeatTime": _TS,
                 "lastTransitionTime": _TS, "reason": f"Kubelet Has No {t}",
                 "message": f"kubelet has no {t.lower()}"}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ] + [{"type": "Ready", "status": "True", "lastHeartbeatTime": _TS,
                  "lastTransitionTime": _TS, "reason": "KubeletReady",
                  "message": "kubelet is posting ready status"}],
            "addresses": [
                {"type": "InternalIP", "address": f"10.1.{i // 256 % 256}.{i % 256}"},
                {"type": "Hostname", "address": name},
                {"type": "InternalDNS", "address": f"{name}.eu-west-1.compute.internal"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{i:032x}", "systemUUID": f"ec2{i:029x}",
                "bootID": f"{i:08x}-1111-2222-3333-444444444444",
                "kernelVersion": "6.1.0-13-cloud-amd64", "osImage": "Debian GNU/Linux 12",
                "containerRuntimeVersion": "containerd://1.7.13", "kubeletVersion": "v1.31.2",
                "kubeProxyVersion": "v1.31.2", "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def daemon_pod(i: int, *, nodes: int, daemonsets: int = 30) -> dict[str, Any]:
    """Pod ``i`` of ``daemonsets`` DaemonSets spread over ``nodes`` nodes (~4 KB of JSON)."""
    ds = i // nodes % daemonsets
    node_name = f"node-{i % nodes:05d}"
    ds_name = f"agent-{ds:02d}"
    ds_uid = f"da3e{ds:08x}-0000-4000-8000-000000000000"
    tolerations = [
        {"key": key, "operator": "Exists", "effect": effect}
        for key, effect in (
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        )
    ]
    return {
        "metadata": {
            "name": f"{ds_name}-{i:06x}",
            "generateName": f"{ds_name}-",
            "namespace": "kube-system",
            "uid": f"9a7b{i:08x}-0000-4000-8000-{i:012x}",
            "resourceVersion": str(200000 + i),
            "creationTimestamp": _TS,
            "labels": {
                "app": ds_name,
                "controller-revision-hash": f"7d9f{ds:04x}c8",
                "pod-template-generation": "1",
            },
            "annotations": {"kubectl.kubernetes.io/default-container": "agent"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds_name,
                                 "uid": ds_uid, "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [{
                "manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "v1", "time": _TS, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {
                    ".": {}, "f:app": {}, "f:controller-revision-hash": {},
                    "f:pod-template-generation": {}}, "f:ownerReferences": {}},
                    "f:spec": {"f:affinity": {}, "f:containers": {}, "f:tolerations": {}}},
            }],
        },
        "spec": {
            "containers": [{
                "name": "agent",
                "image": f"registry.example.com/agents/{ds_name}:v1.2.{ds}",
                "args": ["--log-level=info", "--metrics-port=9100"],
                "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {
                    "apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
                        {"name": "MODE", "value": "daemon"}],
                "ports": [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                              "limits": {"memory": "128Mi"}},
                "volumeMounts": [
                    {"name": "host-root", "mountPath": "/host", "readOnly": True},
                    {"name": "kube-api-access", "mountPath":
                     "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True},
                ],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }],
            "volumes": [
                {"name": "host-root", "hostPath": {"path": "/", "type": ""}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}},
            ],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name",
                                                        "operator": "In",
                                                        "values": [node_name]}]}]}}},
            "tolerations": tolerations,
            "nodeName": node_name,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": _TS}
                for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                          "ContainersReady", "PodScheduled")
            ],
            "hostIP": f"10.1.{i % nodes // 256 % 256}.{i % nodes % 256}",
            "podIP": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
            "podIPs": [{"ip": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"}],
            "startTime": _TS,
            "containerStatuses": [{
                "name": "agent", "state": {"running": {"startedAt": _TS}},
                "lastState": {}, "ready": True, "restartCount": 0,
                "image": f"registry.example.com/agents/{ds_name}:v1.2.{ds}",
                "imageID": f"registry.example.com/agents/{ds_name}@sha256:{ds:064x}",
                "containerID": f"containerd://{i:064x}", "started": True,
            }],
            "qosClass": "Burstable",
        },
    }
