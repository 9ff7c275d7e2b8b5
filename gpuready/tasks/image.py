"""Image generation (diffusion models): memory by component and strategy, seconds per image.

Memory is the sum of the components (denoiser, text encoders, VAE) at their precision,
plus the VAE decoder's full-resolution activations and the runtime's overhead, under
three strategies: everything on the GPU; model offload (components moved to the GPU one
at a time, as diffusers' ``enable_model_cpu_offload`` and ComfyUI's low-VRAM mode do:
GPU peak = largest component + activations); and the CPU. Speed: each denoising step
runs the denoiser once per guidance pass (two with classifier-free guidance, batched into
one call), costing a fixed time per step (an eager runtime launching kernels from the host)
plus its FLOPs at a fitted fraction of the tensor peak: a UNet's counted layer by layer over
its published architecture, a transformer's 2 x parameters x tokens + attention. Once per
image the text encoders read the prompt and the VAE decodes the latent: on a one-step
model they cost as much as the denoising, so they are timed too. The constants and their
cross-validated errors: benchmarks/score_image.py, benchmarks/ACCURACY.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from gpuready.catalog.loader import CatalogError, Entry
from gpuready.tasks.base import MemoryPart, MemoryParts, ModelEntry, Task, TaskEstimate, bits_quality, level_at_most, listed_variants
from gpuready.tasks.devices import RUNTIME_OVERHEAD_BYTES, Device, host_copy_bytes_per_s, one_card, pytorch_drives
from gpuready.tasks.encoders import device_flops_basis, encoder_efficiency
from gpuready.tasks.text_estimate import is_geforce_rtx
from gpuready.units import fmt_figures, fmt_gb

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
# Model offload moves every component to the GPU once per image, at devices.host_copy_bytes_per_s: PyTorch copies a
# module's pageable CPU tensors (Module.to), so the pageable rate, at most what the PCIe link the driver reports allows.

# VAE decoder work per output pixel: NVIDIA's FLOP count for the Stable Diffusion VAE decoder,
# 2.53933e12 FLOPs for a 512x512 image (NVIDIA TensorRT Stable Diffusion talk, "Floating point
# operations" per stage: CLIP 0.02714e12, U-Net 1.67952e12 a step, VAE decoder 2.53933e12;
# slides mirrored at https://www.sgpjbg.com/bgdown/155314.html). Every model here has that
# decoder's widths (block_out_channels [128, 256, 512, 512]); work scales with pixels.
VAE_DECODE_FLOPS_PER_PIXEL = 2.53933e12 / (512 * 512)
# The decoder runs in fp32 (SDXL's vae/config.json sets force_upcast: true; fp16 overflows), so
# it is timed at the GPU's FP32 peak. Check: FLUX.1 at 1024x1024 decodes in 117 ms on a B200
# (https://github.com/unslothai/unsloth/pull/10889, uncompiled); 2.54e12 x 4 / 80 TFLOPS FP32 =
# 127 ms. Where the table has no FP32 figure, half the FP16 peak is assumed (said so).
VAE_EFFICIENCY = 1.0
# Prompt tokens each text encoder reads: 77 for CLIP (its context), 256 for T5 in FLUX.1-schnell
# and 512 in FLUX.1-dev / SD 3.5 (diffusers' max_sequence_length defaults); 2 x parameters x
# tokens FLOPs at the transformer-encoder efficiency fitted on Whisper (tasks/encoders.py).
ENCODER_TOKENS = {"clip-vit-l-14": 77, "openclip-vit-bigg-14": 77, "t5-v1_1-xxl": 512}

# Speed of a denoising step: STEP_FIXED_SECONDS + FLOPs per step / (tensor peak x STEP_EFFICIENCY), both
# fitted per denoiser family and backend by benchmarks/score_image.py on benchmarks/validation/
# image-generation*.toml (scored leave-one-device-out in benchmarks/ACCURACY.md). STEP_EFFICIENCY is the
# fraction of the FP16 tensor peak the denoiser's FLOPs reach in an eager runtime (diffusers, the
# reference FLUX code): the median over the rows once the fixed cost is taken off. "unet"/"cuda": the
# diffusers torch 2.0 benchmark (SD 1.5, SDXL on T4, A100, RTX 3090, RTX 4090), Lambda's SD 1.4 benchmarks
# (A10, A100, RTX A6000, H100 PCIe, RTX 3090, RTX 3080), the SDXL fast-diffusion and SDXL-Turbo rows;
# "dit"/"cuda": the FLUX.1-dev rows (RTX 4090, RTX 6000 Ada; A100 end to end in diffusers); "unet"/"metal": Apple's
# Core ML SD 1.4 rows (M1 Pro/Max/Ultra GPU), a different runtime from diffusers' MPS, the best Apple figure.
# Rows whose source runs fp8 matmuls (aredden/flux-fp8-api) are scored at the FP16 rate like the rest:
# timing them at the FP8 tensor rate (twice FP16 on Ada and Hopper) did not lower the held-out error, and
# gpuready's fp8 variants are weights stored in fp8 and computed in bf16 (ComfyUI's default). Rows whose attention is
# not fused (diffusers before PyTorch 2's SDPA, without xformers) are scored with the score matrix's
# memory traffic added (attention_scores x 4 fp16 accesses / bandwidth); gpuready predicts today's fused
# attention. Compiled rows (torch.compile) are scored against these eager constants: gpuready predicts the
# plain runtime.
# Intel GPUs (sycl: PyTorch's XPU build) take CUDA's constants scaled (step_constants), as AMD's do: on the 34 SD.Next
# rows of image-generation-intel.toml (6 Intel GPUs) a class of their own predicts them no better held out (34% against
# 32%, benchmarks/ACCURACY.md, "Intel XPU"); it did on the first 29, before the Arc 140T's PyTorch 2.9 rows.
STEP_EFFICIENCY = {"unet": {"cuda": 0.38, "metal": 0.44}, "dit": {"cuda": 0.85}}
# Fixed seconds per step whatever the GPU's speed: an eager runtime launches every kernel of the denoiser
# from Python, one after another (a UNet step is some 40-90 resnet and transformer blocks of several kernels
# each), and a fast GPU waits for the host. It is why SD 1.5 at batch 1 runs no faster on an A100 (21.7
# it/s) than on an RTX 3090 (22.6 it/s) in diffusers' benchmark though the A100 has the higher tensor peak,
# and why torch.compile with CUDA graphs (mode "reduce-overhead": the step's kernels replayed in one launch)
# doubles the A100's speed at batch 1 (44.0 it/s) but adds 26% at batch 16. Fitted with the efficiency (the
# grid value with the lowest median error); a cost per block instead of per step scored no better
# (benchmarks/ACCURACY.md). Apple's rows time one amount of work only, so the two cannot be told apart
# there: metal takes 0 and its efficiency absorbs the overhead.
STEP_FIXED_SECONDS = {"unet": {"cuda": 0.014, "metal": 0.0}, "dit": {"cuda": 0.0125}}
# GeForce RTX cards: catalog/gpus.toml lists the FP16 tensor rate with FP32 accumulate, which NVIDIA's
# Turing, Ampere and Ada whitepapers give as half the FP16-accumulate rate on GeForce (the workstation and
# datacenter cards run both at the full rate). The diffusion rows show GeForce cards at the full rate: the
# RTX 4090 (165 TFLOPS in the table) is faster than the RTX 6000 Ada (364) on FLUX.1-dev, and the RTX 3090
# (71) only 1.8x slower than the A100 (312) on SD 1.5 at batch 16. Kept because it lowers the
# leave-one-device-out error (benchmarks/ACCURACY.md, "Which terms stay"); the same term as the prompt
# fit's PROMPT_GEFORCE_RATE in tasks/text_estimate.py.
GEFORCE_TENSOR_RATE = 2.0
# The cross-validated errors of the fitted backends' rows (CUDA, Apple): leave-one-device-out median 19% over 121
# rows on 14 devices, 75th percentile 37%, 91% of rows within 50%, the worst (compiled runs: SDXL end to end on an
# A100, FLUX on an RTX 4090) about 2x: a +/-50% band; see benchmarks/ACCURACY.md, "Image generation".
SPEED_UNCERTAINTY = 0.5
# A backend predicted from CUDA's constants (step_constants: no constants of its own) takes the band its own rows'
# errors give, where rows score it: ROCm, the 80th percentile of the errors of image-generation-rocm.toml's 16 rows
# on 8 AMD GPUs (PyTorch's ROCm build under ComfyUI and SD.Next), each predicted from the CUDA rows alone: median 32%
# (benchmarks/ACCURACY.md, "ROCm: scored, not fitted"). A ROCm class fitted on those rows predicts them worse held out.
# Intel GPUs (sycl) the same way: image-generation-intel.toml's 34 SD.Next records on 6 Intel GPUs (Arc A750, A770,
# B580, 140V, 140T, Meteor Lake's Arc), each predicted from the CUDA rows alone: median 32%, worst 160%. The spread is
# the software more than the GPU: the same B580 ran SD 1.5 2.8x faster on PyTorch 2.9 than on 2.6, and the Arc 140T's
# PyTorch 2.9 rows run 2-3x faster than predicted (benchmarks/ACCURACY.md, "Intel XPU: scored, not fitted").
SPEED_UNCERTAINTY_BY_BACKEND = {"rocm": 0.57, "sycl": 0.71}


@dataclass(frozen=True, kw_only=True)
class ImageModel(ModelEntry):
    architecture: str  # unet | dit
    resolution: int  # native width = height, pixels
    steps: int  # the model card's recommended step count
    guidance_passes: int  # 2 with classifier-free guidance, 1 for guidance-distilled models
    denoiser_params: float
    text_encoders: Mapping[str, float]  # name -> parameters
    vae_params: float
    unet_channels: tuple[int, ...] = ()  # UNets: block_out_channels of the stages, from unet/config.json
    unet_transformer_layers: tuple[int, ...] = ()  # UNets: transformer layers per attention block of each stage (0 = none)
    unet_attention_heads: tuple[int, ...] = ()  # UNets: attention heads of each stage (config attention_head_dim)
    unet_layers_per_block: int = 2  # UNets: resnets per down stage (one more per up stage)
    cross_attention_dim: int = 768  # UNets: width of the text embedding the cross-attention reads
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
    if architecture == "unet":
        for key in ("unet_channels", "unet_transformer_layers", "cross_attention_dim"):
            if not entry.has(key):
                raise CatalogError(f"{entry.where}: a 'unet' model needs '{key}' (from its unet/config.json)")
    channels = _whole_numbers(entry, "unet_channels", positive=True)
    layers = _whole_numbers(entry, "unet_transformer_layers", positive=False)
    if len(channels) != len(layers) or (architecture == "unet" and not any(layers)):
        raise CatalogError(f"{entry.where}: 'unet_transformer_layers' needs one count per stage of 'unet_channels', at least one above 0")
    heads = _whole_numbers(entry, "unet_attention_heads", positive=True)
    if heads and len(heads) != len(channels):
        raise CatalogError(f"{entry.where}: 'unet_attention_heads' needs one count per stage of 'unet_channels'")
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
        unet_channels=channels,
        unet_transformer_layers=layers,
        unet_attention_heads=heads or tuple(max(1, c // 64) for c in channels),  # unstated: 64-wide heads
        unet_layers_per_block=entry.integer("unet_layers_per_block", required=False) or 2,
        cross_attention_dim=entry.integer("cross_attention_dim", required=False) or 768,
        denoiser_hidden_size=entry.integer("denoiser_hidden_size", required=False),
        denoiser_layers=entry.integer("denoiser_layers", required=False),
        text_tokens=entry.integer("text_tokens", required=False, positive=False) or 0,
        patch_size=entry.integer("patch_size", required=False) or 1,
        variant_sizes=entry.mapping("variant_sizes"),
        **entry.card(),
    )


def _whole_numbers(entry: Entry, key: str, positive: bool) -> tuple[int, ...]:
    """A list of whole numbers (above 0, or from 0 when not ``positive``); () when absent."""
    if not entry.has(key):
        return ()
    value = entry.data[key]
    lowest = 1 if positive else 0
    if not isinstance(value, list) or not value or not all(
            isinstance(v, int) and not isinstance(v, bool) and lowest <= v <= 1_000_000 for v in value):
        raise CatalogError(f"{entry.where}: '{key}' must be a list of whole numbers from {lowest} (got {value!r})")
    return tuple(value)


# --- formulas ------------------------------------------------------------------------


def latent_tokens(model: ImageModel, width: int, height: int) -> int:
    """Tokens the denoiser sees: latent pixels (UNet) or 2x2 latent patches (transformers)."""
    return (width // VAE_DOWNSAMPLE // model.patch_size) * (height // VAE_DOWNSAMPLE // model.patch_size)


def unet_work(model: ImageModel, width: int, height: int) -> tuple[float, float, int, float]:
    """(FLOPs of one forward, weights counted, blocks, self-attention scores) of a diffusers UNet2DConditionModel.

    Walks the architecture its unet/config.json publishes (block_out_channels, transformer_layers_per_block,
    layers_per_block, cross_attention_dim): every 3x3 convolution and linear layer costs 2 x its weights x
    the latent positions of its stage (each down stage halves width and height, so a quarter of the
    positions), attention adds 4 x positions^2 x width (self) and 4 x positions x text tokens x width (cross).
    The weights it counts come to 831M for SD 1.5 (model card: 860M) and 2,541M for SDXL (2,567M); the
    rest are the resnets' timestep projections and the size embeddings, run once per image, not per
    position, so nothing that scales with the image is missing. Its
    0.80 TFLOPs for one SD 1.5 forward at 512x512 matches NVIDIA's 1.68 TFLOPs per two-image step
    (the VAE_DECODE_FLOPS_PER_PIXEL talk). Blocks = resnets + transformer layers (kernel launches scale with them);
    scores = heads x positions^2 summed over the self-attention layers (attention_scores).
    """
    text = ENCODER_TOKENS["clip-vit-l-14"]
    weights = flops = scores = 0.0
    blocks = 0

    def linear(inputs: int, outputs: int, positions: float, kernel: int = 1) -> None:
        nonlocal weights, flops
        weights += inputs * kernel * outputs
        flops += 2 * inputs * kernel * outputs * positions

    def conv(inputs: int, outputs: int, positions: float, kernel: int = 9) -> None:
        linear(inputs, outputs, positions, kernel)

    def resnet(inputs: int, outputs: int, positions: float) -> None:
        nonlocal blocks
        blocks += 1
        conv(inputs, outputs, positions)
        conv(outputs, outputs, positions)
        if inputs != outputs:
            conv(inputs, outputs, positions, kernel=1)

    def transformer(width: int, layers: int, positions: float, heads: int) -> None:
        nonlocal flops, blocks, scores
        linear(width, width, positions)  # proj_in
        for _ in range(layers):
            blocks += 1
            linear(width, 4 * width, positions)  # self-attention q, k, v, out
            flops += 4 * positions**2 * width
            scores += heads * positions**2
            linear(width, 2 * width, positions)  # cross-attention q, out
            linear(model.cross_attention_dim, 2 * width, text)  # cross-attention k, v over the prompt
            flops += 4 * positions * text * width
            linear(width, 8 * width, positions)  # GEGLU feed-forward in (2 x 4 x width)
            linear(4 * width, width, positions)  # feed-forward out
        linear(width, width, positions)  # proj_out

    channels, layers, heads = model.unet_channels, model.unet_transformer_layers, model.unet_attention_heads
    positions = float((width // VAE_DOWNSAMPLE) * (height // VAE_DOWNSAMPLE))
    conv(4, channels[0], positions)
    skips = [channels[0]]
    current = channels[0]
    for stage, out in enumerate(channels):
        for _ in range(model.unet_layers_per_block):
            resnet(current, out, positions)
            current = out
            if layers[stage]:
                transformer(out, layers[stage], positions, heads[stage])
            skips.append(out)
        if stage < len(channels) - 1:
            positions /= 4
            conv(out, out, positions)  # strided downsampler
            skips.append(out)
    resnet(current, current, positions)  # mid block: resnet, transformer (the deepest stage's depth), resnet
    transformer(current, max(layers), positions, heads[-1])
    resnet(current, current, positions)
    for stage in reversed(range(len(channels))):
        out = channels[stage]
        for _ in range(model.unet_layers_per_block + 1):
            resnet(current + skips.pop(), out, positions)
            current = out
            if layers[stage]:
                transformer(out, layers[stage], positions, heads[stage])
        if stage > 0:
            positions *= 4
            conv(out, out, positions)  # upsampler
    conv(channels[0], 4, positions)
    return flops, weights, blocks, scores


def denoiser_blocks(model: ImageModel) -> int:
    """Blocks a forward pass runs one after another: UNet resnets + transformer layers; a DiT's transformer blocks."""
    if model.architecture == "unet":
        return unet_work(model, 512, 512)[2]
    return model.denoiser_layers


