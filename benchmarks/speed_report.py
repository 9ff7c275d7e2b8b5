"""The text-generation speed section of benchmarks/ACCURACY.md: fit, cross-validate, choose terms, bands.

Called by benchmarks/score_estimator.py with the rows it built from benchmarks/validation/;
writes Markdown lines into `out` and each fitted constant with gpuready's value into `fits`
((name, key) -> (fitted, constant)), which tests/test_score_estimator.py checks agree.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import speedfit

from gpuready.tasks import text_estimate as est

MIN_BAND_DEVICES = 3
MOE_FAMILY = "moe"
CUBLAS_FAMILY = "cublas"  # a scored-only class: gpuready estimates today's kernels


def prompt_families(rows: list, families: bool, moe: bool, cublas: bool = False) -> tuple[list, bool]:
    """Rows as the prompt fit sees them, and whether it fits family shares of the compute term.

    "families": each quant family's matrix kernel at its own share of K-quants' efficiency. "moe": a
    mixture-of-experts model's compute at its own share instead (ggml_mul_mat_id: each expert multiplies
    only the tokens routed to it, k of n experts, so a 512-token micro-batch becomes many small products,
    plus the router and the gather between them). "cublas": quantised prompts of CUDA builds before
    PR #8075 on Volta or newer (score_estimator.CUBLAS_PROMPT_UNTIL) as their own class, the kernel they ran.
    """
    if not families and not moe and not cublas:
        return rows, False

    def family(r) -> str:
        if moe and r.moe:
            return MOE_FAMILY
        if cublas and r.cublas:
            return CUBLAS_FAMILY
        return r.family if families else speedfit.REFERENCE_FAMILY

    return [replace(r, family=family(r)) for r in rows], True


def choose_terms(rows: list, cross_validate, fit_terms: tuple[str, ...],
                 scopes: dict | None = None) -> tuple[dict, list[tuple[str, float, float]]]:
    """Start with every term; drop each one whose removal does not raise the held-out error.

    The held-out error is the mean of the leave-one-device-out and leave-one-source-out
    medians: a term stays only if it predicts new hardware and new publications better. A term
    that applies to one class of rows (`scopes`: name -> which rows, e.g. mixture-of-experts
    models, 2- and 3-bit K-quants, Intel GPUs under Vulkan) is judged on that class's rows, as
    the prompt's second term picks its form per backend on that backend's rows: a median over
    all rows cannot see a term that fixes a small class, and the rest of the rows are shown beside.
    It is judged on all rows too, and stays if dropping it raises either: in a joint fit its own
    constants also keep its rows from pulling the shared ones.
    """
    scopes = scopes or {}
    terms = {name: True for name in fit_terms}
    trials = []
    members = {name: {_identity(r) for r in rows if applies(r)} for name, applies in scopes.items()}
    cache: dict = {}

    def error(chosen: dict, among: set | None = None, outside: bool = False) -> float:
        key = tuple(sorted(chosen.items()))
        if key not in cache:
            cache[key] = {group: cross_validate(rows, group, **chosen) for group in ("device", "source")}
        return statistics.mean(
            statistics.median(err for row, err in cache[key][group]
                              if among is None or ((_identity(row) in among) != outside))
            for group in ("device", "source"))

    best = error(terms)
    trials.append(("all terms", best, None))
    for name in fit_terms:
        without = {**terms, name: False}
        among = members.get(name)
        if among:
            own, own_without = error(terms, among), error(without, among)
            rest, rest_without = error(terms, among, True), error(without, among, True)
            trials.append((f"without {name}, its own {len(among)} rows", own_without, own))
            trials.append((f"without {name}, the other {len(rows) - len(among)} rows", rest_without, rest))
            # A tie (to rounding) on its own rows drops it, the simpler model, unless dropping it raises the error
            # over all rows: in a joint fit a class's own constants also keep its rows from pulling the shared ones.
            everywhere, everywhere_without = error(terms), error(without)
            trials.append((f"without {name}, all {len(rows)} rows", everywhere_without, everywhere))
            drop = own_without <= own + 1e-9 and everywhere_without <= everywhere + 1e-9
        else:
            score = error(without)
            trials.append((f"without {name}", score, best))
            drop = score <= best
        if drop:
            terms = without
            best = error(terms)
    return terms, trials


def _identity(row) -> tuple:
    """A row's identity across the copies the fits make (families merged, rates applied)."""
    return (row.device, row.source, row.variant, row.measured_s)


