"""Observing the cluster from a node: the agent's metrics (node_exporter's textfile collector
serves them), Prometheus's scrape targets, which job holds each GPU (dcgm-exporter's hpc_job
label), and the relay that turns Alertmanager's notifications into EventBridge events and
messages on the alert topic."""

from .commands import COMMANDS

__all__ = ["COMMANDS"]