def attention_scores(model: ImageModel, width: int, height: int) -> float:
    """Self-attention scores one forward computes (heads x tokens^2, summed over layers): the matrix an
    attention that is not fused (no SDPA / xformers / flash) writes to memory and reads back."""
    if model.architecture == "unet":
        return unet_work(model, width, height)[3]
    joint = latent_tokens(model, width, height) + model.text_tokens
    return model.denoiser_hidden_size // 128 * joint**2 * model.denoiser_layers


def flops_per_forward(model: ImageModel, width: int, height: int) -> float:
    """UNets: counted over the published architecture (unet_work). Transformers: 2 x parameters x tokens
    (every weight meets every token) + attention, 4 x tokens^2 x width x blocks."""
    if model.architecture == "unet":
        return unet_work(model, width, height)[0]
    tokens = latent_tokens(model, width, height)
    joint = tokens + model.text_tokens
    return 2 * model.denoiser_params * joint + 4 * joint**2 * model.denoiser_hidden_size * model.denoiser_layers


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


def tensor_rate(device: Device) -> tuple[float, str]:
    """How many times its table FP16 figure the denoiser's tensor work runs at: GEFORCE_TENSOR_RATE on a GeForce RTX card."""
    if is_geforce_rtx(device):
        return GEFORCE_TENSOR_RATE, f"x{GEFORCE_TENSOR_RATE:g} (GeForce RTX: FP16-accumulate tensor rate)"
    return 1.0, ""