def speed_model_report(gen_rows: list, prompt_rows: list, baseline: list[float], out: list[str], fits: dict,
                       derived: set[str] = frozenset()) -> None:
    """Fit the generation and prompt models, cross-validate them, choose terms, derive bands; fill `fits`.
    ``derived``: the devices scored at the FLOPS gpuready derives where the table gives none (apple_round)."""
    gen_terms, gen_trials = choose_terms(gen_rows, speedfit.cross_validate_generation,
                                         ("layers", "families", "hbm", "moe", "unpack", "lowbit", "ilowbit", "intel",
                                          "kv"),
                                         {"hbm": lambda r: r.memory_class == "hbm", "moe": lambda r: r.moe,
                                          "lowbit": lambda r: r.family == speedfit.LOW_BIT_FAMILY,
                                          "ilowbit": lambda r: r.family == speedfit.I_LOW_BIT_FAMILY,
                                          "intel": lambda r: bool(r.vendor_class), "kv": lambda r: r.depth > 0})
    # "lowbit": 2- and 3-bit K-quants as their own family (their own unpacking cost), or folded into K-quants;
    # "ilowbit": 1- to 3-bit i-quants (codebook lookups) the same way, or folded into IQ4_NL/IQ4_XS.
    unmerged = gen_rows
    gen_rows = speedfit.merge_low_bits(gen_rows, gen_terms["lowbit"], gen_terms["ilowbit"])
    # The prompt model in the generation model's form: seconds per token = (2 x active params / peak FLOPS) / e
    # + (2 x active params in TFLOP) x s, where s (seconds per TFLOP, the "layers" slot) is a backend's software
    # ceiling that no faster GPU lifts (an H100 reads a 7B prompt no faster than an RTX 4090 in these rows).
    legacy_pfit = speedfit.fit_prompt(prompt_rows, families=False)
    # "geforce": a GeForce RTX card's compute term at the full FP16-accumulate rate (rate x its table FLOPS);
    # "moe": a mixture-of-experts model's compute term at its own fitted share (prompt_families).
    # The second term has two candidate forms, fitted per backend in the "layers" slot of the fit:
    # "ceiling", seconds per TFLOP of work (a software rate no faster GPU lifts), or "power", joules per
    # FLOP over the board's power limit (a board at its limit cannot run its tensor cores at peak). Each
    # backend takes the form that predicts its own held-out rows better (an Apple entry's "power" is the
    # whole Mac's at the wall, a discrete card's its board limit); then the term choice runs on the result.
    def prompt_cv(rows, key, geforce=True, second=True, families=True, moe=True, cublas=True, intel=True):
        rows, shares = prompt_families(full_rate(rows, geforce), families, moe, cublas)
        return speedfit.cross_validate_generation(rows, key, layers=second, families=shares,
                                                  hbm=False, moe=False, unpack=False, intel=intel)

    def form_rows(forms: dict, rows: list | None = None) -> list:
        return [speedfit.GenRow(r.backend, r.family, r.ideal_s, r.tflop if forms[r.backend] == "ceiling" else r.per_watt,
                                r.ideal_s / r.implied, r.device, r.source, moe=r.moe, variant=r.variant, rate=r.rate,
                                cublas=r.cublas, vendor_class=r.vendor_class)
                for r in (prompt_rows if rows is None else rows)]

    def backend_error(rows: list, backend: str) -> float:
        """The mean of the LODO and LOSO medians over one backend's rows, every term on."""
        return statistics.mean(statistics.median(e for r, e in prompt_cv(rows, key) if r.backend == backend)
                               for key in ("device", "source"))

    prompt_forms = {backend: "power" for backend in sorted({r.backend for r in prompt_rows})}
    form_trials = []
    for backend in prompt_forms:
        scores = {form: backend_error(form_rows({**prompt_forms, backend: form}), backend) for form in ("power", "ceiling")}
        prompt_forms[backend] = min(scores, key=scores.get)  # a tie keeps the power form
        form_trials.append((backend, scores["power"], scores["ceiling"], prompt_forms[backend]))
    prompt_terms, prompt_trials = choose_terms(form_rows(prompt_forms), prompt_cv,
                                               ("geforce", "second", "families", "moe", "cublas", "intel"),
                                               {"moe": lambda r: r.moe, "cublas": lambda r: r.cublas,
                                                "intel": lambda r: bool(r.vendor_class)})
    # The same forms and terms with the output token's own work counted for every prompt token (output_round).
    every_output = form_rows(prompt_forms, every_output_rows(prompt_rows))
    every_output_errors = {key: prompt_cv(every_output, key, **prompt_terms) for key in ("device", "source")}
    output_shares = [r.output_share for r in prompt_rows]
    prompt_rows = form_rows(prompt_forms)
    second_on = prompt_terms["second"]
    fit = speedfit.fit_generation(gen_rows, **gen_terms)
    prompt_rows, shares = prompt_families(full_rate(prompt_rows, prompt_terms["geforce"]), prompt_terms["families"],
                                          prompt_terms["moe"], prompt_terms["cublas"])
    pfit = speedfit.fit_generation(prompt_rows, layers=second_on, families=shares, hbm=False, moe=False, unpack=False,
                                   intel=prompt_terms["intel"])
    lodo = speedfit.cross_validate_generation(gen_rows, "device", **gen_terms)
    loso = speedfit.cross_validate_generation(gen_rows, "source", **gen_terms)
    inside = [(row, speedfit.error(speedfit.predict_generation(row, fit), 1 / row.measured_s)) for row in gen_rows]
    # The rows are already at their rate and in their (MoE) families: no second transformation.
    p_lodo = prompt_cv(prompt_rows, "device", **{**prompt_terms, "geforce": False, "families": shares, "moe": False,
                                                 "cublas": False})
    p_loso = prompt_cv(prompt_rows, "source", **{**prompt_terms, "geforce": False, "families": shares, "moe": False,
                                                 "cublas": False})
    p_inside = [(row, speedfit.error(speedfit.predict_generation(row, pfit), 1 / row.measured_s)) for row in prompt_rows]
    devices = {row.device for row in gen_rows}
    backends = sorted({row.backend for row in gen_rows})
    out.append("Every figure below is a prediction for hardware the constants were not fitted on, unless it says "
               "in-sample. Leave-one-device-out (LODO): fit on every other device, predict the held-out device's rows. "
               "Leave-one-source-out (LOSO): the same per publication (the row's source URL).\n")
    out.append("### Headline (cross-validated)\n")
    out.append("| task | rows | devices | backends | LODO median | LODO worst | LOSO median | LOSO worst | in-sample median |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for task, rows, a, b, c in (("generation", gen_rows, lodo, loso, inside), ("prompt", prompt_rows, p_lodo, p_loso, p_inside)):
        ea, eb, ec = ([e for _, e in x] for x in (a, b, c))
        out.append(f"| {task} | {len(rows)} | {len({r.device for r in rows})} | {len({r.backend for r in rows})} | "
                   f"{statistics.median(ea):.1f}% | {max(ea):.0f}% | {statistics.median(eb):.1f}% | {max(eb):.0f}% | "
                   f"{statistics.median(ec):.1f}% |")
    e_gen = [e for _, e in lodo]
    e_pp = [e for _, e in p_lodo]
    gen_coverage = HeldOutBands(lodo, gen_terms["intel"])
    share = sum(hit for _, _, hit in gen_coverage.covered) / len(gen_coverage.covered)
    def per_device(errors: list) -> float:
        return speedfit.median_of_group_medians((row.device, err) for row, err in errors)

    apple = {task: sum(r.backend == "metal" for r in rows) for task, rows in (("generation", gen_rows), ("prompt", prompt_rows))}
    out.append(f"\nThe medians above weigh every row the same. Weighing every device the same (the median of each "
               f"device's median LODO error): generation {per_device(lodo):.1f}%, prompt {per_device(p_lodo):.1f}%. "
               f"Apple GPUs (Metal) are {apple['generation']} of the {len(gen_rows)} generation rows and "
               f"{apple['prompt']} of the {len(prompt_rows)} prompt rows; the per-backend tables below give each "
               f"backend's own figures.")
    out.append("\nTargets (issue 10), leave-one-device-out:\n")
    out.append("| target | goal | measured | met |\n|---|---|---|---|")
    for label, goal, measured, met in (
        ("generation median", "<= 8%", f"{statistics.median(e_gen):.1f}%", statistics.median(e_gen) <= 8),
        ("generation median, each device once (not the issue's measure)", "<= 8%", f"{per_device(lodo):.1f}%",
         per_device(lodo) <= 8),
        ("generation worst", "<= 35%", f"{max(e_gen):.0f}%", max(e_gen) <= 35),
        ("generation devices / backends", ">= 30 / >= 3", f"{len(devices)} / {len(backends)}", len(devices) >= 30 and len(backends) >= 3),
        ("prompt median", "<= 15%", f"{statistics.median(e_pp):.1f}%", statistics.median(e_pp) <= 15),
        ("prompt median, each device once (not the issue's measure)", "<= 15%", f"{per_device(p_lodo):.1f}%",
         per_device(p_lodo) <= 15),
        ("band coverage", "70-90%", f"{share:.0%}", 0.7 <= share <= 0.9),
    ):
        out.append(f"| {label} | {goal} | {measured} | {'yes' if met else 'no'} |")
    out.append("\nWhere a target is missed, the largest errors (tables below) say why. Generation: Intel GPUs under Vulkan "
               "(Arc 140V on an early Xe2 Mesa, Arc A770 on Mesa 24.0 and on Intel's Windows driver): every Intel GPU "
               "measured under Vulkan ran far below other vendors' share of their bandwidth, and between themselves they "
               "differ by driver and build, so their own class (\"intel\" below) predicts them only within about 2x; "
               "2- and 3-bit K-quants in January 2024 CUDA builds (RTX 3090 and Tesla P40, PR #4766), which want a large "
               "unpacking cost where 2025 Vulkan rows want almost none (Radeon 8060S, PR #16900: Q2_K 60 t/s against 43 "
               "for Q4_K_S), so their own fitted cost misses both (their band is about 3x wider); an Iris Xe whose "
               "memory speed is not stated; a "
               "May 2025 Vulkan build on an RTX 2070. Prompt: Intel GPUs under Vulkan and SYCL; a Vulkan RTX 2080 Ti whose "
               "source prints no device line (gpuready assumes Turing gets matrix cores); BF16 MoE on the Radeon 8060S; "
               "MoE on GB10; the 24-core M1 Max; the H200's quantised prompts of a 1B model (four rounds before, below).\n\n"
               + apple_round(unmerged, gen_terms, gen_trials, prompt_trials, lodo, p_lodo, derived) + "\n\n"
               + iquant_round(gen_rows, gen_terms, fit, lodo) + "\n\n"
               + output_round(prompt_rows, output_shares, every_output_errors, p_lodo, p_loso, prompt_forms) + "\n\n"
               + depth_round(gen_rows, gen_trials, gen_terms, lodo) + "\n\n"
               "Four rounds before: the first rows measured for gpuready on a GPU it was lent (text-generation-h200.toml: one "
               "NVIDIA H200, llama.cpp 0c1e570 built there, Llama 3.1 8B and 3.2 1B shapes in Q4_K_M, Q4_0, Q8_0 and F16, "
               "tg128 at depths 0, 4096 and 16384; benchmarks/gpu_run.sh). Held out under the term set of the round "
               "before, every H200 generation row was predicted slow (median 36%, worst 48%): the HBM class (\"hbm\", "
               "CUDA and ROCm on HBM GPUs with their own efficiency and fixed cost) had been fitted on A100, H100 and "
               "Instinct rows of 2023-24 builds and carried 112 us a layer a token, where the H200 with a 2026 build "
               "pays about 60. With those rows the class raises its own rows' held-out error (18.5% -> 26.3%, \"Which "
               "terms stay\"), so it is dropped: the H200 is predicted within 8.4% (worst 18%) held out, and the older "
               "HBM rows take CUDA's constants (17.6% held out, where their own class gave 10.7% before the H200). "
               "Prompt: the H200's quantised prompts ran at 82-170 TFLOPS of useful work (pp512; F16 at 340), against "
               "989 on its datasheet and 759 that `gpuready bench` measured on the same machine, and the power form's "
               "cap predicts its 1B rows 2-3x fast; the prompt median rose from 14.6% to 15.4%. Tried and dropped there: "
               "a fixed prompt cost per layer per token (which fits the H200's two shapes at about 1.2 us beside 218 "
               "TFLOPS): as a third term it raised CUDA's held-out prompt error from 18.9% to 22.8%, and as a third form "
               "of the second term it lost on CUDA (25.5% against 21.6%) and won nowhere by more than half a point.\n\n"
               "Five rounds before: 30 mixture-of-experts rows on 8 more devices (text-generation-moe.toml: Strix Halo under ROCm, "
               "Radeon PRO W7800 and RX 7900 XTX under ROCm, RTX 4090, Tesla P40, A10 and RTX PRO 6000 under CUDA, Mixtral on "
               "an M2 Max): the MoE prompt rows went 44% -> 22% held out and their band covers 76% of them (was 38%); with "
               "them the prompt term choice keeps per-family efficiencies (float 1.18, legacy 1.09 of K-quants; 15.1% "
               "without them) and family bands (MoE 2.27x its backend's), and ROCm's prompt efficiency fell from 1.00 to "
               "0.72 on the first Strix Halo ROCm rows (Qwen3 MoE prompts there run at under half of Vulkan's on the same "
               "file, gpt-oss within 10-26%).\n\n"
               "Kept in earlier rounds, each as a fact of llama.cpp's source or by the held-out term choice: (1) BF16 "
               "experts on Vulkan padded to the matrix-matrix shader's 32-token tile (text_estimate.padded_expert_seconds, "
               "no constant fitted; docs/vulkan-capabilities.md section 4): Qwen3-30B-A3B BF16 on Strix Halo's Radeon "
               "8060S, which ran at a third of its byte-bound speed, went 199% -> 48% and the generation worst 199% -> "
               "132%. (2) Prompt rows from CUDA builds before PR #8075 on Volta or newer as their own kernel class "
               "(\"cublas\", the paragraph below). (3) Bands per quant family where, held out, they raise the "
               "worst-covered family's coverage (\"Bands\" below). (4) Intel's GPUs (48 rows from llama.cpp PRs, "
               "docs/backend/SYCL.md and two secondary copies of forum posts; text-generation-intel.toml): sycl is now "
               "fitted on 4 devices instead of one, and an Intel GPU under Vulkan gets its own constants (\"intel\", "
               "kept by the term choice in both models); before that class the Intel rows widened every Vulkan band "
               "(generation +/-26% -> +/-47%, prompt +/-52% -> +/-88%) and raised the generation worst to 379%. Rows run behind a Raspberry Pi "
               "host are skipped: gpuready does not model a host too weak to keep the GPU fed. (5) A term for one class of "
               "rows is judged on that class's own rows (\"Which terms stay\"): with the Intel rows the all-rows "
               "median had dropped the lowbit family and the MoE prompt share, whose own rows then went 34% -> 46% and "
               "45% -> 153%, because a median over 322 rows cannot see 11 or 8 of them. The quant-family shares and "
               "the MoE layer factor stay dropped on the same rules. Kept in the round before: a board power for 138 GPUs (prompt LODO 26.6% "
               "-> 24.5% then), the capabilities llama.cpp's Vulkan backend prints per device (docs/vulkan-capabilities.md; "
               "24.5% -> 23.2%), a mixture-of-experts model's prompt compute at its own share (PROMPT_MOE_EFFICIENCY; "
               "23.2% -> 22.2%). Tried and dropped in that round: the vector rate at twice FP32 (25.5% against 23.2%), the "
               "vector rate only where the table lists a matrix rate (24.2%), and the weights streamed once per 512-token "
               "micro-batch (22.6% against 22.2%). Dropped in earlier rounds: separate constants for builds older than "
               "mid-2024 across all backends (generation LODO 7.5% -> 9.4%); a prompt term at the vector rate for every "
               "GPU (22.4% against 21.2% then); a per-core bandwidth cap for CPU rows (LODO 9.2% against 8.8% then); a "
               "Zen 4 or Strix Point core's FP32 peak at the 32 FLOPs a cycle of its 256-bit FMA pipes rather than the 64 "
               "its AVX-512 flag implies (CPU prompt LODO 30.8% -> 46.1%, all prompt rows 14.2% -> 15.0%: llama.cpp's CPU "
               "prompt runs int8 dot products, where AVX-512 VNNI does in one instruction what AVX2 needs three for, "
               "whatever the FMA width). Kept in a later round: the Intel N-series' Gracemont cores at the 16 FP32 FLOPs a "
               "cycle of their two 128-bit pipes (catalog/cpus.toml fp32_flops_per_cycle), not the 32 their AVX2 flag "
               "implies: the N100's prompt row went 204% -> 104% held out, the CPU generation LODO median 12.1% -> "
               "11.6%. Tried and dropped in it: a hybrid Core 12th-14th gen CPU's Gracemont E-cores at that 16 (the P-cores "
               "at 32, threads on P-cores first): no held-out change in generation or prompt, text-to-speech LOSO 45% -> "
               "52% (the i9-12900H's Kokoro rows). Kept "
               "in earlier rounds: the untied input embedding left out of the bytes and FLOPs a token needs (8.8% -> "
               "8.6%), unpacking at the GPU's vector rate (8.6% -> 8.1%), and the prompt's power limit. Figures of terms "
               "are as measured when each was tried, on the rows of that time.")
    out.append(f"\nThe prompt median over rows ({statistics.median(e_pp):.1f}%) owes much to llama.cpp's Apple Silicon "
               f"scoreboard among the rows (discussion #4167, from a secondary copy: text-generation-apple.toml; "
               f"{apple['prompt']} of the {len(prompt_rows)} prompt rows are Metal's, predicted within "
               f"{statistics.median(e for r, e in p_lodo if r.backend == 'metal'):.0f}%); each device once it is "
               f"{per_device(p_lodo):.1f}%, and CUDA's own median is "
               f"{statistics.median(e for r, e in p_lodo if r.backend == 'cuda'):.0f}%. The same GPU ran about 2x faster "
               "in 2025-26 builds than in the December 2023 rows (RTX 4090, llama-2-7b Q4_0: 5,531 t/s in XiongjieDai's "
               "table, 11,993 in the 2025 scoreboard): until llama.cpp PR #8075 (June 2024) CUDA builds dequantised "
               "quantised weights to FP16 for cuBLAS on Volta and newer, and int8 tensor-core MMQ kernels have run them "
               "since. Rows dated before that month (the `measured` field) are fitted as their own class (\"cublas\", "
               "kept by the term choice, scored but never estimated), so the CUDA constants describe today's kernels: "
               "without it, before the Intel rows, CUDA's median was 25.9%, each device once 20.0% and LOSO 16.4% (row "
               "LODO 12.6%; with it 19.5%, 16.7%, 14.6% and 13.5%). The prompt's band (PROMPT_BAND, \"Bands: prompt\" "
               "below) is each backend's own, apart from the generation band. The second term's form is chosen per "
               "backend (table under \"Which terms stay\"): with one form for all, the Apple rows flipped it to the "
               "per-TFLOP ceiling and raised CUDA's median to 29.2%.\n")
    out.append(f"\nBaseline, one line (0.72 x peak bandwidth / file size, GPU rows of dense models, {len(baseline)} rows): "
               f"median {statistics.median(baseline):.1f}%, worst {max(baseline):.0f}%.\n")
    for task, a, b, c in (("Generation", lodo, loso, inside), ("Prompt processing", p_lodo, p_loso, p_inside)):
        out.append(f"### {task} per backend\n")
        out.append("| backend | rows | devices | LODO median | LODO worst | LOSO median | LOSO worst | in-sample median | in-sample worst |\n"
                   "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for backend in sorted({row.backend for row, _ in a}):
            ea, eb, ec = ([e for r, e in x if r.backend == backend] for x in (a, b, c))
            n_dev = len({r.device for r, _ in a if r.backend == backend})
            out.append(f"| {backend} | {len(ea)} | {n_dev} | {statistics.median(ea):.1f}% | {max(ea):.0f}% | "
                       f"{statistics.median(eb):.1f}% | {max(eb):.0f}% | {statistics.median(ec):.1f}% | {max(ec):.0f}% |")
        out.append("")
        out.append(f"{task} per quant family (LODO{'; mixture-of-experts models as one class' if task != 'Generation' and prompt_terms['moe'] else ''}):\n")
        out.append("| family | rows | median | worst |\n|---|---:|---:|---:|")
        for family in sorted({row.family for row, _ in a}):
            ea = [e for r, e in a if r.family == family]
            out.append(f"| {family} | {len(ea)} | {statistics.median(ea):.1f}% | {max(ea):.0f}% |")
        out.append("")
    time_to_first_token(gen_rows, prompt_rows, gen_terms, {"families": shares, "second": second_on,
                                                           "intel": prompt_terms["intel"]}, out)
    out.append("### Which terms stay\n")
    out.append("A term is kept only if dropping it raises the held-out error, the mean of the leave-one-device-out and "
               "leave-one-source-out medians (tried in order; a dropped term's constants are neutral: efficiency 1.0, "
               "seconds 0). A term for one class of rows (hbm: HBM GPUs; moe: mixture-of-experts models; lowbit: 2- and "
               "3-bit K-quants; ilowbit: 1- to 3-bit i-quants; cublas: CUDA prompts of the cuBLAS era; intel: Intel GPUs under Vulkan; kv: generation "
               "after a context already in the KV cache, llama-bench's @d tests) is judged on "
               "that class's own rows and on all rows, and stays if dropping it raises either (a median over all rows "
               "cannot see a term that fixes a few of them; a class's own constants also keep its rows from pulling "
               "the shared ones); the other rows' figures are shown beside it.\n")
    out.append("| model | variant | held-out error | with the term |\n|---|---|---:|---:|")
    for task, trials in (("generation", gen_trials), ("prompt", prompt_trials)):
        for label, score, best in trials:
            out.append(f"| {task} | {label} | {score:.2f}% | {'-' if best is None else f'{best:.2f}%'} |")
    kept = [name for name, on in {**gen_terms}.items() if on]
    out.append(f"\nGeneration keeps: {', '.join(kept) or 'bandwidth only'}; prompt keeps: "
               f"{', '.join(name for name, on in prompt_terms.items() if on) or 'compute only'}.\n")
    out.append("The prompt's second term, per backend: each backend's own held-out error (the mean of its rows' LODO and "
               "LOSO medians, every term on) with the power form (joules per FLOP over the board's power limit) and the "
               "ceiling form (seconds per TFLOP); the lower one is kept, the power form on a tie.\n")
    out.append("| backend | power form | ceiling form | kept |\n|---|---:|---:|---|")
    for backend, power, ceiling, kept_form in form_trials:
        out.append(f"| {backend} | {power:.2f}% | {ceiling:.2f}% | {kept_form} |")
    out.append("")
    bands(gen_coverage, out, fits)
    bands(HeldOutBands(p_lodo, prompt_terms["intel"]), out, fits, "PROMPT_BAND", "prompt", "PROMPT_FAMILY_BAND")
    out.append("### Fitted constants (gpuready/tasks/text_estimate.py holds these, rounded)\n")
    out.append("| constant | key | fitted | in estimate.py |\n|---|---|---:|---:|")
    for backend in sorted(fit.efficiency):
        record(out, fits, "BANDWIDTH_EFFICIENCY", backend, fit.efficiency[backend], est.BANDWIDTH_EFFICIENCY.get(backend))
        record(out, fits, "LAYER_SECONDS (microseconds)", backend, fit.layer_s[backend] * 1e6,
               est.LAYER_SECONDS[backend] * 1e6 if backend in est.LAYER_SECONDS else None)
    record(out, fits, "MOE_LAYER_FACTOR", "all", fit.moe_layer_factor, est.MOE_LAYER_FACTOR)
    record(out, fits, "KV_READ_EXTRA", "all", fit.kv_extra, est.KV_READ_EXTRA)
    # Without the "lowbit" ("ilowbit") term, 2- and 3-bit K-quants (1- to 3-bit i-quants) take their parent family's
    # constants (speedfit.LOW_BIT_PARENT).
    low = {low: parent for low, parent in speedfit.LOW_BIT_PARENT.items() if parent in fit.unpack_ops}
    unpack_ops = {**{low: fit.unpack_ops[parent] for low, parent in low.items()}, **fit.unpack_ops}
    family_share = {**{low: fit.family[parent] for low, parent in low.items()}, **fit.family}
    for family in sorted(unpack_ops):
        record(out, fits, "UNPACK_OPS_PER_WEIGHT", family, unpack_ops[family], est.UNPACK_OPS_PER_WEIGHT.get(family))
    for family in sorted(family_share):
        record(out, fits, "QUANT_FAMILY_EFFICIENCY", family, family_share[family], est.QUANT_FAMILY_EFFICIENCY.get(family))
    for backend in sorted(pfit.efficiency):
        record(out, fits, "PROMPT_EFFICIENCY", backend, pfit.efficiency[backend], est.PROMPT_EFFICIENCY.get(backend))
        form = prompt_forms[backend.split("-")[0]]  # a class ("vulkan-intel") takes its backend's form
        ceiling = pfit.layer_s[backend] if form == "ceiling" else 0.0
        joules = pfit.layer_s[backend] if form == "power" else 0.0
        record(out, fits, "PROMPT_SECONDS_PER_TFLOP (milliseconds)", backend, ceiling * 1e3,
               est.PROMPT_SECONDS_PER_TFLOP[backend] * 1e3 if backend in est.PROMPT_SECONDS_PER_TFLOP else None)
        record(out, fits, "PROMPT_JOULES_PER_FLOP (picojoules)", backend, joules * 1e12,
               est.PROMPT_JOULES_PER_FLOP[backend] * 1e12 if backend in est.PROMPT_JOULES_PER_FLOP else None)
    record(out, fits, "PROMPT_GEFORCE_RATE", "all", 2.0 if prompt_terms["geforce"] else 1.0, est.PROMPT_GEFORCE_RATE)
    record(out, fits, "PROMPT_MOE_EFFICIENCY", "all", pfit.family.get(MOE_FAMILY, 1.0), est.PROMPT_MOE_EFFICIENCY)
    for family in sorted(set(pfit.family) - {MOE_FAMILY, CUBLAS_FAMILY} | set(est.PROMPT_FAMILY_EFFICIENCY)):
        record(out, fits, "PROMPT_FAMILY_EFFICIENCY", family, pfit.family.get(family, 1.0), est.PROMPT_FAMILY_EFFICIENCY.get(family))
    if CUBLAS_FAMILY in pfit.family:
        out.append(f"\nThe \"cublas\" class (quantised prompts of CUDA builds before llama.cpp PR #8075 on Volta or newer, "
                   f"which dequantised to FP16 for cuBLAS: score_estimator.CUBLAS_PROMPT_UNTIL) is fitted at "
                   f"{pfit.family[CUBLAS_FAMILY]:.2f} of K-quants' share over "
                   f"{sum(r.family == CUBLAS_FAMILY for r in prompt_rows)} rows. It is scored, never estimated: gpuready "
                   f"estimates today's builds.")
    out.append("\nCOMPUTE_EFFICIENCY (the one-term median of each backend's prompt rows) stays the backend scale the "
               "image and speech estimators use; the language-model prompt uses PROMPT_EFFICIENCY and "
               "PROMPT_SECONDS_PER_TFLOP. Every fitted efficiency is capped at 1 (the table's peak).\n")
    out.append("| constant | key | fitted | in estimate.py |\n|---|---|---:|---:|")
    for backend in sorted(legacy_pfit.efficiency):
        if backend == "sycl":  # one row of Intel's own build: too thin to rescale image and speech by
            continue
        record(out, fits, "COMPUTE_EFFICIENCY", backend, legacy_pfit.efficiency[backend], est.COMPUTE_EFFICIENCY.get(backend))
    out.append("\nCOMPUTE_EFFICIENCY keeps sycl's unfitted guess: its prompt rows measure llama.cpp's SYCL kernels, not "
               "the PyTorch and ONNX paths the image and speech estimates scale by it.\n")
    worst = sorted(lodo, key=lambda pair: -pair[1])[:8]
    out.append("Largest held-out generation errors (LODO):\n")
    out.append("| device | backend | family | measured t/s | predicted t/s | error |\n|---|---|---|---:|---:|---:|")
    for row, err in worst:
        train = [r for r in gen_rows if r.device != row.device]
        predicted = speedfit.predict_generation(row, speedfit.fit_generation(train, **gen_terms))
        out.append(f"| {row.device} | {row.backend} | {row.family} | {1 / row.measured_s:.1f} | {predicted:.1f} | {err:.0f}% |")
    out.append("")
    out.append("Largest held-out prompt errors (LODO):\n")
    out.append("| device | backend | model and quant | source | measured t/s | predicted t/s | error |\n"
               "|---|---|---|---|---:|---:|---:|")
    for row, err in sorted(p_lodo, key=lambda pair: -pair[1])[:10]:
        train = [r for r in prompt_rows if r.device != row.device]
        predicted = speedfit.predict_generation(row, speedfit.fit_generation(
            train, layers=second_on, families=shares, hbm=False, moe=False, unpack=False, intel=prompt_terms["intel"]))
        source = row.source.replace("https://github.com/", "").split("/blob/")[0]
        out.append(f"| {row.device} | {row.backend} | {row.variant} | {source} | {1 / row.measured_s:.0f} | {predicted:.0f} | {err:.0f}% |")
    out.append("")


def depth_round(gen_rows: list, trials: list, terms: dict, lodo: list) -> str:
    """The paragraph on generation at depth: the rows, the KV-read term's held-out figures, each series' own k."""
    deep = [r for r in gen_rows if r.depth]
    trial = {label.split(",")[0] + ("" if "own" in label else " others"): (score, best) for label, score, best in trials
             if label.startswith("without kv")}
    own_without, own_with = trial["without kv"]
    rest_without, rest_with = trial["without kv others"]
    fitted = speedfit.fit_generation(gen_rows, **{**terms, "kv": True})
    implied = speedfit.kv_series(gen_rows, lambda row: fitted.efficiency[speedfit.klass(row, terms["hbm"], terms["intel"])])
    table = "\n".join(f"| {device} | {backend} | {label} | {low:,} -> {high:,} | {extra:.2f} |"
                      for device, backend, label, low, high, extra in implied)
    low, high = min(implied, key=lambda s: s[-1]), max(implied, key=lambda s: s[-1])
    h200 = [e for r, e in lodo if r.device == "h200" and r.depth]
    return (f"Three rounds before: generation at depth (text-generation-depth.toml: llama.cpp's benches/dgx-spark.md at four "
            f"depths for its five models, an M2 Ultra's Qwen3 0.6B from 2,048 to 32,768 tokens (PR #26570), Strix Halo "
            f"under ROCm and Vulkan; {len(deep)} generation rows at depth on {len({r.device for r in deep})} devices and "
            f"{len({r.backend for r in deep})} backends, with the H200's, RX 7900 XTX's and 4x RTX 4090's of earlier "
            "rounds). On the H200 (issue 10) a token at 16,384 tokens of Llama 3.1 8B Q4_K_M took 0.97 ms more than "
            "at none, for 2.15 GB more f16 K/V: the cache read at about half the weights' share of bandwidth. "
            "llama.cpp's flash-attention decode kernel runs one token's query heads over few KV heads (32 over 8 "
            "there), so it splits the cache's length across blocks and reduces the pieces in a second kernel, where a "
            "weight matrix-vector product spreads over every row. The term (\"kv\", KV_READ_EXTRA): the KV cache's "
            "bytes at 1 / (1 + k) of the weights' effective bandwidth, one k for all backends, taken from the series "
            "of rows at several depths (one device, source and model): between a series' shallowest and deepest row "
            "the weights and fixed costs are the same, so its extra time per token over the extra cache bytes at its "
            "backend's efficiency, less 1, is its own k (the table); k is the median over devices of each device's "
            f"median. Fitted on every row that is {fitted.kv_extra:.2f}; the series run from "
            f"{low[-1]:.2f} ({low[0]}, {low[2]}) to {high[-1]:.2f} ({high[0]}, {high[2]}). Held out (k from the "
            f"other devices' series) the depth rows' error is {own_with:.2f}% with the term and {own_without:.2f}% "
            f"without (the other rows {rest_with:.2f}% and {rest_without:.2f}%), so it is "
            f"{'kept' if terms['kv'] else 'dropped (KV_READ_EXTRA 0)'}. In this round's first try k was fitted with "
            "the other constants on every row's relative error, and came out at 0.03: the devices' errors at depth 0 "
            "decided it. Held out, the H200's "
            f"depth rows are predicted within {max(h200):.0f}% (median {statistics.median(h200):.0f}%); one k cannot "
            "serve a series that wants twice it, and more series at depth on large GPUs (H100, MI300X, RTX 5090) are "
            "what a per-architecture k needs.\n\n"
            "| device | backend | model | depths | k implied |\n|---|---|---|---|---:|\n" + table)


def kept_by_all_rows(trials: list) -> list[str]:
    """The class terms choose_terms kept only because dropping them raised the error over all rows (their own rows
    alone would have dropped them)."""
    found = []
    for name, without, with_term in trials:
        if ", its own " in name and without <= with_term + 1e-9:
            term = name.split()[1].rstrip(",")
            everywhere = next((w, t) for n, w, t in trials if n.startswith(f"without {term}, all "))
            if everywhere[0] > everywhere[1] + 1e-9:
                found.append(term)
    return found


def apple_round(rows: list, terms: dict, trials: list, prompt_trials: list, lodo: list, p_lodo: list,
                derived: set[str]) -> str:
    """The paragraph on the GPUs scored at the FLOPS gpuready derives (Apple M3, M4): their rows' held-out errors, and
    the term choice's rule that changed with them (the "ilowbit" figures, and generation held out by the old rule)."""
    mine = [e for r, e in lodo if r.device in derived]
    prompts = [e for r, e in p_lodo if r.device in derived]
    if not mine:
        return ""
    rule = ""
    if kept_by_all_rows(trials + prompt_trials) == ["ilowbit"]:  # kept, and both of its trial lines are there
        own, everywhere = ((without, with_term) for name, without, with_term in trials
                           if name.startswith(("without ilowbit, its own", "without ilowbit, all")))
        old_rule = {**terms, "ilowbit": False}
        before = speedfit.cross_validate_generation(rows, "device", **old_rule)  # it folds IQ1-IQ3 into IQ4 itself
        rule = (" With them the \"ilowbit\" term's own rows are a tie held out "
                f"({own[0]:.2f}% without it, {own[1]:.2f}% with it), while dropping it raises the error over all rows "
                f"({everywhere[1]:.2f}% -> {everywhere[0]:.2f}%): in a joint fit a class's own constants also keep its "
                "rows from pulling the shared ones. The term choice (\"Which terms stay\") therefore keeps a class "
                "term when dropping it raises the error on its own rows or on all rows; it had looked at its own rows "
                "only, and by that rule the term went, every i-quant shared one unpacking cost and generation came out "
                f"at {statistics.median(e for _, e in before):.1f}% held out by device (CPU rows "
                f"{statistics.median(e for r, e in before if r.backend == 'cpu'):.1f}%). The other terms' choices are "
                "the same under either rule.")
    return ("Latest round: Apple M3 and M4 GPUs scored as gpuready estimates them. Apple states no TFLOPS for M3 or M4 "
            "GPUs, so their catalog/gpus.toml rows carry none, and the scorer had used the table's figure alone: it "
            "skipped those GPUs' prompt rows and timed their quantised generation rows without the unpacking cost, "
            "while gpuready's Apple probe derives a rate from the core count (probes/apple.py gpu_flops) and applies "
            "both. The scorer now takes the probe's rate (score_estimator.gpu_flops), and the per-core rate is now "
            "M2's, the newest Apple states (13.6 TFLOPS for the M2 Max's 38 GPU cores: 0.358 a core, as its 10-, 19- "
            "and 76-core figures give), not M1's 0.325. Third-party GPU databases (hmc-tech.com) list M3 and M4 GPU "
            "cores with M2's 128 FP32 lanes at M2's 1.398 GHz (M3) or more (M4, 1.47 GHz), so it is a floor. "
            f"{len(mine)} generation and {len(prompts)} prompt rows on {len(derived)} M3/M4 GPUs are "
            f"scored that way; held out by device their generation rows' median error is {statistics.median(mine):.1f}% "
            f"(worst {max(mine):.0f}%)"
            + (f", their prompt rows' {statistics.median(prompts):.1f}% (worst {max(prompts):.0f}%)." if prompts else ".")
            + rule)


def iquant_round(gen_rows: list, terms: dict, fit, lodo: list) -> str:
    """The paragraph on i-quants: their rows, their fitted unpacking costs (``fit``, the generation fit on every row)
    beside the K-quants', their held-out errors, and what the rows of their sources do to the other rows held out."""
    mine = [r for r in gen_rows if r.family.startswith("i-quant")]
    if not mine:
        return ""
    sources = {r.source for r in mine}
    others = [r for r in gen_rows if r.source not in sources]
    without = speedfit.cross_validate_generation(others, "device", **terms)
    with_them = [(r, e) for r, e in lodo if r.source not in sources]
    ops = {family: speedfit.unpack_ops_of(fit, family) for family in ("k-quant", "i-quant", speedfit.I_LOW_BIT_FAMILY)}

    def median(errors: list, family: str | None = None, backend: str | None = None) -> float:
        return statistics.median(e for r, e in errors if (family is None or r.family == family)
                                 and (backend is None or r.backend == backend))

    def low(row) -> bool:
        """A 1- to 3-bit i-quant row, whether or not the "ilowbit" term keeps it a family of its own."""
        return row.family == speedfit.I_LOW_BIT_FAMILY or (row.family == "i-quant" and " IQ4" not in row.label)

    def held(lows: bool) -> str:
        errs = [e for r, e in lodo if r.family.startswith("i-quant") and low(r) == lows]
        return f"{statistics.median(errs):.0f}% (worst {max(errs):.0f}%, {len(errs)} rows)"

    if terms.get("ilowbit", True):
        family_text = ("so they are their own family (\"ilowbit\", kept by the term choice above). Fitted: "
                       f"{ops['i-quant']:.2f} operations a weight for IQ4 and {ops[speedfit.I_LOW_BIT_FAMILY]:.2f} for "
                       f"IQ1-IQ3, against {ops['k-quant']:.2f} for K-quants")
    else:
        family_text = ("so they were tried as a family of their own (\"ilowbit\"), which the term choice above does "
                       "not keep: all i-quants share one unpacking cost. Fitted: "
                       f"{ops['i-quant']:.2f} operations a weight, against {ops['k-quant']:.2f} for K-quants")

    return ("The round before: i-quants (text-generation-iquant.toml). gpuready had no row of an i-quant (IQ1_S to IQ4_XS), "
            "so its fit gave them no unpacking cost, and the catalogue's IQ4_XS files came out at twice Q4_K_M's speed "
            "wherever unpacking is a large share of a token, as on a 2-core CPU (Llama 3.1 8B on a 2-core AVX-512 "
            "machine with 51 GB/s: 10.6 against 5.7 tokens/s before this round, 8.1 against 5.6 after). The rows: the i-quants' generation rows of mainline llama.cpp in ikawrakow's "
            "ik_llama.cpp README (build 081fe431, July 2024; a Ryzen 7950X at 4 threads and an M2 Max CPU at 8) and the "
            "IQ4_XS pairs of llama.cpp PR #5747 (RTX 4080 under CUDA, M2 Max GPU under Metal), "
            f"{len(mine)} i-quant rows on {len({r.device for r in mine})} devices. IQ4_NL and IQ4_XS decode a 4-bit index "
            "through one 16-entry table; IQ1 to IQ3 look 4 or 8 weights up at once in codebooks of 256 to 2,048 "
            f"entries, {family_text}; held out by device the IQ4 rows' median error is "
            f"{held(False)}, the IQ1-IQ3 rows' {held(True)}. The other rows held out by device: "
            f"{median(without):.2f}% without the new sources' rows and {median(with_them):.2f}% with them (CPU rows "
            f"{median(without, backend='cpu'):.1f}% and {median(with_them, backend='cpu'):.1f}%). A quantised family "
            "with no rows at all now takes the K-quants' unpacking cost (text_estimate.unpack_ops_per_weight; "
            "speedfit.unpack_ops_of in the cross-validation), not none. Not fixed: the same README's 2-thread rows "
            "have IQ4_XS at 0.84x Q4_K_S's speed on the 7950X (8.08 against 9.61 tokens/s), where at 4 threads they run "
            "alike (13.36 and 13.24): a CPU's unpacking and memory reads overlap more as threads are added, which a cost "
            "added to the read time cannot follow, so on CPUs of 2 to 4 cores gpuready still leans towards IQ4_XS. "
            "Tried and left out: the README's K-quant, legacy and F16 generation rows as references (they pull the CPU "
            "constants to two machines, the file's header gives the figures), its prompt rows (CPU prompt LODO 21.3% -> "
            "40.7% with them: in that build only F16, Q8_0 and Q4_0 prompts ran through tinyBLAS), and, for CPU rows, a "
            "token's time as the larger of its read and its unpacking instead of their sum (held out worse on the CPU "
            "rows in a first implementation, 15.2% -> 16.3% with the Q4_K_S references).")


def every_output_rows(rows: list) -> list:
    """Prompt rows with the output token's own work (the last feed-forward, the output projection) counted for every
    token, as builds before llama.cpp PR #6122 ran it."""
    return [replace(r, implied=r.implied * (1 + r.output_share), ideal_s=r.ideal_s * (1 + r.output_share),
                    tflop=r.tflop * (1 + r.output_share), per_watt=r.per_watt * (1 + r.output_share), output_share=0.0)
            for r in rows]


def output_round(rows: list, shares: list[float], before: dict, lodo: list, loso: list, forms: dict) -> str:
    """The paragraph on what a prompt runs for its output token only: its share of the work, and the held-out error
    with and without it counted for every token."""
    def medians(errors: dict) -> tuple[float, ...]:
        return tuple(statistics.median(e for r, e in errors[key] if backend is None or r.backend == backend)
                     for key in ("device", "source") for backend in (None, "cpu", "cuda"))

    old = medians(before)
    new = medians({"device": lodo, "source": loso})
    changed = [(share, row) for share, row in zip(shares, rows) if share > 0]
    label = {"cpu": "CPU", "cuda": "CUDA", "metal": "Metal", "rocm": "ROCm", "sycl": "SYCL", "vulkan": "Vulkan"}

    def taking(form: str) -> str:
        """The backends whose prompt takes this form of the second term, named and in order."""
        return ", ".join(label.get(b, b) for b, chosen in sorted(forms.items()) if chosen == form)

    sycl = [r for r in rows if r.backend == "sycl"]
    top_share, top_row = max(changed, key=lambda pair: pair[0])
    return ("Two rounds before: what a prompt computes for its output token only. A prompt needs logits for its last token "
            "only, and llama.cpp has computed them for that token alone since PR #6122 (merged 2024-03-26): after the "
            "last layer's attention the hidden states go through ggml_get_rows(inp_out_ids), so that layer's feed-forward "
            "and the output matrix run for the output token, and a batch without a logits array (llama-bench's pp test, a "
            "server's prompt) outputs one token. gpuready counted both for every prompt token: vocab x hidden "
            "multiply-adds and one layer's feed-forward (text_estimate.prompt_params no longer does; a generated token "
            "still pays them; the feed-forward is what a layer's parameters leave after attention's projections, "
            "3 x 4,096 x 14,336 for Llama 3 8B as its config gives). That is "
            f"{statistics.median(s for s, _ in changed):.0%} of the counted work in the median of the {len(changed)} "
            f"prompt rows it changes and {top_share:.0%} at most ({top_row.variant}): small models with large vocabularies, "
            "as Llama 3.2 1B (128,256 x 2,048 of 1.24B parameters) and Qwen2.5 0.5B. Rows dated before April 2024 "
            "(score_estimator.ALL_LOGITS_UNTIL) ran the older code and keep it counted; a mixture-of-experts model has "
            "the output projection taken from its stated active count (both gpt-oss's and Qwen3's counts hold it), not "
            "the last feed-forward (its routed share is not derivable from those counts). With the same forms and terms, the prompt's "
            f"LODO median went {old[0]:.1f}% -> {new[0]:.1f}% and LOSO {old[3]:.1f}% -> {new[3]:.1f}% (CPU rows "
            f"{old[1]:.1f}% -> {new[1]:.1f}% held out by device, CUDA {old[2]:.1f}% -> {new[2]:.1f}%). It is a fact "
            "of llama.cpp's source, not a fitted term, so it is not put to the term choice. "
            "Against the report before it (prompt LODO 15.8%, the power form for every backend but Metal), the form "
            f"choice above, re-run on the new work, picked the ceiling for {taking('ceiling')} and the power "
            f"limit for {taking('power')}; SYCL's {len(sycl)} rows on {len({r.device for r in sycl})} devices "
            f"went 28.8% -> {statistics.median(e for r, e in lodo if r.backend == 'sycl'):.1f}% held out by device, "
            "the one backend that lost (few rows, two forms that fit them about as well).")


def full_rate(rows: list, on: bool) -> list:
    """Prompt rows with the compute term at each card's usable matrix rate (GenRow.rate), or as they are."""
    if not on:
        return rows
    return [replace(r, ideal_s=r.ideal_s / r.rate, rate=1.0) for r in rows]


def time_to_first_token(gen_rows: list, prompt_rows: list, gen_terms: dict, prompt_terms: dict, out: list[str]) -> None:
    """Score time to first token (512 prompt tokens + one generated token) where a publication gives both speeds.

    Each pair's device is held out of both fits (generation and prompt), as in the LODO tables.
    """
    generation = {(r.device, r.source, r.variant): r for r in gen_rows if r.variant}
    pairs = [(p, generation[(p.device, p.source, p.variant)]) for p in prompt_rows
             if (p.device, p.source, p.variant) in generation]
    errors = []
    for device in sorted({p.device for p, _ in pairs}):
        gen_fit = speedfit.fit_generation([r for r in gen_rows if r.device != device], **gen_terms)
        prompt_fit = speedfit.fit_generation([r for r in prompt_rows if r.device != device], layers=prompt_terms["second"],
                                             families=prompt_terms["families"], hbm=False, moe=False, unpack=False,
                                             intel=prompt_terms["intel"])
        for prompt, gen in ((p, g) for p, g in pairs if p.device == device):
            measured = 512 * prompt.measured_s + gen.measured_s
            predicted = 512 / speedfit.predict_generation(prompt, prompt_fit) + 1 / speedfit.predict_generation(gen, gen_fit)
            errors.append(abs(predicted - measured) / measured * 100)
    if not errors:
        return
    out.append("### Time to first token\n")
    out.append("Seconds from a 512-token prompt to the first generated token (Speed.time_to_first_token_s in "
               f"gpuready/tasks/text_estimate.py), on the {len(errors)} device/model/quant/publication combinations that give both a "
               "prompt and a generation speed, each device held out of both fits.\n")
    out.append(f"| rows | devices | LODO median | LODO worst |\n|---:|---:|---:|---:|\n| {len(errors)} | "
               f"{len({p.device for p, _ in pairs})} | {statistics.median(errors):.1f}% | {max(errors):.0f}% |\n")


def record(out: list[str], fits: dict, name: str, key: str, fitted: float, constant: float | None) -> None:
    fits[(name, key)] = (fitted, constant)
    shown = "-" if constant is None else f"{constant:.2f}"
    out.append(f"| {name} | {key} | {fitted:.2f} | {shown} |")


def bands(held: "HeldOutBands", out: list[str], fits: dict, constant: str = "SPEED_BAND", what: str = "generation",
          family_constant: str = "QUANT_FAMILY_BAND") -> None:
    """A band per backend (80th percentile of its LODO errors), widened per quant family where that family's
    errors run wider than all rows', and the coverage of bands fitted without each device."""
    lodo, intel, kept, covered = held.lodo, held.intel, held.kept, held.covered
    current = getattr(est, constant)
    out.append(f"### Bands: {what}\n")
    out.append(f"Each {what} speed's +/- is its backend's 80th percentile of leave-one-device-out {what} errors, times its "
               f"quant family's factor ({family_constant}: the family's 80th percentile over that of all rows, where "
               f"above 1 and the family was measured on {MIN_BAND_DEVICES} or more devices) where the factors are kept: "
               "they are kept only if, held out, they raise the coverage of the worst-covered family. Coverage: "
               "for every row, the band computed from the other devices' held-out errors only, and whether the row's "
               "own held-out error falls inside it (target: about 80%, within 70-90%).\n")
    pooled = speedfit.percentile([e for _, e in lodo], 0.8) / 100
    out.append(f"A backend measured on fewer than {MIN_BAND_DEVICES} devices gets at least the pooled band of all rows "
               f"(+/-{pooled:.0%}) and at least the +/-{est.SPEED_UNCERTAINTY['assumed']:.0%} of an assumed figure: "
               "a percentile of one or two devices' errors says little.\n")
    out.append(f"| backend | rows | devices | band ({constant}) | coverage |\n|---|---:|---:|---:|---:|")
    def key(row) -> str:
        return speedfit.klass(row, False, intel)

    for backend in sorted({key(row) for row, _ in lodo}):
        errors = [e for r, e in lodo if key(r) == backend]
        band = speedfit.percentile(errors, 0.8) / 100
        devices = len({r.device for r, _ in lodo if key(r) == backend})
        if devices < MIN_BAND_DEVICES:
            band = max(band, pooled, est.SPEED_UNCERTAINTY["assumed"])
        fits[(constant, backend)] = (band, current.get(backend))
        inside = [hit for r, _, hit in covered if key(r) == backend]
        out.append(f"| {backend} | {len(errors)} | {devices} | +/-{band:.0%} | {sum(inside) / len(inside):.0%} |")
    total = [hit for _, _, hit in covered]
    out.append(f"| all | {len(total)} | {len({r.device for r, _ in lodo})} | | {sum(total) / len(total):.0%} |\n")
    factors = getattr(est, family_constant)
    out.append(f"| quant family | rows | devices | 80th percentile | factor ({family_constant}) | coverage |\n"
               "|---|---:|---:|---:|---:|---:|")
    for family in sorted({row.family for row, _ in lodo}):
        errors = [e for r, e in lodo if r.family == family]
        factor = speedfit.family_band_factor(lodo, family, 0.8, MIN_BAND_DEVICES) if kept else 1.0
        if family != CUBLAS_FAMILY:  # a scored-only class: no estimate carries it
            fits[(family_constant, family)] = (factor, factors.get(family))
        inside = [hit for r, _, hit in covered if r.family == family]
        out.append(f"| {family} | {len(errors)} | {len({r.device for r, _ in lodo if r.family == family})} | "
                   f"{speedfit.percentile(errors, 0.8):.0f}% | {factor:.2f} | {sum(inside) / len(inside):.0%} |")
    out.append(f"\nFamily factors {'kept' if kept else 'not kept (1.00)'}: held out, the worst-covered family's coverage is "
               f"{held.worst_with:.0%} with them and {held.worst_without:.0%} without.\n")


class HeldOutBands:
    """Each row's held-out band and whether its error falls inside (speedfit.band_coverage), with the quant-family
    factors where they are kept: only if, held out, they raise the coverage of the worst-covered family (one
    measured on MIN_BAND_DEVICES or more devices). Both coverages are computed once, here."""

    def __init__(self, lodo: list, intel: bool = False):
        self.lodo, self.intel = lodo, intel
        with_factors, without = (speedfit.band_coverage(lodo, "device", min_devices=MIN_BAND_DEVICES,
                                                        floor=est.SPEED_UNCERTAINTY["assumed"] * 100,
                                                        families=families, intel=intel)
                                 for families in (True, False))
        self.worst_with, self.worst_without = worst_family_coverage(lodo, with_factors), worst_family_coverage(lodo, without)
        self.kept = self.worst_with > self.worst_without
        self.covered = with_factors if self.kept else without


def worst_family_coverage(lodo: list, covered: list) -> float:
    """The lowest held-out band coverage of a quant family measured on MIN_BAND_DEVICES or more devices."""
    shares = []
    for family in {row.family for row, _ in lodo}:
        if len({r.device for r, _ in lodo if r.family == family}) >= MIN_BAND_DEVICES:
            hits = [hit for r, _, hit in covered if r.family == family]
            shares.append(sum(hits) / len(hits))
    return min(shares)
