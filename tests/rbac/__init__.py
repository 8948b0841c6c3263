"""Least-privilege checks: the RBAC manifests against what the controller is seen to request."""