def step_constants(model: ImageModel, backend: str) -> tuple[float, float, str]:
    """(fraction of peak, fixed seconds per step, why) for this denoiser family on this backend."""
    efficiencies, fixed_costs = STEP_EFFICIENCY[model.architecture], STEP_FIXED_SECONDS[model.architecture]
    fixed = fixed_costs.get(backend, fixed_costs["cuda"])
    fixed_why = f"{fixed * 1000:.1f} ms fixed per step" + ("" if backend in fixed_costs else " (CUDA's eager-runtime figure)")
    if backend in efficiencies:
        return efficiencies[backend], fixed, f"fitted {model.architecture} efficiency {efficiencies[backend]:.0%} for {backend}, {fixed_why}"
    scale = encoder_efficiency(backend)[0] / encoder_efficiency("cuda")[0]
    # No device sustains more than its peak: Metal's scale (1.65) took FLUX on an Apple GPU to 140% of it.
    value = min(1.0, efficiencies["cuda"] * scale)
    rows = (f"scored on {backend} rows, not fitted: benchmarks/ACCURACY.md"
            if backend in SPEED_UNCERTAINTY_BY_BACKEND else f"no {backend} rows")
    capped = ", at most the peak" if value < efficiencies["cuda"] * scale else ""
    return value, fixed, (f"{model.architecture} efficiency {value:.0%}: the CUDA fit scaled by {backend}'s encoder efficiency "
                          f"relative to CUDA's{capped} ({rows}), {fixed_why}")


