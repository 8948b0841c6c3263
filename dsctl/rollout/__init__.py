"""``dsctl rollout``: status, history, undo, pause, resume and restart of a DaemonSet.

``kubectl rollout`` drives apps/v1 DaemonSets but cannot drive a custom resource, and has no
pause for DaemonSets at all. These commands work in both modes, with kubectl's output and exit
codes, and install as the kubectl plugin ``kubectl-dsctl`` (``kubectl dsctl rollout …``).

- ``target``: which DaemonSet an argument like ``ds/agent`` or ``dds/agent`` names.
- ``views``: pure decisions and texts (status line, history table, which revision to undo to,
  the patches that pause, resume, restart and roll back).
- ``commands``: the verbs, one API round trip each, through ``dsctl.kube``.
- ``cli``: the argparse wiring under ``dsctl rollout``.
"""
