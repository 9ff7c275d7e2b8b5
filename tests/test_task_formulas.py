"""The per-task formulas (image, speech, document search) against hand-computed values.

Each expectation spells out its arithmetic from the catalogue numbers, so a changed
constant or formula shows up as a changed product, not a silently shifted total.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuready.tasks import devices
from gpuready.tasks import text_estimate as est
from gpuready.tasks.registry import load_catalog
from gpuready.tasks import base, encoders, image, search, speech
from gpuready.tasks.base import MemoryPart, MemoryParts

CATALOG = load_catalog()


def model(model_id: str):
    return CATALOG.get(model_id)


def gpu(memory_bytes: int, flops: float = 100e12, bandwidth: float = 1000e9, backend: str = "cuda") -> devices.Device:
    return devices.Device("gpu", "Test GPU", backend, memory_bytes, bandwidth, flops)


CPU = devices.Device("cpu", "Test CPU", "cpu", 64 * 1024**3, 80e9, 1e12)


# --- image generation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "size", "expected"),
    [
        # UNets are counted layer by layer over their stages (tests/test_image_estimate.py checks the count):
        # SD 1.5 at 512 is 0.803 TFLOPs, SDXL at 1024 6.761 TFLOPs, far below 2 x parameters x latent pixels
        ("sd-1.5", 512, 803_217_735_680),
        ("sdxl", 1024, 6_761_186_590_720),
        # FLUX.1-dev at 1024: (128/2)^2 = 4,096 image tokens + 512 text tokens = 4,608;
        # 2 x 12B x 4,608 = 1.10592e14, attention 4 x 4,608^2 x 3,072 x 57 = 1.4872398004224e13
        ("flux.1-dev", 1024, 110_592_000_000_000 + 14_872_398_004_224),
        # SD 3.5 Large at 1024: 4,096 + 333 = 4,429 tokens; 2 x 8.1B x 4,429 + 4 x 4,429^2 x 2,432 x 38
        ("sd-3.5-large", 1024, 2 * 8.1e9 * 4429 + 4 * 4429**2 * 2432 * 38),
    ],
)
def test_denoiser_flops_per_forward_follow_parameters_times_latent_tokens(model_id, size, expected):
    assert image.flops_per_forward(model(model_id), size, size) == pytest.approx(expected, rel=1e-9)


def test_classifier_free_guidance_doubles_the_work_of_a_step_and_distilled_models_do_not():
    assert image.flops_per_step(model("sdxl"), 1024, 1024) == 2 * image.flops_per_forward(model("sdxl"), 1024, 1024)
    assert image.flops_per_step(model("sdxl-turbo"), 512, 512) == image.flops_per_forward(model("sdxl-turbo"), 512, 512)


@pytest.mark.parametrize(
    ("variant", "denoiser", "encoders"),
    [
        # 12B at 16 bits = 24 GB; CLIP-L 123M + T5-XXL 4.76B at fp16 = 9.766 GB
        ("bf16", 24_000_000_000, (123e6 + 4.76e9) * 2),
        # fp8: 12 GB; T5 (over 1B) drops to fp8: 4.76 GB + CLIP 0.246 GB
        ("fp8", 12_000_000_000, 4.76e9 + 123e6 * 2),
        # NF4 4.5 bits: 12B x 4.5 / 8 = 6.75 GB
        ("nf4", 6_750_000_000, 4.76e9 + 123e6 * 2),
        # GGUF Q8_0 8.5 bits: 12.75 GB
        ("q8_0", 12_750_000_000, 4.76e9 + 123e6 * 2),
    ],
)
def test_flux_components_take_their_variants_bytes(variant, denoiser, encoders):
    flux = model("flux.1-dev")
    assert image.denoiser_bytes(flux, variant) == denoiser
    assert image.encoder_bytes(flux, variant) == int(encoders)


def test_vae_activations_at_1024_are_three_128_channel_fp16_maps():
    assert image.activation_bytes(1024, 1024) == 3 * 128 * 1024 * 1024 * 2  # 805,306,368


def test_flux_in_bf16_is_offloaded_on_a_24_gb_card_and_fits_whole_on_an_80_gb_one():
    flux = model("flux.1-dev")
    # 24 + 9.766 + 0.168 GB of weights do not fit 24 GiB; the 24 GB denoiser + 0.805 GB
    # activations + 0.367 GB CUDA context (25.17e9) does.
    small = image.estimate(flux, "bf16", 1024, 1024, 50, gpu(24 * 1024**3), CPU)
    assert small.placement == "offload"
    assert small.gpu_memory_bytes == 24_000_000_000 + 805_306_368 + 350 * 1024**2
    # System memory peaks while the VAE (the smallest) has its turn: the denoiser and the text encoders wait there.
    assert small.system_memory_bytes == 24_000_000_000 + 9_766_000_000
    big = image.estimate(flux, "bf16", 1024, 1024, 50, gpu(80 * 1024**3), CPU)
    assert big.placement == "gpu"
    assert big.system_memory_bytes == 0
    none = image.estimate(flux, "bf16", 1024, 1024, 50, None, CPU)
    assert none.placement == "cpu"


def test_seconds_per_image_is_steps_plus_text_encoding_and_vae_decode_plus_offload_transfer():
    flux = model("flux.1-dev")
    step_flops = 110_592_000_000_000 + 14_872_398_004_224
    # A step: the fixed seconds per step + the FLOPs at the fitted fraction of the 100 TFLOPS peak.
    step = image.STEP_FIXED_SECONDS["dit"]["cuda"] + step_flops / (100e12 * image.STEP_EFFICIENCY["dit"]["cuda"])
    # Once per image: the VAE decoder, 2.53933e12 FLOPs per 512x512 scaled to 1024x1024, at half the FP16 peak
    # (the test GPU is in no table, so FP32 is assumed half of FP16); CLIP-L over 77 tokens and T5-XXL over 512
    # at the encoder efficiency.
    vae = 2.53933e12 * 4 / (100e12 / 2)
    text = (2 * 123e6 * 77 + 2 * 4.76e9 * 512) / (100e12 * image.encoder_efficiency("cuda")[0])
    on_gpu = image.estimate(flux, "fp8", 1024, 1024, 50, gpu(80 * 1024**3), CPU)
    assert on_gpu.speed == pytest.approx(50 * step + vae + text)
    offloaded = image.estimate(flux, "bf16", 1024, 1024, 50, gpu(24 * 1024**3), CPU)
    moved = 24_000_000_000 + 9_766_000_000 + 167_600_000
    # moved once per image from pageable memory: 12.88 GB/s over an unreported link (PCIe 4.0 x16 assumed)
    assert offloaded.speed == pytest.approx(50 * step + vae + text + moved / 12.88e9)
    # a PCIe 3.0 x8 link the driver reports caps it: 8 GT/s x 8 x 128/130 / 8 bytes x 23.85/31.5
    narrow = image.estimate(flux, "bf16", 1024, 1024, 50, replace(gpu(24 * 1024**3), pcie_link_gt_s=8.0, pcie_link_width=8), CPU)
    assert narrow.speed == pytest.approx(50 * step + vae + text + moved / (8e9 * 8 * 128 / 130 / 8 * 23.85 / 31.5))
    assert any("(the most its PCIe 3.0 x8 link as the driver reports it allows)" in line for line in narrow.basis)


# --- speech ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "encoder", "decoder"),
    [
        # 12 x 1280^2 x 32 = 629,145,600; the rest of 1,550M is the decoder
        ("whisper-large-v3", 629_145_600, 1_550_000_000 - 629_145_600),
        # turbo keeps the 32-layer encoder: 809M - 629.1M
        ("whisper-large-v3-turbo", 629_145_600, 809_000_000 - 629_145_600),
        # tiny: 12 x 384^2 x 4 = 7,077,888
        ("whisper-tiny", 7_077_888, 39_000_000 - 7_077_888),
    ],
)
def test_whisper_splits_into_encoder_and_decoder_parameters(model_id, encoder, decoder):
    assert model(model_id).encoder_params == encoder
    assert model(model_id).decoder_params == decoder


@pytest.mark.parametrize("backend", ["rocm", "metal", "vulkan", "sycl"])
def test_a_gpu_without_a_whisper_decoder_fit_takes_cudas_scaled_not_text_generations_constant(backend):
    # Text generation's bandwidth constant (about 0.9) once stood in for the decoder on every GPU but CUDA, whose
    # faster-whisper fit is 0.10: an RX 7900 XTX came out at 81.6x real time against an RTX 4090's 16.0x.
    value, why = speech.decoder_efficiency(backend, {"cuda": 0.10, "cpu": 0.44})
    assert value == pytest.approx(0.10 * est.BANDWIDTH_EFFICIENCY[backend] / est.BANDWIDTH_EFFICIENCY["cuda"])
    assert why.startswith(f"no Whisper decoder benchmark for {backend}: CUDA's faster-whisper fit")
    # A backend's own fit wins; with no GPU fit at all (CUDA's only device held out) text generation's constant stands.
    assert speech.decoder_efficiency(backend, {backend: 0.2})[0] == 0.2
    assert speech.decoder_efficiency(backend, {})[0] == est.BANDWIDTH_EFFICIENCY[backend]


def test_a_cpu_without_a_whisper_decoder_fit_keeps_text_generations_constant():
    assert speech.decoder_efficiency("cpu", {"cuda": 0.10})[0] == est.BANDWIDTH_EFFICIENCY["cpu"]


def test_whisper_encoder_flops_per_window_count_weights_and_attention_over_1500_frames():
    # 2 x 629,145,600 x 1,500 + 4 x 1,500^2 x 1,280 x 32
    assert speech.encoder_flops_per_window(model("whisper-large-v3")) == 2_256_076_800_000


def test_whisper_realtime_adds_encoder_compute_and_bandwidth_bound_decoding_per_window():
    large = model("whisper-large-v3")
    device = gpu(24 * 1024**3, flops=100e12, bandwidth=1000e9)
    # large's width is the reference (1,280): the full width-1,280 efficiency
    encode = 2_256_076_800_000 / (100e12 * speech.WHISPER_ENCODER_EFFICIENCY["cuda"])
    # fp16 decoder: 920,854,400 parameters x 2 bytes read per token
    per_token = 920_854_400 * 2 / (1000e9 * speech.DECODER_EFFICIENCY["cuda"])
    realtime, encoder_seconds, _ = speech.stt_realtime(large, "fp16", device)
    assert encoder_seconds == pytest.approx(encode)
    assert realtime == pytest.approx(30 / (encode + 100 * per_token))


def test_whisper_memory_is_weights_cross_attention_cache_and_runtime():
    large = model("whisper-large-v3")
    estimate = speech.estimate(large, "int8", gpu(8 * 1024**3), CPU)
    assert estimate.memory == MemoryParts((
        MemoryPart("weights (int8)", 1_550_000_000, "gpu"),
        # K,V x 1,500 frames x 1,280 x 32 layers x 2 bytes x 5 beams
        MemoryPart("working memory", 1_228_800_000, "gpu"),
        MemoryPart("runtime overhead", 350 * 1024**2, "gpu"),
    ))


def test_text_to_speech_cost_is_parameters_times_frames_times_passes():
    f5 = model("f5-tts")
    device = gpu(24 * 1024**3, flops=100e12)
    # 2 x 336M x 93.75 frames x 64 passes = 4.032e12 FLOPs per second of audio
    realtime, _ = speech.tts_realtime(f5, device, "fp16")
    efficiency = speech.TTS_MODEL_EFFICIENCY.get(("f5-tts", "cuda"), speech.TTS_EFFICIENCY["cuda"])
    # plus the fixed GPU time per second of audio
    assert realtime == pytest.approx(1 / (4.032e12 / (100e12 * efficiency) + speech.TTS_FIXED_SECONDS["cuda"]))


# --- document search --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "flops"),
    [
        # 12 x 384^2 x 6 = 10,616,832 layer parameters; 2 x that x 256 + 4 x 256^2 x 384 x 6
        ("all-minilm-l6-v2", 5_435_817_984 + 603_979_776),
        # bge-m3: 12 x 1024^2 x 24 = 301,989,888; embeddings (250k x 1024) are not multiplies
        ("bge-m3", 2 * 301_989_888 * 256 + 4 * 256**2 * 1024 * 24),
    ],
)
def test_embedding_flops_per_chunk_count_the_transformer_layers_at_256_tokens(model_id, flops):
    assert search.flops_per_chunk(model(model_id)) == flops


@pytest.mark.parametrize(
    ("model_id", "documents", "expected"),
    [
        # 10,000 x 5 chunks x (768 x 4 + 16 x 2 x 4 = 3,200 bytes)
        ("bge-base-en-v1.5", 10_000, 160_000_000),
        # 1,000,000 x 5 x (1,024 x 4 + 128 = 4,224)
        ("bge-m3", 1_000_000, 21_120_000_000),
        # 100 x 5 x (384 x 4 + 128 = 1,664)
        ("all-minilm-l6-v2", 100, 832_000),
    ],
)
def test_the_index_holds_float32_vectors_and_hnsw_links_per_chunk(model_id, documents, expected):
    assert search.index_bytes(model(model_id), documents) == expected


@pytest.mark.parametrize(
    ("model_id", "tokens", "flops"),
    [
        # 2 x 10,616,832 x 128 = 2,717,908,992 + attention 4 x 128^2 x 384 x 6 = 150,994,944
        ("all-minilm-l6-v2", 128, 2_868_903_936),
        # the cross-encoder has the same body: 1,358,954,496 + 4 x 64^2 x 384 x 6 = 37,748,736
        ("ms-marco-minilm-l-6-v2", 64, 1_396_703_232),
        # 2 x 301,989,888 x 512 = 309,237,645,312 + 4 x 512^2 x 1024 x 24 = 25,769,803,776
        ("bge-large-en-v1.5", 512, 335_007_449_088),
    ],
)
def test_flops_per_chunk_at_a_given_length_add_the_quadratic_attention_term(model_id, tokens, flops):
    assert search.flops_per_chunk(model(model_id), tokens) == flops


def test_chunks_per_second_are_device_flops_times_efficiency_over_flops_per_chunk():
    # An L4 (121 TFLOPS FP16) embedding 449-token chunks with bge-large: 291,005,104,128 FLOPs a chunk,
    # at CUDA's efficiency (the Whisper encoder's 0.11 while no embedding constant earns its place).
    share, _ = search.efficiency("cuda")
    speed, basis = search.chunks_per_second(model("bge-large-en-v1.5"), gpu(24 * 1024**3, flops=121e12), 449)
    assert speed == pytest.approx(121e12 * share / 291_005_104_128)
    assert "291.0 GFLOPs per 449-token chunk" in basis


def test_fp32_weights_on_a_gpu_are_counted_below_the_fp16_peak_by_the_fitted_power_of_its_fp32_rate():
    # A Tesla T4: 65 TFLOPS FP16 tensor, 8.1 FP32. fp16 (and int8) weights at the FP16 peak; fp32 at
    # 65 x (8.1 / 65)^a, with a = 0.47: 65 x 0.1246^0.47 = 24.2 TFLOPS, so fp32 runs 2.7x slower, not 8x or 1x
    t4 = devices.Device("gpu", "Tesla T4", "cuda", 16 * 1024**3, 320e9, 65e12, vector_flops=8.1e12)
    minilm = model("all-minilm-l6-v2")
    fp16, _ = search.chunks_per_second(minilm, t4, 256, "fp16")
    fp32, basis = search.chunks_per_second(minilm, t4, 256, "fp32")
    assert search.chunks_per_second(minilm, t4, 256, "int8")[0] == fp16
    assert fp32 == pytest.approx(fp16 * (8.1 / 65) ** search.FP32_GPU_EXPONENT)
    assert fp32 == pytest.approx(fp16 / 2.66, rel=0.01)
    assert "for fp32 weights" in basis and "FP32 rate 8.1" in basis
    # A GPU without a lower FP32 rate in the table, and a CPU, run every variant at their one peak
    plain = devices.Device("gpu", "Unknown GPU", "cuda", None, None, 65e12)
    cpu = devices.Device("cpu", "8-core", "cpu", None, None, 1.536e12, cores=8)
    for device in (plain, cpu):
        assert search.chunks_per_second(minilm, device, 256, "fp32")[0] == search.chunks_per_second(minilm, device, 256, "fp16")[0]


@pytest.mark.parametrize("backend", ["cuda", "rocm", "metal", "sycl", "vulkan"])
def test_a_gpu_backends_efficiency_is_its_fitted_one_else_the_whisper_encoders(backend):
    share, why = search.efficiency(backend)
    if backend in search.EMBEDDING_EFFICIENCY:
        assert share == search.EMBEDDING_EFFICIENCY[backend] and "sentence-transformers" in why
    else:
        assert share == encoders.encoder_efficiency(backend)[0] and "no embedding measurement" in why


@pytest.mark.parametrize("cores", [None, 1, 2, 8, 16, 64])
def test_a_cpus_efficiency_is_one_cores_share_times_cores_to_the_minus_scaling(cores):
    share, why = search.efficiency("cpu", cores)
    used = cores or 1  # unknown cores: one core's share
    assert share == pytest.approx(search.CPU_EMBEDDING_EFFICIENCY * used**-search.CPU_CORE_SCALING)
    assert f"x {used} cores^-" in why


def test_a_cpu_speed_uses_its_own_core_count():
    # 8 cores x 3 GHz x 64 FLOPs a cycle = 1.536 TFLOPS; bge-small at 449 tokens:
    # 2 x 12 x 384^2 x 12 x 449 = 19,067,830,272 + 4 x 449^2 x 384 x 12 = 3,715,909,632 -> 22,783,739,904 FLOPs.
    cpu = devices.Device("cpu", "8-core", "cpu", None, None, 1.536e12, cores=8)
    speed, basis = search.chunks_per_second(model("bge-small-en-v1.5"), cpu, 449)
    share = search.CPU_EMBEDDING_EFFICIENCY * 8**-search.CPU_CORE_SCALING
    assert speed == pytest.approx(1.536e12 * share / 22_783_739_904)
    assert "8 cores" in basis


@pytest.mark.parametrize("model_id", [m.id for m in CATALOG.for_task("document-search")])
def test_more_flops_never_slower_and_longer_chunks_never_more_chunks_per_second(model_id):
    chosen = model(model_id)
    for backend in ("cpu", "cuda", "metal"):
        kind = "cpu" if backend == "cpu" else "gpu"
        speeds = [search.chunks_per_second(chosen, devices.Device(kind, "d", backend, None, None, flops))[0]
                  for flops in (1e11, 1e12, 5e12, 1e14, 1e15)]
        assert speeds == sorted(speeds)
        if backend == "cpu":
            # More cores of the same kind: more FLOPS, and never slower although each core's share falls.
            by_cores = [search.chunks_per_second(chosen, devices.Device(kind, "d", backend, None, None, n * 192e9, cores=n))[0]
                        for n in (1, 2, 4, 8, 16, 64, 128)]
            assert by_cores == sorted(by_cores)
        by_length = [search.chunks_per_second(chosen, devices.Device(kind, "d", backend, None, None, 1e13), tokens)[0]
                     for tokens in (1, 16, 128, 256, 512, 2048, 8192)]
        assert by_length == sorted(by_length, reverse=True)
        assert len(set(by_length)) == len(by_length)


def test_no_flops_figure_means_no_speed_said_so():
    speed, why = search.chunks_per_second(model("all-minilm-l6-v2"), devices.Device("gpu", "Mystery GPU", "vulkan", None, None, None))
    assert speed is None and "Mystery GPU" in why


def test_the_index_lives_in_system_memory_even_when_the_model_runs_on_the_gpu():
    estimate = search.estimate(model("bge-base-en-v1.5"), "fp16", 10_000, gpu(8 * 1024**3), CPU)
    assert estimate.placement == "gpu"
    assert estimate.system_memory_bytes == 160_000_000
    assert estimate.memory.parts[-1] == MemoryPart("index (10,000 documents)", 160_000_000, "system")


# --- levels ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "level"),
    [(4.0, "runs-well"), (10.0, "runs-well"), (12.0, "runs"), (40.0, "runs"), (299.0, "slow"), (301.0, "too-slow"), (None, "unknown")],
)
def test_seconds_per_image_map_to_levels_lower_is_better(seconds, level):
    assert base.level_at_most(seconds, image.SECONDS_PER_IMAGE_CEILINGS) == level


@pytest.mark.parametrize(("realtime", "level"), [(12.0, "runs-well"), (2.0, "runs"), (0.6, "slow"), (0.4, "too-slow")])
def test_speech_to_text_speed_maps_to_levels_higher_is_better(realtime, level):
    assert base.level_at_least(realtime, speech.STT_FLOORS) == level
