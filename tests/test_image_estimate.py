"""Image generation speed: each term of the formula by hand, its invariants, and honest end-to-end seconds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuready.catalog.loader import CatalogError, Entry
from gpuready.tasks import devices, image
from gpuready.tasks.registry import load_catalog
from gpuready.tasks.verdict import Options

CATALOG = load_catalog()
CPU = devices.Device("cpu", "Test CPU", "cpu", 64 * 1024**3, 80e9, 1e12)


def model(model_id: str) -> image.ImageModel:
    return CATALOG.get(model_id)


def gpu(name: str = "Test GPU", flops: float = 100e12, backend: str = "cuda") -> devices.Device:
    return devices.Device("gpu", name, backend, 80 * 1024**3, 1000e9, flops)


# --- the UNet count ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "size", "weights", "blocks"),
    [
        # SD 1.5: 831M counted of the card's 860M (the rest: the resnets' timestep projections, per image);
        # 22 resnets (8 down, 2 mid, 12 up) + 16 transformer layers (6 down, 1 mid, 9 up)
        ("sd-1.5", 512, 831_224_320, 38),
        # SDXL: 2,541M of 2,567M; 17 resnets + 70 transformer layers (2 x 2 + 2 x 10 down, 10 mid, 3 x 10 + 3 x 2 up)
        ("sdxl", 1024, 2_540_976_640, 87),
    ],
)
def test_the_unet_count_finds_the_published_weights_and_blocks(model_id, size, weights, blocks):
    flops, counted, found, _ = image.unet_work(model(model_id), size, size)
    assert counted == weights
    assert found == blocks == image.denoiser_blocks(model(model_id))
    assert counted / model(model_id).denoiser_params > 0.96


def test_a_one_stage_unet_by_hand():
    # One stage of 8 channels, one transformer layer, one resnet per block, cross-attention width 4, at 8x8
    # pixels = 1x1 latent = 1 position. conv_in 4->8 (3x3): 288 weights. Down: resnet 8->8 = two 3x3 convs
    # (2 x 576), transformer: proj_in 64 + q,k,v,out 256 + cross q,out 128 + cross k,v 4 x 16 = 64 (over the
    # 77 prompt tokens) + feed-forward 512 + 256 + proj_out 64. Mid: 2 resnets + the transformer. Up: 2 resnets
    # 16->8 (3x3 1,152 + 576, shortcut 1x1 128) + 2 transformers; conv_out 8->4: 288.
    unet = replace(model("sd-1.5"), unet_channels=(8,), unet_transformer_layers=(1,), unet_layers_per_block=1,
                   cross_attention_dim=4)
    transformer_weights = 64 + 256 + 128 + 64 + 512 + 256 + 64
    resnet, skip_resnet = 2 * 576, 1152 + 576 + 128
    weights = 288 + (resnet + transformer_weights) + (2 * resnet + transformer_weights) + 2 * (skip_resnet + transformer_weights) + 288
    # Each weight at the one position costs 2 FLOPs, except the cross-attention k,v that run over 77 tokens;
    # attention adds 4 x 1 x 1 x 8 (self) + 4 x 1 x 77 x 8 (cross) per transformer layer (4 of them).
    flops = 2 * (weights - 4 * 64) + 4 * 2 * 64 * 77 + 4 * (4 * 8 + 4 * 77 * 8)
    assert image.unet_work(unet, 8, 8)[:3] == (flops, weights, 1 + 2 + 2 + 2 + 1 + 1)


def test_a_unet_entry_without_its_stages_is_refused():
    data = {"id": "x", "name": "x", "architecture": "unet", "resolution": 512, "steps": 20, "guidance_passes": 2,
            "denoiser_params": 1e9, "text_encoders": {"clip-vit-l-14": 1.23e8}, "vae_params": 8e7,
            "variants": ["fp16"], "source": "test"}
    with pytest.raises(CatalogError, match="needs 'unet_channels'"):
        image.parse_image_model(Entry(data, "test.toml"))
    with pytest.raises(CatalogError, match="one count per stage"):
        image.parse_image_model(Entry({**data, "unet_channels": [320, 640], "unet_transformer_layers": [1],
                                       "cross_attention_dim": 768}, "test.toml"))
    with pytest.raises(CatalogError, match="'unet_attention_heads' needs one count per stage"):
        image.parse_image_model(Entry({**data, "unet_channels": [320, 640], "unet_transformer_layers": [1, 1],
                                       "unet_attention_heads": [8], "cross_attention_dim": 768}, "test.toml"))
    with pytest.raises(CatalogError, match="whole numbers from 0"):
        image.parse_image_model(Entry({**data, "unet_channels": [320], "unet_transformer_layers": [-1],
                                       "cross_attention_dim": 768}, "test.toml"))


def test_unfused_attention_scores_by_hand():
    # SD 1.5 at 512x512, 8 heads everywhere: 5 self-attention layers (2 down, 3 up) at each of the stages of
    # 4,096, 1,024 and 256 latent positions, and the mid block's one at 64 positions.
    expected = 8 * (5 * (4096**2 + 1024**2 + 256**2) + 64**2)
    assert image.attention_scores(model("sd-1.5"), 512, 512) == expected == 715_685_888
    # FLUX.1-dev at 1024: 24 heads (3,072 / 128) x (4,096 + 512 joint tokens)^2 x 57 blocks
    assert image.attention_scores(model("flux.1-dev"), 1024, 1024) == 24 * 4608**2 * 57


# --- a step by hand -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "flops", "rate"),
    [
        ("Test GPU", 100e12, 1.0),
        # A GeForce RTX card runs its tensor cores at twice the table's FP32-accumulate figure
        ("NVIDIA GeForce RTX 4090", 165.2e12, image.GEFORCE_TENSOR_RATE),
    ],
)
def test_a_step_is_its_fixed_cost_plus_its_flops_at_the_fitted_share_of_the_peak(name, flops, rate):
    sdxl = model("sdxl")
    device = gpu(name, flops)
    # the fixed seconds per step + 2 guidance passes x 6.761 TFLOPs at the fitted efficiency
    expected = image.STEP_FIXED_SECONDS["unet"]["cuda"] + 2 * 6_761_186_590_720 / (flops * rate * image.STEP_EFFICIENCY["unet"]["cuda"])
    assert image.seconds_per_step(sdxl, 1024, 1024, device)[0] == pytest.approx(expected)
    # A batch of 4 multiplies the FLOPs, not the fixed cost
    batch = image.STEP_FIXED_SECONDS["unet"]["cuda"] + 4 * 2 * 6_761_186_590_720 / (flops * rate * image.STEP_EFFICIENCY["unet"]["cuda"])
    assert image.seconds_per_step(sdxl, 1024, 1024, device, batch=4)[0] == pytest.approx(batch)


def test_a_backend_without_rows_scales_cudas_efficiency_and_keeps_its_fixed_cost():
    efficiency, fixed, why = image.step_constants(model("sd-1.5"), "rocm")
    scale = image.encoder_efficiency("rocm")[0] / image.encoder_efficiency("cuda")[0]
    assert efficiency == pytest.approx(image.STEP_EFFICIENCY["unet"]["cuda"] * scale)
    assert fixed == pytest.approx(image.STEP_FIXED_SECONDS["unet"]["cuda"])
    # ROCm is scored on AMD rows but not fitted (benchmarks/ACCURACY.md): the why says so, and a backend with no rows at all
    assert "scored on rocm rows, not fitted" in why and "CUDA's eager-runtime figure" in why
    assert "no vulkan rows" in image.step_constants(model("sd-1.5"), "vulkan")[2]
    # Intel GPUs too: scored on their rows, where a class of their own no longer predicts them better held out
    # (benchmarks/ACCURACY.md, "Intel XPU")
    efficiency, fixed, why = image.step_constants(model("sd-1.5"), "sycl")
    scale = image.encoder_efficiency("sycl")[0] / image.encoder_efficiency("cuda")[0]
    assert efficiency == pytest.approx(image.STEP_EFFICIENCY["unet"]["cuda"] * scale)
    assert fixed == pytest.approx(image.STEP_FIXED_SECONDS["unet"]["cuda"])
    assert "scored on sycl rows, not fitted" in why


@pytest.mark.parametrize(
    ("backend", "placement_device", "band"),
    [
        ("cuda", "gpu", image.SPEED_UNCERTAINTY),
        ("rocm", "gpu", image.SPEED_UNCERTAINTY_BY_BACKEND["rocm"]),  # the AMD rows' own errors (80th percentile)
        ("rocm", "cpu", image.SPEED_UNCERTAINTY),  # a card too small: the CPU's estimate keeps the general band
        ("sycl", "gpu", image.SPEED_UNCERTAINTY_BY_BACKEND["sycl"]),  # the Intel XPU rows' own errors
        ("vulkan", "gpu", image.SPEED_UNCERTAINTY),  # no rows score it: the general band
    ],
)
def test_the_band_is_the_backend_s_own_where_rows_scored_it(backend, placement_device, band):
    memory = 80 * 1024**3 if placement_device == "gpu" else 1 * 1024**3
    device = devices.Device("gpu", "Test GPU", backend, memory, 1000e9, 100e12)
    estimate = image.estimate(model("sd-1.5"), "fp16", 512, 512, 20, device, CPU)
    assert estimate.placement == placement_device
    assert estimate.uncertainty == band
    assert image.SPEED_UNCERTAINTY_BY_BACKEND["rocm"] > image.SPEED_UNCERTAINTY  # AMD rows scatter more than CUDA's


# --- invariants ---------------------------------------------------------------------------

MODELS = ["sd-1.5", "sdxl", "sdxl-turbo", "sd-3.5-medium", "flux.1-dev"]


@pytest.mark.parametrize("model_id", MODELS)
def test_more_flops_is_never_slower(model_id):
    times = [image.seconds_per_step(model(model_id), 1024, 1024, gpu(flops=flops))[0] for flops in (10e12, 50e12, 200e12, 1000e12)]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize("model_id", MODELS)
def test_more_steps_are_never_faster(model_id):
    times = [image.estimate(model(model_id), model(model_id).variants[0], 1024, 1024, steps, gpu(), CPU).speed
             for steps in (1, 4, 20, 50)]
    assert times == sorted(times)


@pytest.mark.parametrize("model_id", MODELS)
def test_a_higher_resolution_is_never_faster(model_id):
    times = [image.estimate(model(model_id), model(model_id).variants[0], size, size, 20, gpu(), CPU).speed
             for size in (256, 512, 768, 1024, 1536)]
    assert times == sorted(times)


def test_classifier_free_guidance_doubles_the_work_but_not_the_fixed_cost():
    sdxl, turbo = model("sdxl"), model("sdxl-turbo")  # same UNet; SDXL runs 2 guidance passes, Turbo 1
    device = gpu()
    fixed = image.STEP_FIXED_SECONDS["unet"]["cuda"]
    with_cfg = image.seconds_per_step(sdxl, 512, 512, device)[0] - fixed
    without = image.seconds_per_step(turbo, 512, 512, device)[0] - fixed
    assert with_cfg == pytest.approx(2 * without)


# --- the whole image ----------------------------------------------------------------------


def test_sdxl_turbo_on_an_rtx_4090_pays_the_fixed_costs_of_an_image():
    """One 512x512 step is not the image: the step's launch overhead, the VAE decode and the text encoders are
    paid whatever the GPU (the issue: 0.03 s for an SDXL-Turbo image on a 4090 is not real)."""
    rtx = gpu("NVIDIA GeForce RTX 4090", 165.2e12)
    turbo = model("sdxl-turbo")
    estimate = image.estimate(turbo, "fp16", 512, 512, 1, rtx, CPU)
    details = dict(estimate.details)
    step = details["seconds_per_step"]
    # The step alone: the fixed cost per step (14 ms) + 1.59 TFLOPs at 38% of 330 TFLOPS
    assert step > image.STEP_FIXED_SECONDS["unet"]["cuda"] > 0.01
    # VAE decode at 512x512: 2.54 TFLOPs at the 4090's 82.6 TFLOPS FP32 peak (GPU table) = 31 ms
    assert details["encode_decode_s"] > 2.53933e12 / 82.6e12
    assert estimate.speed == pytest.approx(step + details["encode_decode_s"])
    assert estimate.speed > 0.06
    # the once-per-image work is about half the image: the denoising step alone would be a misleading figure
    assert details["encode_decode_s"] > 0.4 * estimate.speed


def test_a_faster_gpu_cannot_take_an_image_below_its_fixed_costs():
    turbo = model("sdxl-turbo")
    fast = image.estimate(turbo, "fp16", 512, 512, 1, gpu(flops=1e18), CPU)
    assert fast.speed > image.STEP_FIXED_SECONDS["unet"]["cuda"]


def test_the_vae_runs_at_the_gpus_own_fp32_rate_where_the_probe_matched_a_table_row():
    # "Intel Arc A770" names two table rows (8 and 16 GB): the device's own FP32 rate, not half its FP16 peak
    matched = devices.Device("gpu", "Intel Arc A770", "sycl", 16 * 1024**3, 560e9, 39.3e12, vector_flops=19.7e12)
    assert image.fp32_flops(matched) == (19.7e12, "19.7 TFLOPS FP32 (GPU table)")
    unknown = devices.Device("gpu", "Mystery GPU", "cuda", 16 * 1024**3, 560e9, 40e12)
    assert image.fp32_flops(unknown) == (20e12, "FP32 assumed half the FP16 peak")


@pytest.mark.parametrize(("backend", "runtime"), [
    ("cuda", "ComfyUI-GGUF (CUDA)"), ("rocm", "ComfyUI-GGUF (ROCm)"), ("sycl", "ComfyUI-GGUF (XPU)"),
    ("metal", "ComfyUI-GGUF (MPS)"),
    # PyTorch (and so ComfyUI) has no Vulkan device: stable-diffusion.cpp loads the GGUF file itself there
    ("vulkan", "stable-diffusion.cpp (Vulkan)"),
])
def test_a_gguf_image_model_names_the_runtime_that_drives_the_gpus_backend(backend, runtime):
    flux = model("flux.1-schnell")
    estimate = image.estimate(flux, "q8_0", 1024, 1024, flux.steps, gpu(backend=backend), CPU)
    assert estimate.placement == "gpu" and image.runtime(flux, estimate, gpu(backend=backend)) == runtime


def test_nf4_is_not_offered_on_a_gpu_reached_only_through_vulkan():
    # bitsandbytes' nf4 loads only into PyTorch pipelines; PyTorch has no Vulkan device
    dev = model("flux.1-dev")
    on = {backend: image.estimate(dev, "nf4", 1024, 1024, dev.steps, gpu(backend=backend), CPU) for backend in ("cuda", "vulkan")}
    assert image.refuse(dev, "nf4", on["cuda"], gpu(backend="cuda")) is None
    assert "PyTorch has no device for Test GPU (vulkan)" in image.refuse(dev, "nf4", on["vulkan"], gpu(backend="vulkan"))
    assert image.refuse(dev, "q8_0", on["vulkan"], gpu(backend="vulkan")) is None


@pytest.mark.parametrize(("architecture", "fp16", "gguf"), [
    ("Xe-LP (Gen12)", "OpenVINO (optimum-intel)", "stable-diffusion.cpp (Vulkan)"),  # an Iris Xe: no PyTorch XPU device
    ("Xe-HPG (Alchemist)", "diffusers (XPU) or OpenVINO", "ComfyUI-GGUF (XPU)"),
])
def test_an_intel_gpus_image_runtime_follows_whether_pytorch_drives_it(architecture, fp16, gguf):
    card = devices.Device("gpu", "Test Intel GPU", "sycl", 16 * 1024**3, 100e9, 20e12, vendor="intel",
                          architecture=architecture)
    sd, flux = model("sd-1.5"), model("flux.1-schnell")
    on_sd = image.estimate(sd, "fp16", 512, 512, sd.steps, card, CPU)
    on_flux = image.estimate(flux, "q4_0", 1024, 1024, flux.steps, card, CPU)
    assert (image.runtime(sd, on_sd, card), image.runtime(flux, on_flux, card)) == (fp16, gguf)


def test_model_offload_holds_each_component_in_one_place_at_a_time():
    # FLUX.1 [schnell] bf16 on a 24 GB card: the denoiser (22.4 GB) runs its turn on the GPU while the text encoders
    # and the VAE wait in system memory. Its system-memory copy was listed as well, and the total read 55 GB for a
    # 32.7 GB pipeline.
    flux = model("flux.1-schnell")
    card = replace(gpu(), usable_memory_bytes=24 * 1024**3)
    whole = image.estimate(flux, "bf16", 1024, 1024, 4, gpu(), CPU)
    offload = image.estimate(flux, "bf16", 1024, 1024, 4, card, CPU)
    assert (whole.placement, offload.placement) == ("gpu", "offload")
    assert offload.memory.total_bytes == whole.memory.total_bytes
    assert [p.label for p in offload.memory.parts if p.where == "system"] == [
        "text encoders (waiting in system memory)", "VAE (waiting in system memory)"]
    components = {"denoiser": image.denoiser_bytes(flux, "bf16"), "text encoders": image.encoder_bytes(flux, "bf16"),
                  "VAE": int(flux.vae_params * 2)}
    # System memory peaks while the VAE, the smallest, has its turn: the denoiser and the text encoders wait.
    assert offload.system_memory_bytes == components["denoiser"] + components["text encoders"]
    assert offload.gpu_memory_bytes == whole.gpu_memory_bytes - components["text encoders"] - components["VAE"]


@pytest.mark.parametrize(("backend", "on_cpu", "refused"), [
    ("cuda", False, False), ("rocm", False, False), ("sycl", False, False),
    ("metal", False, True), ("vulkan", False, True), ("cuda", True, True),
])
def test_nf4_is_offered_only_where_bitsandbytes_runs_it(backend, on_cpu, refused):
    # FLUX.1 [dev] came out as nf4 on every Mac ("diffusers (MPS) or Draw Things") and every CPU ("diffusers (CPU) or
    # stable-diffusion.cpp"): neither named runtime loads a bitsandbytes file.
    card = gpu(backend=backend)
    flux = model("flux.1-dev")
    estimate = image.estimate(flux, "nf4", 1024, 1024, 28, None if on_cpu else card, CPU)
    reason = image.refuse(flux, "nf4", estimate, None if on_cpu else card)
    assert (reason is not None) == refused
    if not refused:
        assert "bitsandbytes" in image.runtime(flux, estimate, card)


def test_a_scaled_efficiency_never_exceeds_the_peak():
    # Metal's encoder efficiency is 1.65x CUDA's, which took FLUX's 85% CUDA fit to 140% of an Apple GPU's peak.
    value, _, why = image.step_constants(model("flux.1-schnell"), "metal")
    assert value == 1.0 and "at most the peak" in why
    assert image.step_constants(model("flux.1-schnell"), "cuda")[0] == image.STEP_EFFICIENCY["dit"]["cuda"]


def test_a_fast_image_is_described_with_its_figures_not_rounded_to_one_decimal():
    # SDXL-Turbo on an RTX 4090 read "about 0.1 s per 512x512 image at 1 steps" beside a 0.063 s/image table cell.
    turbo = model("sdxl-turbo")
    estimate = replace(image.estimate(turbo, "fp16", 512, 512, turbo.steps, gpu(), CPU), speed=0.0633)
    assert image.TASK.describe(turbo, estimate, Options()) == "about 0.063 s per 512x512 image at 1 step"
