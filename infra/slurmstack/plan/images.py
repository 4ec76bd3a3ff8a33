"""Which image a node boots when the definition pins none."""

from __future__ import annotations

from slurmstack.catalog import InstanceFacts

# Public SSM parameters that resolve to the current images (see DESIGN.md "Images").
DLAMI_GPU_SSM_PARAMETER = (
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id"
)
DLAMI_NEURON_SSM_PARAMETER = (
    "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
)
UBUNTU_SSM_PARAMETER = {
    "x86_64": "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
    "arm64": "/aws/service/canonical/ubuntu/server/24.04/stable/current/arm64/hvm/ebs-gp3/ami-id",
}


def default_image(facts: InstanceFacts) -> str:
    if facts.accelerator is not None and facts.accelerator.kind == "neuron":
        return DLAMI_NEURON_SSM_PARAMETER
    if facts.accelerator is not None:
        return DLAMI_GPU_SSM_PARAMETER
    return UBUNTU_SSM_PARAMETER[facts.architecture.value]