def seconds_per_step(model: ImageModel, width: int, height: int, device: Device, batch: int = 1) -> tuple[float | None, str]:
    """Fixed seconds per step + the batch's FLOPs per step at the fitted fraction of the tensor peak."""
    if not device.flops:
        return None, f"throughput of {device.name} unknown: speed not estimated"
    efficiency, fixed, why = step_constants(model, device.backend)
    rate, rate_why = tensor_rate(device)
    flops = flops_per_step(model, width, height) * batch
    seconds = fixed + flops / (device.flops * rate * efficiency)
    return seconds, f"{flops / 1e12:.2f} TFLOPs per step; {device_flops_basis(device)}{' ' + rate_why if rate_why else ''}; {why}"


def fp32_flops(device: Device) -> tuple[float | None, str]:
    """The device's FP32 peak: the GPU table's figure (the device's own where the probe matched a table row, else the
    one row its name matches), the CPU's own (already FP32), else half the FP16 peak."""
    if not device.flops:
        return None, "unknown"
    if device.kind == "cpu":
        return device.flops, "CPU FP32 peak"
    if device.vector_flops:
        return device.vector_flops, f"{device.vector_flops / 1e12:.1f} TFLOPS FP32 (GPU table)"
    from gpuready.catalog.tables import find_gpus

    name = device.name.split(" x ", 1)[-1] if " x " in device.name else device.name
    matches = [spec for spec in find_gpus(name) if spec.fp32_flops]
    if len(matches) == 1:
        return matches[0].fp32_flops, f"{matches[0].fp32_flops / 1e12:.1f} TFLOPS FP32 (GPU table)"
    return device.flops / 2, "FP32 assumed half the FP16 peak"


