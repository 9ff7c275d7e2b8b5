"""Speech sections of benchmarks/ACCURACY.md: speech to text (Whisper) and text to speech, scored by
cross-validation (leave one device out, leave one source out) beside the in-sample fit.

Called by score_estimator.py's report() with its helpers (row loader, hardware builders, CPU_SPECS and
FITS), so the constants fitted here land in the same FITS that tests/test_score_estimator.py pins.

Every constant is a median of what the rows imply (a share of peak FLOPS or bandwidth); leave one
device out refits the medians without the held-out device's rows and predicts that device, through
the same fallback gpuready uses for a backend with no rows of its own.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from speedfit import error as ape
from speedfit import median_of_group_medians, percentile

from gpuready.tasks import devices, encoders, speech
from gpuready.tasks import text_estimate as est

WHISPER = {"whisper-large": "whisper-large-v3", "whisper-large-v2": "whisper-large-v3"}
# whisper.cpp builds measured that current whisper.cpp has since made faster on the same hardware:
# whisper.cpp PR #1486 (commit ae1bd69, Nov 2023) timed the V100 encoder at 9.0 / 14.9 / 40.6 / 105.4 ms
# (tiny / base / small / medium); the v1.7.5 release notes (commit ad4e350) time the same V100 and
# models at 4.0 / 7.0 / 18.7 / 53.2 ms. gpuready estimates current whisper.cpp, so these rows are
# scored and shown but kept out of the fit (as score_estimator keeps llama.cpp forks out).
SUPERSEDED = {"ae1bd69": "whisper.cpp PR #1486 build (Nov 2023), about 2x slower than v1.7.5 on the same V100"}
# CPU builds whose encoder matrix multiplies run in a vendor BLAS (config "BLAS": Apple Accelerate on the
# macOS rows of whisper.cpp issue #89) rather than ggml's own CPU kernels, which gpuready estimates (the
# default Linux/Windows build); kept out of the CPU fit like score_estimator's llama.cpp forks, and shown.
VENDOR_BLAS = "CPU build with a vendor BLAS (config 'AVX2 BLAS', macOS Accelerate) in place of ggml's CPU kernels"


def kept_out(raw: dict) -> str | None:
    """Why an encoder row is scored but kept out of the fit, or None."""
    if raw.get("commit") in SUPERSEDED:
        return f"{raw['commit']}: {SUPERSEDED[raw['commit']]}"
    if raw["backend"] == "cpu" and "BLAS" in raw.get("config", ""):
        return VENDOR_BLAS
    return None
# The files text-to-speech rows live in (speech.toml and speech-avx512.toml hold speech to text): the section names them.
TTS_FILES = tuple((Path(__file__).resolve().parent / "validation").glob("speech-tts*.toml"))
TARGET = 25.0  # issue 10: leave-one-device-out median error, per speech direction
BAND_PERCENTILE = 0.8  # as text generation's SPEED_BAND: four held-out devices in five inside the band
GEFORCE_FULL_RATE = 2.0  # tried as a term: FP16-accumulate tensor rate on GeForce (see score_estimator)
# Backends whose Whisper encoder efficiency carries the width term (tasks/speech.py width_share):
# those where it lowers the leave-one-device-out error ("Encoder terms tried" shows the others).
WIDTH_BACKENDS = ("cuda",)


def whisper_model(catalog, name: str):
    name = name.removesuffix(".en")
    return catalog.get(WHISPER.get(name, name))


def median_or_none(values):
    return statistics.median(values) if values else None


@dataclass
class Row:
    kind: str  # encoder | realtime | tts
    backend: str
    device: str
    source: str
    label: str
    measured: float  # encoder: seconds per window; realtime and tts: x real time
    work: float  # encoder and tts: FLOPs per window / per second of audio; realtime: unused
    peak: float  # device FLOPS (tables); for realtime rows the device itself is kept in `extra`
    geforce: bool = False
    layers: int = 0
    width: int = 0
    cores: int = 0
    extra: tuple = ()
    kept_out: str | None = None  # why the row is scored but not fitted
    passes: int = 1  # tts: network passes per output frame

    @property
    def in_fit(self) -> bool:
        return self.kept_out is None


# --- fitting and cross-validation ----------------------------------------------------------


def encoder_fit(rows: list[Row], geforce: float = 1.0, width_backends=WIDTH_BACKENDS) -> dict[str, dict]:
    """ENCODER_EFFICIENCY ("plain": per backend, the median of FLOPs / (peak x measured seconds)) and, for the
    backends given the width term, WHISPER_ENCODER_EFFICIENCY ("wide": the median of that share x 1,280 / d_model,
    the share a width-1,280 encoder reaches when the share grows in proportion to width)."""
    implied = defaultdict(list)
    for row in rows:
        implied[row.backend].append((row.work / (row.peak * (geforce if row.geforce else 1.0) * row.measured), row.width))
    fits = {"plain": {b: statistics.median(v for v, _ in values) for b, values in implied.items()}, "wide": {}}
    for backend in width_backends:
        if backend in implied:
            fits["wide"][backend] = statistics.median(v / speech.width_share(w) for v, w in implied[backend])
    return fits


def encoder_efficiency_of(row: Row, fits: dict[str, dict]) -> float:
    if row.backend in fits["wide"]:
        return fits["wide"][row.backend] * speech.width_share(row.width)
    return fallback_efficiency(fits["plain"], row.backend)


def fallback_efficiency(table: dict[str, float], backend: str) -> float:
    """What gpuready does for a backend without rows: a fitted backend's figure (CUDA's, else CPU's) scaled by
    the text-generation prompt efficiency of this backend relative to that one (tasks/encoders.py, tasks/speech.py)."""
    if backend in table:
        return table[backend]
    reference = "cuda" if "cuda" in table else "cpu"
    prompt = est.COMPUTE_EFFICIENCY
    return table[reference] * prompt.get(backend, prompt["cpu"]) / prompt.get(reference, prompt["cpu"])


def encoder_predict(row: Row, fits: dict[str, dict], geforce: float = 1.0) -> float:
    return row.work / (row.peak * (geforce if row.geforce else 1.0) * encoder_efficiency_of(row, fits))


def realtime_fit(rows: list[Row], encoder_fits: dict[str, dict]) -> dict[str, float]:
    """DECODER_EFFICIENCY: per backend, the bandwidth share the time left after the estimated encoder implies."""
    implied = defaultdict(list)
    for row in rows:
        model, variant, device = row.extra
        encode = row.work / (device.flops * encoder_efficiency_of(row, encoder_fits))
        decode = speech.WINDOW_SECONDS / row.measured - encode
        if decode <= 0:
            continue
        read = model.decoder_params * speech.VARIANT_BITS[variant] / 8
        implied[row.backend].append(read * speech.TOKENS_PER_WINDOW / (device.bandwidth_bytes_per_s * decode))
    return {backend: statistics.median(values) for backend, values in implied.items()}


def realtime_predict(row: Row, encoder_fits: dict[str, dict], decoder_table: dict[str, float]) -> float:
    model, variant, device = row.extra
    encode = row.work / (device.flops * encoder_efficiency_of(row, encoder_fits))
    decoder, _ = speech.decoder_efficiency(row.backend, decoder_table)
    per_token = model.decoder_params * speech.VARIANT_BITS[variant] / 8 / (device.bandwidth_bytes_per_s * decoder)
    return speech.WINDOW_SECONDS / (encode + speech.TOKENS_PER_WINDOW * per_token)


# The thread exponent's grid (tasks/speech.py TTS_CPU_THREAD_EXPONENT): 0 to 1 in steps of 0.05.
THREAD_EXPONENTS = tuple(i / 20 for i in range(21))
# The Amdahl serial share's grid (tasks/speech.py TTS_CPU_SERIAL_SHARE): 0 to 0.5 in steps of 0.05.
SERIAL_SHARES = tuple(i / 20 for i in range(11))


@dataclass(frozen=True)
class ThreadForm:
    """The CPU thread term a formula carries, as the grids it is fitted on: the Amdahl serial share on `serials`, the
    power exponent on `exponents`; (0.0,) on both: none (every thread the same share of its core's peak)."""
    serials: tuple = (0.0,)
    exponents: tuple = (0.0,)

    @property
    def name(self) -> str:
        return "amdahl" if self.serials != (0.0,) else "power" if self.exponents != (0.0,) else "none"


NO_THREAD_TERM = ThreadForm()
AMDAHL = ThreadForm(serials=SERIAL_SHARES)
POWER = ThreadForm(exponents=THREAD_EXPONENTS)


@dataclass(frozen=True)
class GpuTerms:
    """The GPU terms a formula carries: an fp32 run at the GPU's FP32 rate (False: every GPU row at its FP16 peak), and
    fixed seconds per second of audio (per network pass where `per_pass`) fitted on `fixed_grid` ((0.0,): none)."""
    fp32: bool = True
    fixed_grid: tuple = (0.0,)
    per_pass: bool = False


NO_GPU_TERMS = GpuTerms(fp32=False)


def tts_fit(rows: list[Row], exponents=THREAD_EXPONENTS, per_model: bool | str = False, gpu: GpuTerms = GpuTerms(),
            by_device: bool = False, serials=(0.0,)) -> dict:
    """TTS_EFFICIENCY and TTS_CPU_THREAD_EXPONENT: per backend, the median of (FLOPs per second of audio / peak) /
    measured seconds per second, a CPU row's share divided by threads^-a first (each CPU thread's share falls as a
    power of the threads used), with a on `exponents` where the rows' median error is least ((0.0,): no thread
    term, the formula gpuready carries while the term does not pass its rule, thread_term). per_model "gpu": also
    TTS_MODEL_EFFICIENCY, each catalogue model's own median on each GPU backend it has rows on. `gpu`: the fixed GPU
    seconds (TTS_FIXED_SECONDS) on its grid, taken off each GPU row's time before its share is read. `by_device`:
    each median is over devices (each device's own median first), not over rows (device_term). `serials`: the Amdahl
    serial share's grid (TTS_CPU_SERIAL_SHARE), the other thread term ((0.0,): none)."""
    return tts_fit_terms(rows, per_model, serials, exponents, gpu.fixed_grid, gpu.per_pass, by_device)


def form_fit(rows: list[Row], form: ThreadForm, per_model: bool | str = False, gpu: GpuTerms = GpuTerms(),
             by_device: bool = False) -> dict:
    """tts_fit with the thread term `form` carries."""
    return tts_fit(rows, form.exponents, per_model, gpu, by_device, form.serials)


@dataclass
class GpuChain:
    """The GPU terms judged in turn, held out: `base` the formula before them (every GPU row at its FP16 peak), `fp32`
    with fp32 runs at the FP32 rate, `fixed` and `per_pass` with a fixed GPU time per second of audio (once, or once per
    network pass) on top of the carried one, and `terms` the GPU terms that pass the rule a term is kept by."""
    base: "Tried"
    fp32: "Tried"
    fixed: "Tried"
    per_pass: "Tried"
    terms: GpuTerms

    @property
    def fp32_kept(self) -> bool:
        return self.fp32.lowers(self.base)

    @property
    def before_fixed(self) -> "Tried":
        return self.fp32 if self.fp32_kept else self.base


def gpu_chain(rows: list[Row]) -> GpuChain:
    """The GPU terms (fp32 at the FP32 rate, then a fixed GPU time per second of audio or per pass), each kept only if
    it lowers the LODO median of the formula carried before it without raising LOSO's; of the two fixed forms, the one
    with the lower LODO median where both pass."""
    base = try_formula("base", rows, True, True, gpu=NO_GPU_TERMS)
    fp32 = scoped(try_formula("fp32", rows, True, True, gpu=GpuTerms()), rows, gpu=True)
    carried_terms = GpuTerms(fp32=fp32.lowers(base))
    carried = fp32 if carried_terms.fp32 else base
    fixed_terms = dataclasses.replace(carried_terms, fixed_grid=FIXED_SECONDS)
    pass_terms = dataclasses.replace(fixed_terms, per_pass=True)
    fixed = scoped(try_formula("fixed", rows, True, True, gpu=fixed_terms), rows, gpu=True)
    per_pass = scoped(try_formula("per pass", rows, True, True, gpu=pass_terms), rows, gpu=True)
    passing = [(t, terms) for t, terms in ((fixed, fixed_terms), (per_pass, pass_terms)) if t.lowers(carried)]
    if passing:
        carried_terms = min(passing, key=lambda p: p[0].own_lodo)[1]
    return GpuChain(base, fp32, fixed, per_pass, carried_terms)


def by_form(form: ThreadForm, amdahl_tried, power_tried, none=None):
    """What stands for `form` among the formulas tried with each thread term (`none` where the form carries none)."""
    return {AMDAHL.name: amdahl_tried, POWER.name: power_tried}.get(form.name, none)


@dataclass
class ThreadChoice:
    """The thread terms judged, held out: `both` the formula without one (carrying the GPU terms kept, gpu_chain),
    `amdahl` and `power` with each (judged on the CPU rows), and `form` the one gpuready's formula carries: of those
    that pass the rule a term is kept by (it lowers the LODO median of the formula without it and LOSO's does not
    rise), the one with the lower LODO median, as between the two fixed GPU forms; none where neither passes."""
    both: "Tried"
    amdahl: "Tried"
    power: "Tried"
    form: ThreadForm

    @property
    def carried(self) -> "Tried":
        return by_form(self.form, self.amdahl, self.power, self.both)


def thread_term(rows: list[Row], gpu: GpuTerms | None = None) -> ThreadChoice:
    gpu = gpu_chain(rows).terms if gpu is None else gpu
    both = try_formula("both", rows, True, True, gpu=gpu)
    amdahl = scoped(try_formula("amdahl", rows, True, True, threads=AMDAHL, gpu=gpu), rows, gpu=False)
    power = scoped(try_formula("power", rows, True, True, threads=POWER, gpu=gpu), rows, gpu=False)
    passing = [(t, form) for t, form in ((amdahl, AMDAHL), (power, POWER)) if t.lowers(both)]
    form = min(passing, key=lambda p: p[0].own_lodo)[1] if passing else NO_THREAD_TERM
    return ThreadChoice(both, amdahl, power, form)


def model_term(rows: list[Row], base: "Tried", form: ThreadForm, gpu: GpuTerms | None = None) -> tuple["Tried", bool]:
    """The formula carried so far (`base`, with or without the thread term) with each catalogue model's own efficiency
    on a GPU backend (TTS_MODEL_EFFICIENCY), held out, and whether it passes the rule a term is kept by against `base`.
    A GPU runs F5-TTS's DiT as a few large matrix multiplies and Kokoro's LSTMs and small convolutions as many short
    kernels, so the share of peak each reaches differs by model, where a CPU's differs far less (its convolutions are
    vectorised alike)."""
    gpu = gpu_chain(rows).terms if gpu is None else gpu
    tried = scoped(try_formula("model", rows, True, True, per_model="gpu", threads=form, gpu=gpu), rows, gpu=True)
    return tried, tried.lowers(base)


def device_term(rows: list[Row], base: "Tried", form: ThreadForm, per_model: bool | str,
                gpu: GpuTerms) -> tuple["Tried", bool]:
    """The formula carried so far (`base`) with each fitted median taken over devices, each device's own median first,
    instead of over rows, held out, and whether it passes the rule a term is kept by against `base`. A device with many
    published rows (a Raspberry Pi 4's thread sweeps, one repository's benchmark runs on one RTX 4060 Ti) otherwise
    decides its backend's share alone, and a held-out device is predicted from that one machine."""
    tried = try_formula("device", rows, True, True, per_model=per_model, threads=form, gpu=gpu, by_device=True)
    return tried, tried.lowers(base)


def tts_predict(row: Row, fits: dict) -> float:
    return tts_predict_terms(row, fits)


def stt_fits(train: list[Row], geforce: float = 1.0) -> tuple[dict, dict]:
    encoder = encoder_fit([r for r in train if r.kind == "encoder"], geforce)
    return encoder, realtime_fit([r for r in train if r.kind == "realtime"], encoder)


def stt_predict(row: Row, fits: tuple[dict, dict], geforce: float = 1.0) -> float:
    """Predicted x real time (realtime rows) or seconds per window (encoder rows)."""
    encoder, decoder = fits
    return encoder_predict(row, encoder, geforce) if row.kind == "encoder" else realtime_predict(row, encoder, decoder)


def held_out(rows: list[Row], key, fit, predict) -> dict[int, float]:
    """Absolute % error of each fitted row when every row sharing its key (device or source) is left out of the fit."""
    errors = {}
    for value in sorted({key(r) for r in rows}):
        train = [r for r in rows if key(r) != value]
        fits = fit(train)
        for index, row in enumerate(rows):
            if key(row) == value:
                errors[index] = ape(predict(row, fits), row.measured)
    return errors


def summary(values) -> str:
    values = list(values)
    return f"{statistics.median(values):.0f}% | {max(values):.0f}%" if values else "- | -"


# --- rows -----------------------------------------------------------------------------------


def speech_rows(se, catalog) -> tuple[list[Row], dict[str, int]]:
    rows: list[Row] = []
    skipped: dict[str, int] = defaultdict(int)
    for raw in se.load("speech"):
        backend = raw["backend"]
        tts = is_tts_row(raw, catalog)
        model = catalog.get(raw["model"]) if tts else whisper_model(catalog, raw["model"])
        if model is None:
            skipped["model not known"] += 1
            continue
        device = se.cpu_device(raw) if backend == "cpu" else se.gpu_device(raw, backend)
        if device is None and backend == "cpu" and ("encode_ms" in raw or tts):
            device = compute_only_cpu(se, raw)
        if device is None or not device.flops:
            skipped["hardware not in the tables"] += 1
            continue
        common = dict(backend=backend, device=se.device_key(raw, device), source=se.source_key(raw), peak=device.flops,
                      geforce="GeForce" in device.name, cores=raw.get("threads") or 0)
        if tts:
            rows.append(tts_row(se, raw, model, device, common))
        elif "encode_ms" in raw:
            rows.append(Row(kind="encoder", label=f"{model.id} {raw['precision']}", measured=raw["encode_ms"] / 1000,
                            work=speech.encoder_flops_per_window(model), layers=model.encoder_layers, width=model.d_model,
                            kept_out=kept_out(raw), extra=(device.fma_flops,) if device.fma_flops else (), **common))
        elif raw["implementation"] == "faster-whisper" and raw.get("batch_size") == 1:
            variant = raw["precision"]
            rows.append(Row(kind="realtime", label=f"{model.id} {variant}", measured=raw["audio_seconds"] / raw["wall_seconds"],
                            work=speech.encoder_flops_per_window(model), width=model.d_model, extra=(model, variant, device), **common))
        else:
            skipped["implementation not modelled (openai/whisper, transformers, batched, whisper.cpp end to end)"] += 1
    return rows, skipped


# The precision a GPU row ran at where its source does not state it: the default of the runtime it names. Kokoro's
# PyTorch model (hexgrad/kokoro kokoro/model.py KModel) is built and loaded in fp32 and Kokoro-FastAPI moves it to the
# GPU as it is (api/src/inference/kokoro_v1.py: KModel(...).eval(), then .cuda(); no .half() or autocast); F5-TTS's
# loader casts the model to fp16 on a CUDA GPU of compute capability 7 or more (src/f5_tts/infer/utils_infer.py
# load_checkpoint, dtype None -> torch.float16), which the paper's and the L20 benchmark's PyTorch runs use.
RUNTIME_PRECISION = {"kokoro-82m": "fp32", "f5-tts": "fp16", "piper-medium": "fp32"}


def tts_precision(raw: dict, model) -> str:
    """The precision a row ran at: as stated, else its runtime's default (RUNTIME_PRECISION)."""
    stated = raw.get("precision", "")
    return stated if stated in speech.VARIANT_BITS else RUNTIME_PRECISION.get(model.id, "fp16")


def tts_row(se, raw: dict, model, device: devices.Device, common: dict) -> Row:
    """A text-to-speech row as gpuready estimates it (the vocoder counted at its rates, a Raspberry Pi at its stated
    clock, an fp32 run on a GPU at its FP32 rate, an AVX-512 CPU at its FMA pipes' rate, a core catalog/cpus.toml states
    narrower than its flags at that width), with the plain counts kept in `extra` for the terms table: (FLOPs without
    the vocoder term, the flags' peak at the assumed clock or, on a GPU, the FP16 peak, the peak as counted but at the
    flags' figure in place of the FMA pipes' rate, the peak as counted but at the flags' width in place of the
    narrower core's fp32_flops_per_cycle)."""
    passes = 2 * raw["nfe"] if raw.get("nfe") else model.passes_per_frame
    plain = dataclasses.replace(model, vocoder_params=0.0, vocoder_flops_per_second=0.0)
    if device.kind == "cpu":
        device = dataclasses.replace(device, clock_hz=devices.stated_cpu_clock_hz(device.name))
        common["cores"] = min(se.CPU_SPECS[raw["cpu_hint"]][1], raw.get("threads") or 10**6)
    peak, _ = speech.tts_peak_flops(device, tts_precision(raw, model))
    flags_peak, _ = speech.tts_peak_flops(dataclasses.replace(device, fma_flops=None), tts_precision(raw, model))
    wide_peak = peak * flags_width_ratio(se, raw, device)
    measured = tts_measured(raw)
    return Row(kind="tts", label=f"{model.id} ({raw['voice']})", measured=measured,
               work=speech.tts_flops_per_audio_second(model, passes), kept_out=tts_kept_out(raw), passes=passes,
               extra=(speech.tts_flops_per_audio_second(plain, passes), device.flops, flags_peak, wide_peak),
               **{**common, "peak": peak})


def flags_width_ratio(se, raw: dict, device: devices.Device) -> float:
    """How much wider a CPU row's flags say its cores are than catalog/cpus.toml's fp32_flops_per_cycle states (a
    Raspberry Pi 4's Cortex-A72: NEON's two 128-bit FMA pipes, 16 FP32 FLOPs a cycle, against the 8 it retires); 1
    elsewhere."""
    platform = devices.match_cpu(device.name) if device.kind == "cpu" else None
    if platform is None or not platform.fp32_flops_per_cycle or raw.get("cpu_hint") not in se.CPU_SPECS:
        return 1.0
    return max(1.0, devices.cpu_flops_per_cycle(se.CPU_SPECS[raw["cpu_hint"]][2]) / platform.fp32_flops_per_cycle)


def is_tts_row(raw: dict, catalog) -> bool:
    """A text-to-speech row: one with a real-time factor (rtf or x_realtime), or a catalogue text-to-speech model timed
    as the source prints it (audio_seconds of audio in wall_seconds of synthesis)."""
    if "rtf" in raw or "x_realtime" in raw:
        return True
    model = catalog.get(raw["model"])
    return getattr(model, "kind", None) == "tts" and "audio_seconds" in raw and "wall_seconds" in raw


def tts_measured(raw: dict) -> float:
    """x real time as the row's source gives it: x_realtime as printed, the inverse of a printed rtf, or seconds of
    audio over seconds of synthesis where the source prints the two timings and no ratio."""
    if "x_realtime" in raw:
        return raw["x_realtime"]
    if "rtf" in raw:
        return 1 / raw["rtf"]
    return raw["audio_seconds"] / raw["wall_seconds"]


# Runtimes gpuready's text-to-speech estimate describes (tasks/speech.py runtime_name): Piper through ONNX Runtime
# (how Piper ships: its C++ binary and Python package); other TTS models through PyTorch, whose Kokoro graph the
# ONNX exports run too (the one source timing both on one machine, the EPYC 7763 rows, has them 8% apart).
# Piper's training checkpoint run in PyTorch is another runtime, 1.5x slower than its ONNX export on both
# machines of rhasspy/piper issue #33: scored, kept out of the fit.
PIPER_PYTORCH = "Piper run through PyTorch: gpuready estimates Piper through ONNX Runtime (tasks/speech.py runtime_name)"


def tts_kept_out(raw: dict) -> str | None:
    if raw["model"].startswith("piper") and "PyTorch" in raw["implementation"]:
        return PIPER_PYTORCH
    return None


def compute_only_cpu(se, raw: dict) -> devices.Device | None:
    """A CPU known by its cores (score_estimator's CPU_SPECS) but not by catalog/cpus.toml: enough for an
    encoder row or a text-to-speech row, both estimated compute bound (no bandwidth needed)."""
    known = se.CPU_SPECS.get(raw.get("cpu_hint", ""))
    if known is None:
        return None
    name, cores, features = known
    used = min(cores, raw["threads"]) if raw.get("threads") else cores
    return devices.Device(kind="cpu", name=name, backend="cpu", usable_memory_bytes=None, bandwidth_bytes_per_s=None,
                          flops=devices.cpu_peak_flops(used, features, name), fma_flops=devices.cpu_fma_flops(used, features, name))


# --- report ---------------------------------------------------------------------------------


def report(se, catalog, out: list[str]) -> None:
    rows, skipped = speech_rows(se, catalog)
    speech_to_text(se, [r for r in rows if r.kind != "tts"], skipped, out)
    text_to_speech(se, [r for r in rows if r.kind == "tts"], out)


def cross_validated(rows: list[Row], fit, predict) -> tuple[dict, dict, dict]:
    """(in-sample, LODO, LOSO) absolute % errors, by row index."""
    fits = fit(rows)
    in_sample = {i: ape(predict(r, fits), r.measured) for i, r in enumerate(rows)}
    return in_sample, held_out(rows, lambda r: r.device, fit, predict), held_out(rows, lambda r: r.source, fit, predict)


def headline_row(name: str, rows: list[Row], errors: tuple[dict, dict, dict]) -> str:
    in_sample, lodo, loso = errors
    devices = len({r.device for r in rows})
    sources = len({r.source for r in rows})
    met = "met" if statistics.median(lodo.values()) <= TARGET else "not met"
    return (f"| {name} | {len(rows)} | {devices} | {sources} | {summary(lodo.values())} | {summary(loso.values())} "
            f"| {summary(in_sample.values())} | <= {TARGET:.0f}%: {met} |")


HEADLINE_HEADER = ("| task | rows | devices | sources | LODO median | LODO worst | LOSO median | LOSO worst "
                   "| in-sample median | in-sample worst | target (issue 10) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")


def headline(out: list[str], title: str, name: str, rows: list[Row], errors: tuple[dict, dict, dict]) -> None:
    """A task's headline table and its target line (leave-one-device-out median against TARGET)."""
    lodo = errors[1]
    met = statistics.median(lodo.values()) <= TARGET
    out.append(f"### {title} headline\n")
    out.append(HEADLINE_HEADER)
    out.append(headline_row(name, rows, errors))
    out.append(f"\nTarget: leave-one-device-out median <= {TARGET:.0f}%: **{'met' if met else 'not met'}** "
               f"({statistics.median(lodo.values()):.1f}% over {len(rows)} rows on {len({r.device for r in rows})} devices).")


def speech_to_text(se, rows: list[Row], skipped: dict[str, int], out: list[str]) -> None:
    fitted = [r for r in rows if r.in_fit]
    errors = cross_validated(fitted, stt_fits, stt_predict)
    in_sample, lodo, loso = errors
    out.append("## Speech to text (Whisper)\n")
    out.append("Scored by `benchmarks/score_speech.py`. whisper.cpp `bench` rows time one encoder pass over a 30 s window "
               "(seconds per window); faster-whisper rows time a 13-minute file end to end (x real time). Leave one device "
               "out (LODO): the constants are refitted without the held-out device and predict it; a backend left with no "
               "rows falls back as gpuready does (another backend's fit x the text-generation prompt-efficiency ratio; the "
               "decoder: CUDA's fit x the text-generation bandwidth-constant ratio on a GPU, text generation's bandwidth constant where "
               "no GPU has a decoder fit and on a CPU). Leave one source out (LOSO) the same by publication.\n")
    headline(out, "Speech to text", "speech to text (all rows)", fitted, errors)
    blas = [r for r in rows if r.in_fit or r.kept_out == VENDOR_BLAS]
    _, with_blas, _ = cross_validated(blas, stt_fits, stt_predict)
    out.append(f"With the vendor-BLAS CPU rows (kept out below) fitted and scored too, the LODO median would be "
               f"{statistics.median(with_blas.values()):.0f}% over {len(blas)} rows on {len({r.device for r in blas})} devices.\n")
    out.append("| measure | backend | rows | devices | LODO median | LODO worst | in-sample median | in-sample worst |\n"
               "|---|---|---:|---:|---:|---:|---:|---:|")
    groups = defaultdict(list)
    for index, row in enumerate(fitted):
        groups[(row.kind, row.backend)].append(index)
    names = {"encoder": "whisper.cpp encoder, one 30 s window", "realtime": "faster-whisper x real time, 13 min file"}
    for (kind, backend), indices in sorted(groups.items()):
        out.append(f"| {names[kind]} | {backend} | {len(indices)} | {len({fitted[i].device for i in indices})} "
                   f"| {summary(lodo[i] for i in indices)} | {summary(in_sample[i] for i in indices)} |")
    fallback = est.BANDWIDTH_EFFICIENCY.get("cuda")
    out.append(f"\nThe CUDA faster-whisper rows come from one GPU (RTX 3070 Ti; the V100S rows of the older README "
               f"have no catalog/gpus.toml entry): held out, its decoder falls back to text generation's CUDA bandwidth "
               f"constant ({fallback}) in place of the {speech.DECODER_EFFICIENCY['cuda']} fitted on it, so their LODO "
               "error measures that fallback, not the fit. That error is why a GPU backend with no decoder rows of its own "
               "(ROCm, Metal, Vulkan, SYCL) takes CUDA's fitted figure scaled by its text-generation bandwidth constant "
               "relative to CUDA's (tasks/speech.py decoder_efficiency), not text generation's constant: with it an RX "
               "7900 XTX was estimated at 5x an RTX 4090's real-time factor.")
    out.append("\nPer held-out device (LODO errors of its rows):\n")
    out.append("| device | backend | rows | LODO median | LODO worst |\n|---|---|---:|---:|---:|")
    by_device = defaultdict(list)
    for index, row in enumerate(fitted):
        by_device[(row.device, row.backend)].append(lodo[index])
    for (device, backend), values in sorted(by_device.items()):
        out.append(f"| {device} | {backend} | {len(values)} | {summary(values)} |")
    outside = defaultdict(list)
    fits = stt_fits(fitted)
    for row in rows:
        if not row.in_fit:
            outside[(row.kept_out, row.device)].append(ape(stt_predict(row, fits), row.measured))
    if outside:
        out.append("\nRows kept out of the fit (scored against the fitted constants):\n")
        out.append("| why | device | rows | median error | worst error |\n|---|---|---:|---:|---:|")
        for (why, device), values in sorted(outside.items()):
            out.append(f"| {why} | {device} | {len(values)} | {summary(values)} |")
    out.append(f"\nSkipped: {dict(skipped)}.\n")
    terms_tried(fitted, out)
    out.append("Encoder efficiency each row implies, median (tasks/encoders.py ENCODER_EFFICIENCY, also used by image "
               "generation's text encoders and document search):\n")
    constant_table(se, out, "ENCODER_EFFICIENCY", fits[0]["plain"], encoders.ENCODER_EFFICIENCY, fitted, "encoder")
    out.append("\nWhisper encoder efficiency at width 1,280, falling in proportion to d_model below it (tasks/speech.py "
               "WHISPER_ENCODER_EFFICIENCY x width_share), fitted on the same rows:\n")
    constant_table(se, out, "WHISPER_ENCODER_EFFICIENCY", fits[0]["wide"], speech.WHISPER_ENCODER_EFFICIENCY, fitted, "encoder")
    out.append("\nDecoder bandwidth efficiency each faster-whisper row implies (time left after the estimated encoder), "
               "median (tasks/speech.py DECODER_EFFICIENCY; one device, so in-sample only):\n")
    # A backend without a decoder constant of its own keeps text generation's: nothing to pin.
    constant_table(se, out, "DECODER_EFFICIENCY", fits[1], speech.DECODER_EFFICIENCY, fitted, "realtime",
                   missing="- (text-generation constant)", pin_missing=False)
    band = percentile(list(lodo.values()), BAND_PERCENTILE) / 100
    se.FITS[("STT_UNCERTAINTY", "all")] = (band, speech.STT_UNCERTAINTY)
    out.append(f"\nBand (tasks/speech.py STT_UNCERTAINTY): the 80th percentile of the LODO errors above, {band:.2f} "
               f"(constant {speech.STT_UNCERTAINTY}).\n")


def constant_table(se, out: list[str], name: str, fitted_values: dict[str, float], constants: dict[str, float],
                   rows: list[Row], kind: str, missing: str = "-", pin_missing: bool = True) -> None:
    """One fitted constant per backend beside gpuready's, each recorded in se.FITS (tests pin the two equal);
    ``pin_missing`` False: a backend gpuready has no constant for is shown but not pinned."""
    out.append("| backend | rows | fitted median | constant |\n|---|---:|---:|---:|")
    for backend, value in sorted(fitted_values.items()):
        if pin_missing or backend in constants:
            se.FITS[(name, backend)] = (value, constants.get(backend))
        count = sum(1 for r in rows if r.kind == kind and r.backend == backend)
        out.append(f"| {backend} | {count} | {value:.2f} | {constants.get(backend, missing)} |")


def terms_tried(rows: list[Row], out: list[str]) -> None:
    """Candidate terms for the encoder, kept only if they lower the held-out error."""
    encoder_rows = [r for r in rows if r.kind == "encoder"]
    out.append("Encoder terms tried (the whisper.cpp encoder rows above; a term is kept where it lowers the LODO error):\n")
    out.append("| formula | LODO median | LODO worst | LODO cuda | LODO cpu | in-sample median | kept |\n"
               "|---|---:|---:|---:|---:|---:|---|")
    candidates = [
        ("FLOPs / (peak x efficiency per backend)", 1.0, (), "no: the width term lowers the CUDA error"),
        ("... x d_model / 1,280 on CUDA (efficiency in proportion to width)", 1.0, ("cuda",), "yes"),
        ("... x d_model / 1,280 on CUDA and CPU", 1.0, ("cuda", "cpu"), "no: CPU held-out error rises"),
        ("... on CUDA, GeForce peaks x2 (FP16-accumulate tensor rate)", GEFORCE_FULL_RATE, ("cuda",), "no: held-out error rises"),
    ]
    # A Cortex-A76 (Raspberry Pi 5) has two 128-bit FMA pipes (Arm's Cortex-A76 Software Optimization Guide: FMLA on
    # V0 and V1): 16 FP32 FLOPs a cycle, half the 32 its dotprod flag implies (devices.cpu_flops_per_cycle)
    a76 = [dataclasses.replace(r, peak=r.peak / 2) if "Raspberry Pi 5" in r.device else r for r in encoder_rows]
    # An AVX-512 CPU at its FMA pipes' rate (catalog/cpus.toml fma_flops_per_cycle, Device.float_flops, as the
    # PyTorch and ONNX Runtime estimates count it), where that is narrower than the flags' figure: the i7-11850H
    fma = [dataclasses.replace(r, peak=r.extra[0]) if r.extra else r for r in encoder_rows]
    why = ("whisper.cpp's CPU encoder runs F16 and int8 dot products, not FP32 FMAs")
    probes = {id(a76): f"{why}: the A76's FP16 FMLA does 8 lanes, 32 FLOPs a cycle",
              id(fma): f"{why}; gpuready counts whisper.cpp, as llama.cpp, at the flags' figure"}
    candidates.append(("... with a Raspberry Pi 5's Cortex-A76 at its 16 FP32 FLOPs a cycle, not 32", 1.0, ("cuda",), a76))
    candidates.append(("... with AVX-512 CPUs at their FMA pipes' rate where narrower than the flags' (catalog/cpus.toml "
                       "fma_flops_per_cycle: the i7-11850H's one 512-bit FMA, 32 FP32 FLOPs a cycle, not 64)", 1.0, ("cuda",), fma))
    carried = None
    for name, geforce, widths, kept in candidates:
        tried = kept if isinstance(kept, list) else encoder_rows
        in_sample, lodo, _ = cross_validated(tried, lambda train: encoder_fit(train, geforce, widths),
                                             lambda row, fits: encoder_predict(row, fits, geforce))
        per = {b: [lodo[i] for i, r in enumerate(tried) if r.backend == b] for b in ("cuda", "cpu")}
        if kept == "yes":
            carried = statistics.median(lodo.values())
        if isinstance(kept, list):
            median = statistics.median(lodo.values())
            kept = ("yes: lowers the held-out error" if median < carried else
                    f"no: held-out error rises ({carried:.0f}% -> {median:.0f}%; {probes[id(tried)]})")
        out.append(f"| {name} | {summary(lodo.values())} | {statistics.median(per['cuda']):.0f}% "
                   f"| {statistics.median(per['cpu']):.0f}% | {statistics.median(in_sample.values()):.0f}% | {kept} |")
    out.append("")


def tts_model(row: Row) -> str:
    return row.label.split(" (")[0]


def amdahl(row: Row, serial: float) -> float:
    """Time relative to perfect scaling over the row's threads when a share `serial` of the one-thread work
    does not parallelise (CPU rows, as tasks/speech.py counts it: encoders.amdahl_factor; 1 elsewhere)."""
    return encoders.amdahl_factor(row.cores, serial) if row.backend == "cpu" else 1.0


def thread_share(row: Row, exponent: float) -> float:
    """Each CPU thread's share of its one-thread efficiency when it falls as threads^-exponent (document search's
    CPU term, tasks/search.py; encoders.per_core_share); 1 elsewhere."""
    return encoders.per_core_share(1.0, row.cores, exponent)[0] if row.backend == "cpu" else 1.0


# The fixed GPU term's grid (tasks/speech.py TTS_FIXED_SECONDS): 0 to 30 ms per second of audio (or per network pass
# per second of audio) in steps of 0.1 ms.
FIXED_SECONDS = tuple(i / 10_000 for i in range(301))


def fixed_units(row: Row, per_pass: bool) -> float:
    """How many times a row pays the fixed GPU time per second of audio: once, or once per network pass (F5-TTS's
    flow-matching steps x guidance passes); never on a CPU."""
    if row.backend == "cpu":
        return 0.0
    return row.passes if per_pass else 1.0


def implied_share(row: Row, serial: float, exponent: float, fixed: float, per_pass: bool) -> float | None:
    """The share of peak a row implies once the fixed time is taken off its seconds per second of audio (None: the
    fixed time alone exceeds what the row measured, so the row refutes it)."""
    seconds = 1 / row.measured - fixed * fixed_units(row, per_pass)
    if seconds <= 0:
        return None
    return row.work / (row.peak * seconds) * amdahl(row, serial) / thread_share(row, exponent)


def share_table(rows: list[Row], per_model: bool | str, serial: float, exponent: float, fixed: float,
                per_pass: bool, by_device: bool = False) -> dict | None:
    """Per backend (and per model, `per_model`) medians of the shares the rows imply, over rows or, `by_device`, over
    devices (the median of each device's own median); None where a row refutes `fixed`."""
    implied = defaultdict(lambda: defaultdict(list))
    for row in rows:
        value = implied_share(row, serial, exponent, fixed, per_pass)
        if value is None:
            return None
        group = row.device if by_device else None
        implied[row.backend][group].append(value)
        if per_model is True or (per_model == "gpu" and row.backend != "cpu"):
            implied[(tts_model(row), row.backend)][group].append(value)
    table = {k: statistics.median(statistics.median(v) for v in groups.values()) for k, groups in implied.items()}
    if per_model:
        # a backend's own figure is what a model without rows there takes: each model with rows there counts
        # once (its median), so the model with the most published rows does not decide it alone
        for backend in [k for k in table if isinstance(k, str) and (per_model is True or k != "cpu")]:
            table[backend] = statistics.median(v for k, v in table.items() if isinstance(k, tuple) and k[1] == backend)
    return table


def fixed_fit(rows: list[Row], per_model: bool | str, fixed_grid, per_pass: bool, by_device: bool = False) -> float:
    """The fixed GPU seconds on `fixed_grid` that give the GPU rows (the only ones it acts on) their least median
    error, refitting their shares at each; values a row refutes (more than its measured time) are skipped."""
    gpu_rows = [r for r in rows if r.backend != "cpu"]
    if not gpu_rows:
        return 0.0
    best = (None, 0.0)
    for fixed in fixed_grid:
        table = share_table(gpu_rows, per_model, 0.0, 0.0, fixed, per_pass, by_device)
        if table is None:
            continue
        fits = {"table": table, "serial": 0.0, "exponent": 0.0, "fixed": fixed, "per_pass": per_pass}
        error = statistics.median(ape(tts_predict_terms(r, fits), r.measured) for r in gpu_rows)
        if best[0] is None or error < best[0] - 1e-9:
            best = (error, fixed)
    return best[1]


def tts_fit_terms(rows: list[Row], per_model: bool | str, serials=(0.0,), exponents=(0.0,), fixed_grid=(0.0,),
                  per_pass: bool = False, by_device: bool = False) -> dict:
    """Candidate text-to-speech fits: per-backend (and optionally per-model: True on every backend, "gpu" on GPU
    backends only, where the backend's figure becomes the median of its models' medians) medians, with the Amdahl
    serial share and the thread exponent on the grids given, at the pair that gives the least median error on these
    rows, and the fixed GPU seconds per second of audio (per network pass where `per_pass`) on `fixed_grid`, chosen on
    the GPU rows (fixed_fit)."""
    fixed = fixed_fit(rows, per_model, fixed_grid, per_pass, by_device)
    best = None
    for serial in serials:
        for exponent in exponents:
            table = share_table(rows, per_model, serial, exponent, fixed, per_pass, by_device)
            fits = {"table": table, "serial": serial, "exponent": exponent, "fixed": fixed, "per_pass": per_pass}
            error = statistics.median(ape(tts_predict_terms(r, fits), r.measured) for r in rows)
            if best is None or error < best[0] - 1e-9:
                best = (error, fits)
    return best[1]


def tts_predict_terms(row: Row, fits: dict) -> float:
    table = fits["table"]
    backends = {k: v for k, v in table.items() if isinstance(k, str)}
    efficiency = table.get((tts_model(row), row.backend)) or fallback_efficiency(backends, row.backend)
    compute = row.work * amdahl(row, fits["serial"]) / (row.peak * efficiency * thread_share(row, fits["exponent"]))
    return 1 / (compute + fits.get("fixed", 0.0) * fixed_units(row, fits.get("per_pass", False)))


def tts_variant(rows: list[Row], vocoder: bool, clock: bool, fp32: bool = True) -> list[Row]:
    """The rows under a candidate count: with or without the vocoder's FLOPs at its upsampled rates, with a Raspberry
    Pi's peak at its stated clock or at the assumed 3.0 GHz, and with a GPU's fp32 run at its FP32 rate or at its FP16
    peak (`extra` holds the plain count and the plain peak)."""
    def peak(row: Row) -> float:
        kept = clock if row.backend == "cpu" else fp32
        return row.peak if kept else row.extra[1]
    return [dataclasses.replace(r, work=r.work if vocoder else r.extra[0], peak=peak(r)) for r in rows]


@dataclass
class Tried:
    """One candidate formula's held-out figures (the terms-tried table). `scope`: the rows (by index) of the class the
    term acts on, where it acts on one class only (the GPU terms on GPU rows, the thread terms on CPU rows): the rule
    judges it on that class's own rows, as generation's terms are judged (benchmarks/speed_report.py), because a median
    over every row cannot see a term that changes a few of them; None judges on every row."""
    name: str
    rows: int
    lodo: dict
    loso: dict
    in_sample: dict
    scope: frozenset | None = None
    scope_name: str = ""

    @property
    def lodo_median(self) -> float:
        return statistics.median(self.lodo.values())

    @property
    def loso_median(self) -> float:
        return statistics.median(self.loso.values())

    def judged(self, scope: frozenset | None) -> tuple[float, float]:
        """(LODO median, LOSO median) over the rows in `scope` (every row where None)."""
        def median(errors: dict) -> float:
            return statistics.median(e for i, e in errors.items() if scope is None or i in scope)
        return median(self.lodo), median(self.loso)

    @property
    def own_lodo(self) -> float:
        """The LODO median on the rows the term is judged on (its scope): what picks between two forms that pass."""
        return self.judged(self.scope)[0]

    def lowers(self, base: "Tried") -> bool:
        """The rule a term is kept by: it lowers the LODO median without raising LOSO's (on its scope's rows)."""
        (lodo, loso), (base_lodo, base_loso) = self.judged(self.scope), base.judged(self.scope)
        return lodo < base_lodo and loso <= base_loso

    def against(self, base: "Tried") -> str:
        (lodo, loso), (base_lodo, base_loso) = self.judged(self.scope), base.judged(self.scope)
        where = f" on its {len(self.scope)} {self.scope_name} rows" if self.scope is not None else ""
        if self.lowers(base):
            return f"lowers LODO{where} ({base_lodo:.0f}% -> {lodo:.0f}%) and LOSO does not rise ({base_loso:.0f}% -> {loso:.0f}%)"
        if lodo >= base_lodo:
            return f"LODO{where} does not fall ({base_lodo:.0f}% -> {lodo:.0f}%)"
        return f"LOSO{where} rises ({base_loso:.0f}% -> {loso:.0f}%)"


def scoped(tried: Tried, rows: list[Row], gpu: bool) -> Tried:
    """`tried` judged on the GPU rows (gpu) or the CPU rows alone (Tried.scope)."""
    keep = frozenset(i for i, row in enumerate(rows) if (row.backend != "cpu") == gpu)
    return dataclasses.replace(tried, scope=keep, scope_name="GPU" if gpu else "CPU")


def try_formula(name: str, rows: list[Row], vocoder: bool, clock: bool, per_model: bool | str = False,
                threads: ThreadForm = NO_THREAD_TERM, gpu: GpuTerms = NO_GPU_TERMS, by_device: bool = False) -> Tried:
    variant = tts_variant(rows, vocoder, clock, gpu.fp32)
    in_sample, lodo, loso = cross_validated(
        variant, lambda train: tts_fit_terms(train, per_model, threads.serials, threads.exponents, gpu.fixed_grid,
                                             gpu.per_pass, by_device),
        tts_predict_terms)
    return Tried(name, len(variant), lodo, loso, in_sample)


def fma_verdict(rows: list[Row], flags: Tried, formula: Tried, index: int = 2,
                rates: str = "flags' figure and FMA rate") -> str:
    """Whether the flags' figure (`extra[index]`) would do better than the narrower rate gpuready counts (the FMA pipes'
    rate, or a core's stated fp32_flops_per_cycle), held out, and how the devices it changes are predicted under each
    (the width is the hardware's, as the Pi's clock is: kept unless the flags' figure lowers the LODO median without
    raising LOSO's)."""
    changed = sorted({r.device for r in rows if r.extra[index] != r.peak})
    moved = "; ".join(f"{device.removeprefix('cpu: ')} {pair}" for device in changed
                      if (pair := device_pair(rows, device, flags, formula)))
    verdict = "would be kept: " if flags.lowers(formula) else "no: "
    return f"{verdict}{flags.against(formula)} (held out, {rates}: {moved or 'no row changes'})"


def device_pair(rows: list[Row], device: str, first: Tried, second: Tried) -> str:
    indices = [i for i, r in enumerate(rows) if r.device == device]
    return (f"{statistics.median(first.lodo[i] for i in indices):.0f}% and "
            f"{statistics.median(second.lodo[i] for i in indices):.0f}%")


def per_device_pair(rows: list[Row], without: Tried, with_term: Tried) -> str:
    """Each CPU device but the Raspberry Pi: its median LODO error without and with a term."""
    return "; ".join(f"{device.removeprefix('cpu: ')} {device_pair(rows, device, without, with_term)}"
                     for device in sorted({r.device for r in rows if r.backend == "cpu" and "Raspberry Pi" not in r.device}))


def tts_terms_tried(rows: list[Row], with_kept_out: list[Row], out: list[str], threads: ThreadChoice | None = None,
                    gpu_model: "Tried | None" = None, model_kept: bool = False,
                    chain: GpuChain | None = None, device: "tuple[Tried, bool] | None" = None) -> None:
    chain = gpu_chain(rows) if chain is None else chain
    gpu = chain.terms
    threads = thread_term(rows, gpu) if threads is None else threads
    both, amdahl_term, power, form = threads.both, threads.amdahl, threads.power, threads.form
    cpus = len({r.device for r in rows if r.backend == "cpu"})
    gpus = len({r.device for r in rows if r.backend != "cpu"})
    out.append(f"\nTerms tried, each judged held out ({cpus} CPU devices, {gpus} GPUs; a term is kept only if it lowers "
               "the LODO median without raising LOSO's, a term that acts on one class of rows judged on that class's "
               "own rows (the GPU terms on the GPU rows, the thread terms on the CPU rows), as generation's terms are; "
               "the 'kept' column is computed from the figures):\n")
    out.append("| formula | rows | LODO median | LODO worst | LOSO median | LOSO worst | in-sample median | kept |\n"
               "|---|---:|---:|---:|---:|---:|---:|---|")
    plain = try_formula("2 x parameters x frames x passes / (peak at the assumed 3.0 GHz x efficiency per backend) "
                        "(the formula before any term)", rows, False, False)
    clock = try_formula("... a Raspberry Pi at the clock catalog/cpus.toml states (1.8 GHz, product brief), not 3.0 GHz",
                        rows, False, True)
    vocoder = try_formula("... the vocoder's FLOPs at its upsampled rates (catalog/speech.toml, from the published "
                          "generator configurations) in place of 2 x its weights x frames", rows, True, False)
    base = dataclasses.replace(chain.base, name="... both: the vocoder counted and a Raspberry Pi at 1.8 GHz (every GPU "
                               "row at its FP16 peak: the formula before the GPU terms)")
    fp32 = dataclasses.replace(chain.fp32, name="... an fp32 run on a GPU at its FP32 (non-tensor) rate, not its FP16 "
                               "tensor peak (Kokoro's PyTorch runs; tasks/speech.py tts_peak_flops)")
    fixed = dataclasses.replace(chain.fixed, name="... + a fixed GPU time per second of audio (tasks/speech.py "
                                "TTS_FIXED_SECONDS; fitted on the GPU rows on a 0.1 ms grid)")
    per_pass = dataclasses.replace(chain.per_pass, name="... + a fixed GPU time per network pass per second of audio "
                                   "(F5-TTS pays it once per flow-matching step and guidance pass; the same grid)")
    if gpu_model is None:
        gpu_model, model_kept = model_term(rows, threads.carried, form, gpu)
    if device is None:
        device = device_term(rows, gpu_model if model_kept else threads.carried, form, "gpu" if model_kept else False, gpu)
    weighted, by_device = device
    # the one formula gpuready carries, marked in the table: the last term kept in the order they are judged
    final = "device" if by_device else "model" if model_kept else form.name if form != NO_THREAD_TERM else "both"
    carried = "**" if final == "both" else ""
    both = dataclasses.replace(both, name=f"{carried}... with the GPU terms kept (the formula before the thread term)"
                               f"{': gpuready' + chr(39) + 's formula' if carried else ''}{carried}")
    amdahl_carried = final == "amdahl"
    amdahl_term = dataclasses.replace(amdahl_term, name=f"{'**' if amdahl_carried else ''}... with the GPU terms kept, x "
                                      "Amdahl: a serial share of the one-thread work does not spread over the threads "
                                      "used (CPU rows; the cores the peak counts; share fitted on a 0.05 grid)"
                                      f"{': gpuready' + chr(39) + 's formula**' if amdahl_carried else ''}")
    power_carried = final == "power"
    power = dataclasses.replace(power, name=f"{'**' if power_carried else ''}... with the GPU terms kept, x threads^-a: each CPU thread's "
                                f"share falls as a power of the threads used (document search's CPU term; a fitted on a "
                                f"0.05 grid){': gpuready' + chr(39) + 's formula**' if power_carried else ''}")
    # "gpuready's formula" is the one carried: with the thread term that passes its rule (form), else without
    formula = by_form(form, amdahl_term, power, both)
    torch_rows = try_formula("... gpuready's formula, with Piper's PyTorch rows fitted too", with_kept_out, True, True,
                             per_model="gpu" if model_kept else False, threads=form, gpu=gpu, by_device=by_device)
    per_model = try_formula("... each catalogue model's own efficiency on every backend, CPU too (the backend's where "
                            "the model has no rows)", rows, True, True, per_model=True, threads=form, gpu=gpu,
                            by_device=by_device)
    model_carried = final == "model"
    gpu_model = dataclasses.replace(gpu_model, name=f"{'**' if model_carried else ''}... with each catalogue model's own "
                                    "efficiency on a GPU backend (TTS_MODEL_EFFICIENCY; the backend's where the model has "
                                    "no rows there, and CPU rows keep the backend's)"
                                    f"{': gpuready' + chr(39) + 's formula**' if model_carried else ''}")
    before_device = gpu_model if model_kept else formula
    weighted = dataclasses.replace(weighted, name=f"{'**' if by_device else ''}... each fitted median over devices, "
                                   "each device's own median first, not over rows (a device with many rows, as the "
                                   "Raspberry Pi 4's thread sweeps or one repository's runs on one RTX 4060 Ti, no "
                                   "longer decides its backend's share alone)"
                                   f"{': gpuready' + chr(39) + 's formula**' if by_device else ''}")
    carried_formula = weighted if by_device else before_device

    def at_peak(index: int, name: str) -> Tried:
        """gpuready's formula with every row at the peak `extra[index]` holds (the flags' figure in place of a narrower
        rate catalog/cpus.toml states)."""
        moved = [dataclasses.replace(r, peak=r.extra[index]) for r in rows]
        return dataclasses.replace(try_formula("", moved, True, True, per_model="gpu" if model_kept else False,
                                               threads=form, gpu=gpu, by_device=by_device), name=name)
    flags = at_peak(2, "... gpuready's formula with an AVX-512 CPU at the flags' 64 FP32 FLOPs a cycle, not its FMA "
                       "pipes' 32 (catalog/cpus.toml fma_flops_per_cycle: Rocket Lake's one 512-bit FMA)")
    wide = at_peak(3, "... gpuready's formula with a Cortex-A72 (Raspberry Pi 4) at the NEON flags' 16 FP32 FLOPs a "
                      "cycle, not the 8 it retires (catalog/cpus.toml fp32_flops_per_cycle)")
    counts_best = base.lodo_median <= min(clock.lodo_median, vocoder.lodo_median)
    fixed_kept = gpu.fixed_grid != (0.0,)

    def fixed_verdict(term: Tried, mine: bool) -> str:
        against = term.against(chain.before_fixed)
        if fixed_kept and mine:
            return f"**yes**: {against}" + (", the lower LODO of the two fixed forms" if
                                             fixed.lowers(chain.before_fixed) and per_pass.lowers(chain.before_fixed) else "")
        if term.lowers(chain.before_fixed):
            return f"no: {against}, but the other fixed form lowers LODO further"
        return f"no: {against}"
    thread_terms = [t for t in (amdahl_term, power) if t.lowers(both)]
    chosen = by_form(form, amdahl_term, power)

    def thread_verdict(term: Tried) -> str:
        if term is chosen:
            return f"**yes**: {term.against(both)}" + (", the lower LODO of the two thread terms"
                                                       if len(thread_terms) == 2 else "")
        if term in thread_terms:
            other = "Amdahl" if chosen is amdahl_term else "power"
            return f"no: {term.against(both)}, but the {other} term lowers LODO further"
        return f"no: {term.against(both)}"

    kept = {
        plain.name: (f"no: both count terms below lower LODO ({plain.lodo_median:.0f}% -> {base.lodo_median:.0f}%) and "
                     f"LOSO ({plain.loso_median:.0f}% -> {base.loso_median:.0f}%)"),
        clock.name: "yes, with the vocoder count" if counts_best else "yes (see the narrative)",
        vocoder.name: "yes, with the clock" if counts_best else "yes (see the narrative)",
        base.name: "yes, as the base of the GPU terms" + ("" if counts_best else " (one count term alone does better)"),
        fp32.name: ("**yes**: " if gpu.fp32 else "no: ") + fp32.against(base),
        fixed.name: fixed_verdict(fixed, not gpu.per_pass),
        per_pass.name: fixed_verdict(per_pass, gpu.per_pass),
        both.name: "yes, as the base of the thread terms",
        amdahl_term.name: thread_verdict(amdahl_term),
        power.name: thread_verdict(power),
        torch_rows.name: "no: another runtime than gpuready estimates (below)",
        gpu_model.name: ("**yes**: " if model_kept else "no: ") + gpu_model.against(formula),
        weighted.name: ("**yes**: " if by_device else "no: ") + weighted.against(before_device),
        per_model.name: (("would be kept: " if per_model.lowers(carried_formula) else "no: ")
                         + per_model.against(carried_formula)),
        flags.name: fma_verdict(rows, flags, carried_formula),
        wide.name: fma_verdict(rows, wide, carried_formula, 3, "the flags' 16 and the 8 it retires"),
    }
    for tried in (plain, clock, vocoder, base, fp32, fixed, per_pass, both, amdahl_term, power, gpu_model, weighted,
                  per_model, flags, wide, torch_rows):
        out.append(f"| {tried.name} | {tried.rows} | {summary(tried.lodo.values())} | {summary(tried.loso.values())} "
                   f"| {statistics.median(tried.in_sample.values()):.0f}% | {kept[tried.name]} |")
    cpu_rows = [r for r in rows if r.backend == "cpu"]
    shown = form if form != NO_THREAD_TERM else POWER  # the shares below are with a thread term, kept or not
    shown_tried = by_form(shown, amdahl_term, power)
    # the figures gpuready's formula carries: each device's own median first where that term is kept
    fits = form_fit(rows, shown, gpu=gpu, by_device=by_device)
    one_thread = defaultdict(list)
    for row in cpu_rows:
        one_thread[row.device.removeprefix("cpu: ")].append(row.work * row.measured / row.peak * amdahl(row, fits["serial"])
                                                           / thread_share(row, fits["exponent"]))
    shares = ", ".join(f"{statistics.median(v):.2f} on the {device}" for device, v in sorted(one_thread.items()))
    pi = "cpu: Raspberry Pi 4 Model B"
    without_pi = (thread_parameter(form_fit([r for r in rows if r.device != pi], shown, gpu=gpu, by_device=by_device),
                                   shown)
                  if any(r.device == pi for r in rows) else None)
    threads = sorted({r.cores for r in cpu_rows})
    cpu_both, cpu_shown = both.judged(shown_tried.scope), shown_tried.judged(shown_tried.scope)
    sweep = [r for r in cpu_rows if "measured on this machine" in r.source]
    here = ""
    if len({r.cores for r in sweep}) > 1:
        low, high = min(sweep, key=lambda r: r.cores), max(sweep, key=lambda r: r.cores)
        here = (f", and Piper on the development VM {high.measured / low.measured:.2f}x from {low.cores} to {high.cores} "
                "threads (speech-tts-measured-here.toml)")
    parameter = (f"serial share s = {fits['serial']:.2f}" if shown == AMDAHL else f"a = {fits['exponent']:.2f}")
    first = ", each device's median first" if by_device else ""
    out.append("\nWhy these terms: gpuready assumes a 3.0 GHz all-core clock for every CPU (gpuready/tasks/devices.py "
               "ASSUMED_CPU_CLOCK_HZ), but a Raspberry Pi 4 runs at 1.8 GHz (Raspberry Pi 4 product brief, "
               "catalog/cpus.toml clock_ghz), so its peak was overstated 1.7x; every row counts its Cortex-A72 cores at "
               "the 8 FP32 FLOPs a cycle they retire, not the 16 of two 128-bit FMA pipes gpuready counts for NEON "
               "(catalog/cpus.toml fp32_flops_per_cycle: a vfpbench run on a 2.0 GHz Cortex-A72 measures 15.9 GFLOPS on "
               "one thread), a fact of the hardware as the clock is (the width row above shows the held-out errors at "
               "16). And 2 x parameters x frames counts each "
               "weight once per output frame, while a HiFi-GAN or iSTFTNet vocoder runs its convolutions at up to the "
               "audio sample rate: Piper's generator does 3.9 GFLOPs per second of audio with 1.7M weights, Kokoro's "
               "49.2 GFLOPs with 17.3M, so Kokoro costs 8.4x Piper per second of audio, not 3.8x; sherpa-onnx's "
               "Raspberry Pi 4 table measures 7.8x to 9.7x (one to four threads, Kokoro v0.19 and v1.0). "
               f"The clock alone gives LODO {clock.lodo_median:.0f}% and the vocoder count alone "
               f"{vocoder.lodo_median:.0f}%; together {base.lodo_median:.0f}% (LOSO {base.loso_median:.0f}%). "
               "The thread terms carry what a flat share of all cores' peak cannot: the Pi speeds up only 2.2x to "
               f"2.4x from one to four threads (sherpa-onnx's table){here}, so each thread's share of a core's peak "
               "falls as threads are added. Two forms are tried: Amdahl's (a share s of one thread's work does not "
               "spread over the threads: the time x (s x threads + 1 - s)) and a power (each thread's share x "
               f"threads^-a). With the {'Amdahl' if shown == AMDAHL else 'power'} term ({parameter} fitted on all rows{first}) "
               f"the share of a core's peak one thread reaches is {shares}. The gap between CPU designs stays: the Xeon "
               "Platinum 8272CL's peak counts AVX-512 at two FMA units (as Intel ARK states for the Platinum 8280), "
               "which Kokoro's runtimes turn into far less speed, and the Apple M4 Pro's PyTorch CPU run is faster than "
               "its NEON peak implies. "
               + (pi_sentence(thread_parameter(fits, shown), without_pi, shown) if without_pi is not None else "")
               + (f"{cpus} CPU devices, {threads[0]} to {threads[-1]} threads: on the CPU rows the term lowers LODO "
                  f"{cpu_both[0]:.0f}% -> {cpu_shown[0]:.0f}% and LOSO {cpu_both[1]:.0f}% -> {cpu_shown[1]:.0f}%. "
                  if form != NO_THREAD_TERM else
                  f"{cpus} CPU devices, {threads[0]} to {threads[-1]} threads: on these rows no thread term passes its "
                  f"own rule on the CPU rows (the power term: LODO {cpu_both[0]:.0f}% -> {cpu_shown[0]:.0f}%, LOSO "
                  f"{cpu_both[1]:.0f}% -> {cpu_shown[1]:.0f}%), so gpuready's formula drops it (TTS_CPU_SERIAL_SHARE "
                  "and TTS_CPU_THREAD_EXPONENT 0: every thread the same share of a core's peak) until rows show it "
                  "again; the shares above are with the power term, to show the spread it was meant to carry. ")
               + "Held out, the CPUs are predicted as follows without and with the term: "
               + per_device_pair(rows, both, shown_tried) + ".\n")


def thread_parameter(fits: dict, form: ThreadForm) -> float:
    """The fitted parameter of a thread form: the Amdahl serial share, or the power exponent."""
    return fits["serial"] if form == AMDAHL else fits["exponent"]


def pi_sentence(value: float, without_pi: float, form: ThreadForm = POWER) -> str:
    """What the Raspberry Pi 4's one-to-four-thread sweep does to the thread term's parameter fitted on all rows."""
    what = "serial share" if form == AMDAHL else "exponent"
    if value > without_pi:
        return (f"The {what} is carried by the Pi's one-to-four-thread sweep: fitted without the Pi's rows it is "
                f"{without_pi:.2f}. ")
    return f"Fitted without the Pi's rows the {what} is {without_pi:.2f}. "


def gpu_narrative(gpu_rows: list[Row], fits: dict, carried: Tried, gpu_model: Tried, model_kept: bool,
                  out: list[str]) -> None:
    """What the GPU rows imply: each one's share of the peak it runs at once the fixed GPU time is taken off."""
    fixed, per_pass = fits["fixed"], fits["per_pass"]
    implied = sorted((implied_share(r, 0.0, 0.0, fixed, per_pass) or float("inf"), tts_model(r), r.device)
                     for r in gpu_rows)
    shares = "; ".join(f"{model} on the {device} {share:.2f}" for share, model, device in implied)
    kokoro = "; ".join(f"the {r.device} {r.measured:.1f}x real time ({1e3 / r.measured:.1f} ms per second of audio) at "
                       f"{r.peak / 1e12:.0f} TFLOPS FP32" for r in sorted(gpu_rows, key=lambda r: r.peak)
                       if tts_model(r) == "kokoro-82m")
    if model_kept:
        verdict = "Each model's own figure on a GPU backend (TTS_MODEL_EFFICIENCY, terms tried below) is kept."
    else:
        verdict = ("Each model's own figure on a GPU backend (TTS_MODEL_EFFICIENCY, terms tried below) is not kept: "
                   f"{gpu_model.against(carried)}.")
    out.append("\nThe CUDA rows are one GPU each, so each GPU held out is predicted from the others' rows. F5-TTS runs in "
               "fp16 (its loader casts the model to fp16 on a GPU of compute capability 7 or more) and is counted at the "
               "FP16 tensor peak; Kokoro's PyTorch model runs in fp32 (neither hexgrad/kokoro nor Kokoro-FastAPI casts "
               "it) and is counted at the FP32 rate, as gpuready counts an fp32 variant on a GPU (PyTorch leaves TF32 "
               "off for matrix multiplies by default and on for cuDNN convolutions, whose dense TF32 rate on a GeForce "
               "card equals its FP32 rate). The share of that peak each row implies once the fixed GPU time "
               f"({fixed * 1e3:.1f} ms per {'network pass per ' if per_pass else ''}second of audio) is taken off its "
               f"time: {shares}. Kokoro's speed on a GPU does not follow peak FLOPS ({kokoro}): a pass of its "
               "small LSTMs and convolutions is many short kernels, each launched from Python at a cost a faster GPU "
               "does not shorten, so part of its time is a floor per second of audio that a share of peak cannot carry; "
               f"the fixed term carries it. {verdict}")


def text_to_speech(se, all_rows: list[Row], out: list[str]) -> None:
    out.append("## Text to speech\n")
    files = sorted(path.name for path in TTS_FILES)
    out.append(f"Rows: benchmarks/validation/{', '.join(files[:-1])} and {files[-1]} "
               "(real-time factors as published, or the two timings they come from where a source prints no ratio). The estimate: FLOPs per second of audio (2 x the parameters outside "
               "the vocoder x output frames per second x network passes per frame, plus the vocoder's own FLOPs at its "
               "upsampled rates, catalog/speech.toml) over peak FLOPS (a CPU at the clock catalog/cpus.toml states for "
               "it, else the assumed 3.0 GHz; a GPU running fp32 weights at its FP32 rate, else its FP16 tensor peak) x "
               "a per-backend efficiency (tasks/speech.py TTS_EFFICIENCY; on a CPU, one thread's share / (s x threads + "
               "1 - s) x threads^-a, s = TTS_CPU_SERIAL_SHARE and a = TTS_CPU_THREAD_EXPONENT, the thread term the "
               "scorer keeps), plus on a GPU a fixed time per second of audio (TTS_FIXED_SECONDS), "
               "so x real time = 1 / (FLOPs per second of audio / (peak x efficiency) + fixed seconds). Scored as "
               "speech to text is.\n")
    rows = [r for r in all_rows if r.in_fit]
    if not rows:
        out.append("No rows.\n")
        return
    chain = gpu_chain(rows)
    threads = thread_term(rows, chain.terms)
    form = threads.form
    carried = threads.carried  # gpuready's formula, already cross-validated
    gpu_model, model_kept = model_term(rows, carried, form, chain.terms)
    if model_kept:
        carried = gpu_model
    weighted, by_device = device_term(rows, carried, form, "gpu" if model_kept else False, chain.terms)
    if by_device:
        carried = weighted
    errors = (carried.in_sample, carried.lodo, carried.loso)
    in_sample, lodo, loso = errors
    headline(out, "Text to speech", "text to speech (all rows)", rows, errors)
    largest, largest_rows = Counter(row.device for row in rows).most_common(1)[0]
    device_median = median_of_group_medians((row.device, lodo[index]) for index, row in enumerate(rows))
    out.append(f"Weighting each device once instead of each row: the median of each device's median LODO error is "
               f"{device_median:.0f}% ({largest_rows} of the {len(rows)} rows are one device, the "
               f"{largest.removeprefix('cpu: ')}).\n")
    out.append("| model | backend | device | rows | LODO median | LODO worst | in-sample median | in-sample worst |\n"
               "|---|---|---|---:|---:|---:|---:|---:|")
    groups = defaultdict(list)
    for index, row in enumerate(rows):
        groups[(row.label.split(" (")[0], row.backend, row.device)].append(index)
    for (model, backend, device), indices in sorted(groups.items()):
        out.append(f"| {model} | {backend} | {device} | {len(indices)} | {summary(lodo[i] for i in indices)} "
                   f"| {summary(in_sample[i] for i in indices)} |")
    fits = form_fit(rows, form, "gpu" if model_kept else False, chain.terms, by_device)
    outside = [r for r in all_rows if not r.in_fit]
    if outside:
        out.append("\nRows kept out of the fit (scored against the fitted constants):\n")
        out.append("| why | model | device | rows | median error | worst error |\n|---|---|---|---:|---:|---:|")
        kept = defaultdict(list)
        for row in outside:
            kept[(row.kept_out, tts_model(row), row.device)].append(ape(tts_predict(row, fits), row.measured))
        for (why, model, device), values in sorted(kept.items()):
            out.append(f"| {why} | {model} | {device} | {len(values)} | {summary(values)} |")
    out.append("\nEfficiency each row implies, median (tasks/speech.py TTS_EFFICIENCY; a CPU row's share multiplied by "
               "(s x threads + 1 - s) and divided by threads^-a first, so the CPU figure is one thread's share of a "
               "core's peak"
               + ("; the median of each device's own median, the device term below" if by_device else "") + "):\n")
    out.append("| backend | rows | devices | fitted median | constant |\n|---|---:|---:|---:|---:|")
    for backend, value in sorted((k, v) for k, v in fits["table"].items() if isinstance(k, str)):
        se.FITS[("TTS_EFFICIENCY", backend)] = (value, speech.TTS_EFFICIENCY.get(backend))
        members = [r for r in rows if r.backend == backend]
        out.append(f"| {backend} | {len(members)} | {len({r.device for r in members})} | {value:.3f} "
                   f"| {speech.TTS_EFFICIENCY.get(backend, '-')} |")
    per_model = sorted((k, v) for k, v in fits["table"].items() if not isinstance(k, str))
    if per_model:
        out.append("\nEach catalogue model's own efficiency on a GPU backend, median of its rows there (tasks/speech.py "
                   "TTS_MODEL_EFFICIENCY; a model with no rows on a backend takes the backend's figure above):\n")
        out.append("| model | backend | rows | devices | fitted median | constant |\n|---|---|---:|---:|---:|---:|")
        for (model, backend), value in per_model:
            constant = speech.TTS_MODEL_EFFICIENCY.get((model, backend))
            se.FITS[("TTS_MODEL_EFFICIENCY", f"{model} {backend}")] = (value, constant)
            members = [r for r in rows if r.backend == backend and tts_model(r) == model]
            out.append(f"| {model} | {backend} | {len(members)} | {len({r.device for r in members})} | {value:.3f} "
                       f"| {'-' if constant is None else constant} |")
    se.FITS[("TTS_CPU_SERIAL_SHARE", "cpu")] = (fits["serial"], speech.TTS_CPU_SERIAL_SHARE)
    se.FITS[("TTS_CPU_THREAD_EXPONENT", "cpu")] = (fits["exponent"], speech.TTS_CPU_THREAD_EXPONENT)
    out.append(f"\nThread term (terms tried below): of Amdahl's serial share s (tasks/speech.py TTS_CPU_SERIAL_SHARE) "
               "and the power exponent a (TTS_CPU_THREAD_EXPONENT), each fitted with the shares on its 0.05 grid, the "
               "one that passes its rule with the lower LODO median is kept, the other 0 (neither: each thread the same "
               f"share): s = {fits['serial']:.2f} (constant {speech.TTS_CPU_SERIAL_SHARE}), a = {fits['exponent']:.2f} "
               f"(constant {speech.TTS_CPU_THREAD_EXPONENT}).")
    for backend in sorted({r.backend for r in rows if r.backend != "cpu"}):
        se.FITS[("TTS_FIXED_SECONDS (milliseconds)", backend)] = (fits["fixed"] * 1e3,
                                                                 speech.TTS_FIXED_SECONDS.get(backend, 0.0) * 1e3)
    out.append(f"\nFixed GPU time (tasks/speech.py TTS_FIXED_SECONDS), fitted with the GPU shares on the GPU rows where "
               f"the fixed term passes its rule, else 0: {fits['fixed'] * 1e3:.1f} ms per "
               f"{'network pass per ' if fits['per_pass'] else ''}second of audio (constant "
               f"{speech.TTS_FIXED_SECONDS.get('cuda', 0.0) * 1e3:g} ms).")
    gpu_note = [r for r in rows if r.backend != "cpu"]
    if len({r.device for r in gpu_note}) > 1:
        gpu_narrative(gpu_note, fits, carried, gpu_model, model_kept, out)
    tts_terms_tried(rows, [r for r in all_rows if r.in_fit or r.kept_out == PIPER_PYTORCH], out, threads,
                    gpu_model, model_kept, chain, (weighted, by_device))
    band = percentile(list(lodo.values()), BAND_PERCENTILE) / 100
    se.FITS[("TTS_UNCERTAINTY", "all")] = (band, speech.TTS_UNCERTAINTY)
    out.append(f"\nBand (tasks/speech.py TTS_UNCERTAINTY): the 80th percentile of the LODO errors above, {band:.2f} "
               f"(constant {speech.TTS_UNCERTAINTY}).\n")
