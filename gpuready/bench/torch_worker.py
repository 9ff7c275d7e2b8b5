"""Run as ``python -m gpuready.bench.torch_worker [--quick]`` in a child process: time each GPU with PyTorch.

Prints one JSON object on stdout: ``{"torch": version, "gpus": [{index, name,
bandwidth_bytes_per_s, fp16_flops, bf16_flops}]}`` (each a min/median/max spread), or
``{"error": ...}`` when PyTorch or a GPU is missing. The parent enforces a timeout, so a
broken driver that hangs here cannot hang gpuready.
- bandwidth: a device-to-device copy of a 1 GiB (quick: 256 MiB) tensor, counted as read + write;
- throughput: an 8192 x 8192 (quick: 4096) matmul in FP16 and in BF16, 2 n^3 FLOPs each.
Each kernel is timed with gpuready.bench.stats.time_kernel, the clock read after a device synchronise.
Where NVML's energy counter works for a CUDA GPU (gpuready.bench.power_meter), ``copy_power_w``
and ``matmul_power_w`` give the average watts it drew during the copy and the matmul phases.
"""

from __future__ import annotations

import json
import sys
import time


def _measure(torch, device, synchronize, quick: bool, meter=None) -> dict:
    from gpuready.bench.power_meter import combined_power, metered
    from gpuready.bench.stats import time_kernel

    repeats, sample = (4, 0.1) if quick else (7, 0.25)

    def timer() -> float:
        synchronize()
        return time.perf_counter()

    nbytes = (256 if quick else 1024) * 1024**2
    source = torch.empty(nbytes, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    copy, usage = metered(meter, synchronize, lambda: time_kernel(lambda: target.copy_(source), 2 * nbytes, repeats=repeats,
                                                                 sample_seconds=sample, timer=timer))
    result = {"bandwidth_bytes_per_s": copy.to_dict()}
    copy_power = combined_power([usage])
    del source, target
    matmul_usages = []
    n = 4096 if quick else 8192
    for name, dtype in (("fp16_flops", torch.float16), ("bf16_flops", torch.bfloat16)):
        try:
            a = torch.randn(n, n, device=device, dtype=dtype)
            b = torch.randn(n, n, device=device, dtype=dtype)
            spread, usage = metered(meter, synchronize, lambda: time_kernel(lambda: a @ b, 2.0 * n**3, repeats=repeats,
                                                                             sample_seconds=sample, timer=timer))
            result[name] = spread.to_dict()
            matmul_usages.append(usage)
        except (RuntimeError, TypeError) as error:  # e.g. BF16 on a GPU without it
            result[name] = None
            result.setdefault("errors", []).append(f"{name}: {error}")
    matmul_power = combined_power(matmul_usages)
    result["copy_power_w"] = copy_power.to_dict() if copy_power else None
    result["matmul_power_w"] = matmul_power.to_dict() if matmul_power else None
    return result


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    try:
        import torch
    except ImportError:
        print(json.dumps({"error": "PyTorch is not installed"}))
        return 0
    from gpuready.bench.power_meter import open_meter

    gpus = []
    if torch.cuda.is_available():  # NVIDIA, and AMD through ROCm builds
        for index in range(torch.cuda.device_count()):
            device = torch.device("cuda", index)
            entry = {"index": index, "name": torch.cuda.get_device_name(index)}
            meter = open_meter(torch, index)  # None off NVIDIA, before Volta, or without pynvml
            entry.update(_measure(torch, device, lambda d=device: torch.cuda.synchronize(d), quick, meter))
            gpus.append(entry)
    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        entry = {"index": 0, "name": "Apple GPU (MPS)"}
        entry.update(_measure(torch, torch.device("mps"), torch.mps.synchronize, quick))
        gpus.append(entry)
    if not gpus:
        print(json.dumps({"error": f"PyTorch {torch.__version__} sees no GPU", "torch": torch.__version__}))
        return 0
    print(json.dumps({"torch": torch.__version__, "gpus": gpus}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
