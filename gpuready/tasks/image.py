"""Image generation (diffusion models): memory by component and strategy, seconds per image.

Memory is the sum of the components (denoiser, text encoders, VAE) at their precision,
plus the VAE decoder's full-resolution activations and the runtime's overhead, under
three strategies: everything on the GPU; model offload (components moved to the GPU one
at a time, as diffusers' ``enable_model_cpu_offload`` and ComfyUI's low-VRAM mode do:
GPU peak = largest component + activations); and the CPU. Speed: each denoising step
runs the denoiser once per guidance pass (two with classifier-free guidance), and its
cost is 2 x denoiser parameters x latent tokens (plus attention for transformers),
compute bound. Text encoding and VAE decoding are not timed (a few per cent on GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from gpuready.catalog.loader import CatalogError, Entry
from gpuready.tasks.base import MemoryPart, MemoryParts, ModelEntry, Task, TaskEstimate, bits_quality, level_at_most, listed_variants
from gpuready.tasks.devices import RUNTIME_OVERHEAD_BYTES, Device
from gpuready.tasks.encoders import device_flops_basis, encoder_efficiency

# Bits per weight of each precision as stored. ggml block formats from ggml/src/ggml-common.h:
# block_q8_0 = fp16 scale + 32 int8 (34 bytes / 32 weights = 8.5 bits); block_q4_0 = fp16 scale
# + 16 bytes (18 / 32 = 4.5); block_q6_K = 210 bytes / 256 = 6.5625; block_q4_K = 144 / 256 = 4.5;
# block_q5_K = 176 / 256 = 5.5. NF4 (bitsandbytes): 4 bits + one fp32 absmax per 64-weight
# block = 4.5 bits (QLoRA, Dettmers et al. 2023, section 3, https://arxiv.org/abs/2305.14314).
PRECISION_BITS = {
    "fp32": 32.0, "fp16": 16.0, "bf16": 16.0, "fp8": 8.0, "nf4": 4.5,
    "q8_0": 8.5, "q6_k": 6.5625, "q5_k_s": 5.5, "q4_k_s": 4.5, "q4_0": 4.5,
}
# Text encoders above this size (T5-XXL, 4.76B) run in fp8 when the denoiser is quantised to
# 8 bits or less, as ComfyUI's FLUX/SD3.5 workflows ship t5xxl_fp8_e4m3fn.safetensors
# (https://huggingface.co/comfyanonymous/flux_text_encoders); smaller encoders stay fp16.
LARGE_ENCODER_PARAMS = 1e9
# Latent space: the VAE downsamples by 8 in each direction (AutoencoderKL, all models here).
VAE_DOWNSAMPLE = 8
# VAE decoder activations at full resolution: its last stage has 128 channels
# (block_out_channels [128, 256, 512, 512] in every vae/config.json here); about three
# such fp16 maps are live at once (input, residual, output). DERIVED, not measured.
VAE_CHANNELS = 128
VAE_LIVE_MAPS = 3
# PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction (PCI-SIG); model
# offload moves every component to the GPU once per image.
PCIE_BYTES_PER_S = 31.5e9

# Measured steps per second / (peak FLOPS / FLOPs per step), median per (backend, denoiser
# architecture), fitted by benchmarks/score_estimator.py on benchmarks/validation/
# image-generation.toml: "unet" on the diffusers torch 2.0 benchmark rows (SD 1.5 and SDXL
# on T4, RTX 3090, RTX 4090; huggingface/diffusers docs/source/en/optimization/torch2.0.md),
# "dit" on the FLUX.1-dev rows on RTX 4090 / RTX 6000 Ada (fp8 rows run fp8 matmuls at twice
# the fp16 rate, which pulls the ratio up to 1.0); "unet"/"metal" on Apple's Core ML
# Stable Diffusion 1.4 rows (apple/ml-stable-diffusion README, M1 Pro/Max/Ultra GPU), a
# different runtime from diffusers' MPS, used as the best available Apple figure. For UNets the ratio exceeds 1:
# the formula counts every weight at every latent position, but convolutions in the 2x, 4x
# and 8x downsampled stages see 4-64x fewer positions, so it overcounts the work.
THROUGHPUT_RATIO = {"unet": {"cuda": 4.62, "metal": 3.76}, "dit": {"cuda": 1.00}}
# Backends without a fitted row scale the CUDA figure by their encoder efficiency relative
# to CUDA's (tasks/common.py ENCODER_EFFICIENCY, fitted on CPU and CUDA Whisper encoders:
# the same kind of compute-bound convolution + attention work), said so in the basis.
SPEED_UNCERTAINTY = 0.5  # the validation errors: median 28% (UNet) to 47% (transformer), see benchmarks/ACCURACY.md


@dataclass(frozen=True, kw_only=True)
class ImageModel(ModelEntry):
    architecture: str  # unet | dit
    resolution: int  # native width = height, pixels
    steps: int  # the model card's recommended step count
    guidance_passes: int  # 2 with classifier-free guidance, 1 for guidance-distilled models
    denoiser_params: float
    text_encoders: Mapping[str, float]  # name -> parameters
    vae_params: float
    denoiser_hidden_size: int | None = None  # transformers: width of the joint attention
    denoiser_layers: int | None = None  # transformers: attention blocks
    text_tokens: int = 0  # transformers: text tokens that join the image tokens
    patch_size: int = 1  # transformers pack 2x2 latent pixels into one token
    task: str = "image-generation"
    variant_sizes: Mapping[str, float] = field(default_factory=dict)  # real denoiser file sizes, bytes

    @property
    def params(self) -> float:
        return self.denoiser_params + sum(self.text_encoders.values()) + self.vae_params


def parse_image_model(entry: Entry, quants=None) -> ImageModel:
    architecture = entry.choice("architecture", ("unet", "dit"))
    variants = entry.known_names("variants", PRECISION_BITS, "precision")
    encoders = entry.mapping("text_encoders")
    if not encoders:
        raise CatalogError(f"{entry.where}: missing 'text_encoders' (a table of name = parameters)")
    if architecture == "dit" and not (entry.has("denoiser_hidden_size") and entry.has("denoiser_layers")):
        raise CatalogError(f"{entry.where}: a 'dit' model needs 'denoiser_hidden_size' and 'denoiser_layers'")
    passes = entry.integer("guidance_passes")
    if passes not in (1, 2):
        raise CatalogError(f"{entry.where}: 'guidance_passes' must be 1 or 2")
    return ImageModel(
        architecture=architecture,
        resolution=entry.integer("resolution"),
        steps=entry.integer("steps"),
        guidance_passes=passes,
        denoiser_params=entry.number("denoiser_params"),
        text_encoders=encoders,
        vae_params=entry.number("vae_params"),
        variants=variants,
        denoiser_hidden_size=entry.integer("denoiser_hidden_size", required=False),
        denoiser_layers=entry.integer("denoiser_layers", required=False),
        text_tokens=entry.integer("text_tokens", required=False, positive=False) or 0,
        patch_size=entry.integer("patch_size", required=False) or 1,
        variant_sizes=entry.mapping("variant_sizes"),
        **entry.card(),
    )


# --- formulas ------------------------------------------------------------------------


def latent_tokens(model: ImageModel, width: int, height: int) -> int:
    """Tokens the denoiser sees: latent pixels (UNet) or 2x2 latent patches (transformers)."""
    return (width // VAE_DOWNSAMPLE // model.patch_size) * (height // VAE_DOWNSAMPLE // model.patch_size)


def flops_per_forward(model: ImageModel, width: int, height: int) -> float:
    """2 x denoiser parameters x latent tokens; transformers add attention, 4 x tokens^2 x width x blocks."""
    tokens = latent_tokens(model, width, height)
    flops = 2 * model.denoiser_params * tokens
    if model.architecture == "dit":
        joint = tokens + model.text_tokens
        flops = 2 * model.denoiser_params * joint + 4 * joint**2 * model.denoiser_hidden_size * model.denoiser_layers
    return flops


def flops_per_step(model: ImageModel, width: int, height: int) -> float:
    return flops_per_forward(model, width, height) * model.guidance_passes


def denoiser_bytes(model: ImageModel, variant: str) -> int:
    if variant in model.variant_sizes:
        return int(model.variant_sizes[variant])
    return int(model.denoiser_params * PRECISION_BITS[variant] / 8)


def encoder_bytes(model: ImageModel, variant: str) -> int:
    quantised = PRECISION_BITS[variant] <= 8.5
    return int(sum(p * (1 if quantised and p > LARGE_ENCODER_PARAMS else 2) for p in model.text_encoders.values()))


def activation_bytes(width: int, height: int) -> int:
    return VAE_LIVE_MAPS * VAE_CHANNELS * width * height * 2


def throughput_ratio(model: ImageModel, backend: str) -> tuple[float, str]:
    fitted = THROUGHPUT_RATIO[model.architecture]
    if backend in fitted:
        return fitted[backend], f"fitted {model.architecture} ratio {fitted[backend]:.2f} for {backend} (benchmarks/validation)"
    scale = encoder_efficiency(backend)[0] / encoder_efficiency("cuda")[0]
    value = fitted["cuda"] * scale
    return value, f"{model.architecture} ratio {value:.2f}: the CUDA fit scaled by {backend}'s encoder efficiency relative to CUDA's (no {backend} rows)"


def seconds_per_step(model: ImageModel, width: int, height: int, device: Device) -> tuple[float | None, str]:
    if not device.flops:
        return None, f"throughput of {device.name} unknown: speed not estimated"
    ratio, why = throughput_ratio(model, device.backend)
    flops = flops_per_step(model, width, height)
    return flops / (device.flops * ratio), f"{flops / 1e12:.1f} TFLOPs per step; {device_flops_basis(device)}; {why}"


# --- estimate --------------------------------------------------------------------------


def estimate(
    model: ImageModel, variant: str, width: int, height: int, steps: int, gpu: Device | None, cpu: Device
) -> TaskEstimate:
    """The best strategy for this variant: all on the GPU, model offload, or the CPU."""
    denoiser = denoiser_bytes(model, variant)
    encoders = encoder_bytes(model, variant)
    vae = int(model.vae_params * 2)
    activations = activation_bytes(width, height)
    components = {"denoiser": denoiser, "text encoders": encoders, "VAE": vae}
    basis = [
        f"denoiser: {model.denoiser_params / 1e9:.2f}B parameters at {variant} ({PRECISION_BITS[variant]:g} bits)"
        + (" (real file size)" if variant in model.variant_sizes else ""),
        "text encoders: " + ", ".join(f"{name} {p / 1e9:.2f}B" for name, p in model.text_encoders.items())
        + (" (fp8 for encoders over 1B, fp16 otherwise)" if PRECISION_BITS[variant] <= 8.5 else " at fp16"),
        f"VAE {model.vae_params / 1e6:.0f}M at fp16; decoder activations {VAE_LIVE_MAPS} x {VAE_CHANNELS} channels x {width}x{height} x fp16",
        f"{steps} steps x {model.guidance_passes} denoiser pass{'es' if model.guidance_passes > 1 else ''} at {width}x{height}"
        f" ({latent_tokens(model, width, height):,} latent tokens)",
    ]
    total = sum(components.values())
    placement, device = "cpu", cpu
    if gpu is not None and gpu.usable_memory_bytes:
        overhead = RUNTIME_OVERHEAD_BYTES.get(gpu.backend, RUNTIME_OVERHEAD_BYTES["cpu"])
        if total + activations + overhead <= gpu.usable_memory_bytes:
            placement, device = "gpu", gpu
            parts = [MemoryPart(f"{k} ({variant})" if k == "denoiser" else k, v, "gpu") for k, v in components.items()]
            parts += [MemoryPart("activations", activations, "gpu"), MemoryPart("runtime overhead", overhead, "gpu")]
            basis.append(f"all components on {gpu.name} ({gpu.backend})")
        elif not gpu.unified and max(components.values()) + activations + overhead <= gpu.usable_memory_bytes:
            placement, device = "offload", gpu
            largest = max(components, key=components.get)
            parts = [MemoryPart(f"{largest} (largest component)", components[largest], "gpu"),
                     MemoryPart("activations", activations, "gpu"), MemoryPart("runtime overhead", overhead, "gpu")]
            parts += [MemoryPart(f"{k} (waiting in system memory)", v, "system") for k, v in components.items()]
            basis.append(
                f"model offload: components take turns on {gpu.name}; peak is the {largest} ({total / 1e9:.1f} GB held in system memory)"
            )
    if placement == "cpu":
        parts = [MemoryPart(f"{k} ({variant})" if k == "denoiser" else k, v, "system") for k, v in components.items()]
        parts += [MemoryPart("activations", activations, "system"),
                  MemoryPart("runtime overhead", RUNTIME_OVERHEAD_BYTES["cpu"], "system")]
        basis.append("all components on the CPU, weights in system memory")
    memory = MemoryParts(tuple(parts))
    step_s, why = seconds_per_step(model, width, height, device)
    basis.append(why)
    seconds = None
    transfer = 0.0
    if step_s is not None:
        seconds = steps * step_s
        if placement == "offload":
            transfer = total / PCIE_BYTES_PER_S
            seconds += transfer
            basis.append(f"offload moves {total / 1e9:.1f} GB over PCIe 4.0 x16 (31.5 GB/s) once per image: +{transfer:.1f} s")
    details = (("seconds_per_step", step_s or 0.0), ("steps", float(steps)), ("offload_transfer_s", transfer))
    return TaskEstimate(model.id, variant, placement, memory, memory.on("gpu"), memory.on("system"), seconds,
                        "s/image", SPEED_UNCERTAINTY, details, tuple(basis))


# --- judging ---------------------------------------------------------------------------

# Seconds per image at the model's native resolution and step count. A product judgement,
# not a measurement: under 15 s keeps an interactive try-tweak-retry loop going, a minute is
# a coffee-sip wait, five minutes is the most a person will wait for one picture; slower
# than that technically runs but is not usable.
SECONDS_PER_IMAGE_CEILINGS = {"runs-well": 15.0, "runs": 60.0, "slow": 300.0}
RUNTIME_BY_BACKEND = {
    "cuda": "diffusers (CUDA) or ComfyUI",
    "rocm": "diffusers (ROCm) or ComfyUI",
    "metal": "diffusers (MPS) or Draw Things",
    "sycl": "diffusers (XPU) or OpenVINO",
    "vulkan": "stable-diffusion.cpp (Vulkan)",
    "cpu": "diffusers (CPU) or stable-diffusion.cpp",
}
GGUF_RUNTIME = {"cuda": "ComfyUI-GGUF (CUDA)", "metal": "ComfyUI-GGUF (MPS)", "cpu": "stable-diffusion.cpp (CPU)"}


def size(model: ImageModel, options) -> tuple[int, int]:
    """The resolution judged: the user's, else the model's native one."""
    return options.resolution or (model.resolution, model.resolution)


def runtime(model: ImageModel, estimate: TaskEstimate, gpu: Device | None, catalog=None) -> str:
    backend = gpu.backend if gpu and estimate.placement != "cpu" else "cpu"
    if estimate.quant.startswith("q"):
        return GGUF_RUNTIME.get(backend, "ComfyUI-GGUF")
    if estimate.quant == "nf4":
        return "Forge / diffusers + bitsandbytes (CUDA)" if backend == "cuda" else RUNTIME_BY_BACKEND[backend]
    return RUNTIME_BY_BACKEND.get(backend, RUNTIME_BY_BACKEND["cpu"])


def _estimate(model: ImageModel, variant: str, catalog, gpu: Device | None, cpu: Device, options) -> TaskEstimate:
    return estimate(model, variant, *size(model, options), model.steps, gpu, cpu)


def _describe(model: ImageModel, estimate: TaskEstimate, options) -> str:
    width, height = size(model, options)
    return f"about {estimate.speed:.1f} s per {width}x{height} image at {model.steps} steps"


TASK = Task(
    name="image-generation",
    title="Image generation",
    parse=parse_image_model,
    variants=listed_variants,
    estimate=_estimate,
    level=lambda model, estimate, options: (level_at_most(estimate.speed, SECONDS_PER_IMAGE_CEILINGS), []),
    describe=_describe,
    runtime=runtime,
    quality=bits_quality(PRECISION_BITS),
)