def once_per_image_seconds(model: ImageModel, width: int, height: int, device: Device) -> tuple[float, str]:
    """Text encoders over the prompt plus the VAE decoding the latent: the work done once per image."""
    fp32, fp32_why = fp32_flops(device)
    if fp32 is None:
        return 0.0, "text encoders and VAE decode not timed (throughput unknown)"
    vae = VAE_DECODE_FLOPS_PER_PIXEL * width * height / (fp32 * VAE_EFFICIENCY)
    efficiency, _ = encoder_efficiency(device.backend)
    text = sum(2 * params * ENCODER_TOKENS.get(name, 77) for name, params in model.text_encoders.items())
    text_s = text / (device.flops * efficiency)
    return vae + text_s, (f"VAE decode {vae:.2f} s ({VAE_DECODE_FLOPS_PER_PIXEL * width * height / 1e12:.1f} TFLOPs at "
                          f"{fp32_why}) + text encoders {text_s:.2f} s ({text / 1e12:.2f} TFLOPs at {efficiency:.0%} of peak)")


# --- estimate --------------------------------------------------------------------------


def spread_over_cards(components: dict[str, int], activations: int, overhead: int, gpu: Device) -> list[list[str]] | None:
    """Components placed whole on the cards of a group of identical GPUs, largest first onto the first card
    with room (the denoiser's card also holds the activations; every card holds its runtime overhead), as
    diffusers' pipeline-level device_map="balanced" places them (docs: optimization/memory, "Device placement");
    None when the group is one card or a component fits on no card."""
    if gpu.count < 2 or not gpu.usable_memory_bytes:
        return None
    room = [gpu.usable_memory_bytes // gpu.count - overhead] * gpu.count
    cards: list[list[str]] = [[] for _ in room]
    for name in sorted(components, key=components.get, reverse=True):
        need = components[name] + (activations if name == "denoiser" else 0)
        slot = next((n for n, free in enumerate(room) if need <= free), None)
        if slot is None:
            return None
        room[slot] -= need
        cards[slot].append(name)
    return cards


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
    system_peak = 0  # model offload's most in system memory at once; elsewhere what the parts put there
    card = one_card(gpu)  # a pipeline without a device map runs on one GPU of a group
    if card is not None and card.usable_memory_bytes:
        overhead = RUNTIME_OVERHEAD_BYTES.get(card.backend, RUNTIME_OVERHEAD_BYTES["cpu"])
        fits_one_card = total + activations + overhead <= card.usable_memory_bytes
        spread = None if fits_one_card else spread_over_cards(components, activations, overhead, gpu)
        if fits_one_card:
            placement, device = "gpu", card
            parts = [MemoryPart(f"{k} ({variant})" if k == "denoiser" else k, v, "gpu") for k, v in components.items()]
            parts += [MemoryPart("activations", activations, "gpu"), MemoryPart("runtime overhead", overhead, "gpu")]
            basis.append(f"all components on {card.name} ({card.backend})")
        elif spread:
            placement, device = "gpu", card
            parts = [MemoryPart(f"{k} ({variant})" if k == "denoiser" else k, v, "gpu") for k, v in components.items()]
            parts += [MemoryPart("activations", activations, "gpu"),
                      MemoryPart(f"runtime overhead x {gpu.count} GPUs", overhead * gpu.count, "gpu")]
            basis.append(f"components spread over {gpu.name} (diffusers device_map=\"balanced\"): "
                         + "; ".join(f"card {n + 1}: {', '.join(names)}" for n, names in enumerate(spread) if names)
                         + "; they run one after another, so the speed is one card's")
        elif not card.unified and max(components.values()) + activations + overhead <= card.usable_memory_bytes:
            placement, device = "offload", card
            largest = max(components, key=components.get)
            parts = [MemoryPart(f"{largest} (largest component)", components[largest], "gpu"),
                     MemoryPart("activations", activations, "gpu"), MemoryPart("runtime overhead", overhead, "gpu")]
            # Each component is moved to the GPU for its turn and back (diffusers enable_model_cpu_offload), so it is
            # in one place at a time: while the largest runs the others wait in system memory (the parts listed, which
            # add up to the whole pipeline once); system memory peaks while the smallest runs and the rest wait.
            parts += [MemoryPart(f"{k} (waiting in system memory)", v, "system") for k, v in components.items() if k != largest]
            smallest = min(components, key=components.get)
            system_peak = total - components[smallest]
            basis.append(
                f"model offload: components take turns on {card.name}, each in one place at a time; the GPU's peak is the "
                f"{largest}, system memory's {fmt_gb(system_peak)} while the {smallest} runs"
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
    once = 0.0
    if step_s is not None:
        once, why_once = once_per_image_seconds(model, width, height, device)
        basis.append(why_once)
        seconds = steps * step_s + once
        if placement == "offload":
            rate = host_copy_bytes_per_s(device)
            transfer = total / rate
            seconds += transfer
            basis.append(f"offload moves {total / 1e9:.1f} GB to the GPU once per image at {rate / 1e9:.1f} GB/s "
                         f"({device.copy_words}): +{transfer:.1f} s")
    details = (("seconds_per_step", step_s or 0.0), ("steps", float(steps)), ("offload_transfer_s", transfer),
               ("encode_decode_s", once))
    band = SPEED_UNCERTAINTY_BY_BACKEND.get(device.backend, SPEED_UNCERTAINTY) if placement != "cpu" else SPEED_UNCERTAINTY
    return TaskEstimate(model.id, variant, placement, memory, memory.on("gpu"), system_peak or memory.on("system"), seconds,
                        "s/image", band, details, tuple(basis))


# --- judging ---------------------------------------------------------------------------

# Seconds per image at the model's native resolution and step count, for the way people use
# image models: an interactive prompt -> image -> tweak loop. Nielsen's response-time limits
# (J. Nielsen, Usability Engineering, 1993, ch. 5; "Response Times: The 3 Important Limits",
# https://www.nngroup.com/articles/response-times-3-important-limits/): about 10 s is the
# limit for keeping the user's attention on the dialogue. "runs well" keeps the loop under it;
# up to a minute the user waits and then comes back (each try is a break in the loop); five
# minutes is the most a person waits for one picture; slower technically runs but is unusable.
SECONDS_PER_IMAGE_CEILINGS = {"runs-well": 10.0, "runs": 60.0, "slow": 300.0}
RUNTIME_BY_BACKEND = {
    "cuda": "diffusers (CUDA) or ComfyUI",
    "rocm": "diffusers (ROCm) or ComfyUI",
    "metal": "diffusers (MPS) or Draw Things",
    "sycl": "diffusers (XPU) or OpenVINO",
    "vulkan": "stable-diffusion.cpp (Vulkan)",
    "cpu": "diffusers (CPU) or stable-diffusion.cpp",
}
# GGUF weights: ComfyUI-GGUF wherever PyTorch drives the GPU (CUDA, ROCm as its CUDA device, MPS, Intel's XPU), and
# stable-diffusion.cpp, which loads GGUF files itself, on the CPU and on a GPU reached only through Vulkan (PyTorch has
# no Vulkan device).
GGUF_RUNTIME = {"cuda": "ComfyUI-GGUF (CUDA)", "rocm": "ComfyUI-GGUF (ROCm)", "metal": "ComfyUI-GGUF (MPS)",
                "sycl": "ComfyUI-GGUF (XPU)", "vulkan": "stable-diffusion.cpp (Vulkan)", "cpu": "stable-diffusion.cpp (CPU)"}


def size(model: ImageModel, options) -> tuple[int, int]:
    """The resolution judged: the user's, else the model's native one."""
    return options.resolution or (model.resolution, model.resolution)


def runtime(model: ImageModel, estimate: TaskEstimate, gpu: Device | None, catalog=None) -> str:
    backend = gpu.backend if gpu and estimate.placement != "cpu" else "cpu"
    if backend == "sycl" and not pytorch_drives(gpu):
        # no XPU device for PyTorch on this Intel GPU (an Iris Xe): stable-diffusion.cpp's Vulkan build for GGUF files,
        # OpenVINO (optimum-intel's diffusion pipelines) for the rest
        return GGUF_RUNTIME["vulkan"] if estimate.quant.startswith("q") else "OpenVINO (optimum-intel)"
    if estimate.quant.startswith("q"):
        return GGUF_RUNTIME.get(backend, "ComfyUI-GGUF")
    if estimate.quant == "nf4":  # refuse() keeps it to NF4_RUNTIME's backends
        return NF4_RUNTIME[backend]
    if backend == "cpu" and estimate.quant == "fp16":
        # diffusers refuses fp16 pipelines on a CPU ("Pipelines loaded with dtype=torch.float16 cannot run
        # with cpu device", DiffusionPipeline.to); stable-diffusion.cpp runs fp16 weights there.
        return "stable-diffusion.cpp (CPU)"
    return RUNTIME_BY_BACKEND.get(backend, RUNTIME_BY_BACKEND["cpu"])


# Where bitsandbytes' 4-bit kernels run, as gpuready models them (fine-tuning's QLoRA takes the same view): CUDA and
# ROCm GPUs, and Intel GPUs under PyTorch's XPU device. Its CPU and Apple paths are not counted; the runtimes named
# there (stable-diffusion.cpp, Draw Things) load GGUF files, not nf4. Each backend with the runtime that loads nf4 there.
NF4_RUNTIME = {"cuda": "Forge / diffusers + bitsandbytes (CUDA)", "rocm": "diffusers + bitsandbytes (ROCm)",
               "sycl": "diffusers + bitsandbytes (XPU)"}


def refuse(model: ImageModel, variant: str, estimate: TaskEstimate, gpu: Device | None, catalog=None) -> str | None:
    """nf4 is bitsandbytes' format, loaded by PyTorch pipelines (Forge, diffusers) on a GPU bitsandbytes runs on
    (NF4_RUNTIME) that PyTorch has a device for; elsewhere the GGUF variants are the 4-bit ones."""
    if variant != "nf4":
        return None
    on_gpu = gpu is not None and estimate.placement != "cpu"
    if on_gpu and not pytorch_drives(gpu):
        return (f"nf4 is a bitsandbytes format for PyTorch pipelines, and PyTorch has no device for {gpu.name} "
                f"({gpu.backend}); stable-diffusion.cpp runs the GGUF variants here")
    if not on_gpu or gpu.backend not in NF4_RUNTIME:
        where = f"{gpu.name} ({gpu.backend})" if on_gpu else "a CPU"
        return (f"nf4 is a bitsandbytes format whose kernels run on CUDA, ROCm and Intel XPU GPUs, not on {where}; "
                "the GGUF variants (q4_0, q8_0) are the quantised ones here")
    return None


def _estimate(model: ImageModel, variant: str, catalog, gpu: Device | None, cpu: Device, options) -> TaskEstimate:
    return estimate(model, variant, *size(model, options), model.steps, gpu, cpu)


def _describe(model: ImageModel, estimate: TaskEstimate, options) -> str:
    width, height = size(model, options)
    return f"about {fmt_figures(estimate.speed)} s per {width}x{height} image at {model.steps} step{'s' if model.steps != 1 else ''}"


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
    refuse=refuse,
)
