"""Pure helpers over Kubernetes API objects, shared by the controller and the simulator.

Objects are plain JSON dicts, exactly as an API server returns them. Nothing here does I/O,
and nothing here imports the rest of dsctl: both ``dsctl.daemonset`` and ``dsctl_sim`` build on
it, and neither may import the other.

- ``objects``: defensive readers of metadata, ``spec`` and ``status`` (a malformed field reads as absent).
- ``labels``: label selectors, both the string syntax and the ``metav1.LabelSelector`` object.
- ``fields``: field selectors (``metadata.name=x,spec.nodeName!=y``).
- ``nodeaffinity``: ``nodeSelector`` and required node affinity against a node.
- ``taints``: tolerations against taints.
- ``intstr``: int-or-percent values scaled against a total.
- ``timefmt``: RFC 3339 timestamps, always UTC.
- ``pods``: readiness, availability and controller references.
- ``defaults``: kube-apiserver's defaulting of the objects the simulator serves (the DaemonSet's
  pod template included, which is what the revision hash is computed over).
- ``strictfields``: the fields each built-in type declares (``fields.json``), for strict field
  validation.
- ``argtypes``: argparse value types, so every command line refuses a bad number alike.
"""
