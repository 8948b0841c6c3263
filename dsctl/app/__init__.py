"""The application layer: settings, leader election, HTTP endpoints, logging and the runner.

``dsctl.app.runner`` starts the components in order (informers, HTTP server, leader election,
workers) and stops them in reverse, so every long-running task has one owner and one way out.
"""
