"""What the Python environment offers: AI package versions, and on request PyTorch's and
OpenVINO's own view of the devices.

Run as ``python -m gpuready.probes.pyinfo [--import]`` in a subprocess (through
``Host.run``, with a timeout): the default reads package metadata only, which is cheap;
``--import`` imports torch and openvino, which takes seconds. It prints one JSON object.
:func:`parse` is the parent's side.
"""

from __future__ import annotations

import json

PACKAGES = ("torch", "openvino", "onnxruntime", "onnxruntime-directml", "onnxruntime-qnn", "mlx")


def parse(text: str) -> dict:
    """The child's JSON object; ValueError when it printed anything else."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        raise ValueError("printed nothing")
    value = json.loads(lines[-1])
    if not isinstance(value, dict) or not isinstance(value.get("packages"), dict):
        raise ValueError("printed JSON without a 'packages' object")
    return value


def _torch() -> dict:
    import torch  # noqa: PLC0415 - only in the child, only on request

    info: dict = {"version": torch.__version__, "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None)}
    info["cuda_available"] = bool(torch.cuda.is_available())
    info["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if info["cuda_available"] else []
    mps = getattr(torch.backends, "mps", None)
    info["mps_available"] = bool(mps and mps.is_available())
    xpu = getattr(torch, "xpu", None)
    info["xpu_available"] = bool(xpu and xpu.is_available())
    return info


def _openvino_devices() -> list[str]:
    import openvino  # noqa: PLC0415

    return list(openvino.Core().available_devices)


def read() -> dict:
    """The metadata-only answer, in this process: the ``python`` readout of the live Host."""
    return main([])


def main(argv: list[str]) -> dict:
    import importlib.metadata as metadata
    import platform

    out: dict = {"machine": platform.machine(), "packages": {}}
    for name in PACKAGES:
        try:
            out["packages"][name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out["packages"][name] = None
    if "--import" in argv:
        for key, function in (("torch", _torch), ("openvino_devices", _openvino_devices)):
            package = "torch" if key == "torch" else "openvino"
            if out["packages"][package] is None:
                continue
            try:
                out[key] = function()
            except Exception as error:  # noqa: BLE001 - report, never crash the child
                out[f"{key}_error"] = f"{type(error).__name__}: {error}"
    return out


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess
    import sys

    print(json.dumps(main(sys.argv[1:])))
