"""Fit and cross-validate llama.cpp's speed model on measured rows: pure functions, no I/O.

A generation row is (backend, quant family, ideal seconds x = bytes read / peak bandwidth,
layers L, measured seconds per token t, device, source). The model is

    t = x / (e_backend * q_family) + L * c_backend + k x_kv / e_backend

(e: bandwidth efficiency for K-quants, q: the family's efficiency relative to K-quants,
c: fixed seconds per layer per token; x_kv: the KV cache's share of x, read by the attention
kernel, and k its extra cost: the cache is read at e / (1 + k) where the "kv" term is on).
It is linear in (1/e, c) for a fixed q, in 1/q for fixed (e, c) and in k for the rest, so the
fit alternates small least-squares problems on the relative error (t_predicted / t - 1): no
solver library, a few milliseconds.

A prompt row is (backend, family, implied efficiency = measured / (peak FLOPS / 2 x active
parameters)). The prompt model is fitted in the generation model's form (compute time plus a
per-backend seconds-per-TFLOP ceiling); fit_prompt keeps the one-term per-backend medians that
the image and speech estimators scale by.

Cross-validation: leave one device out (fit on every other device, predict the held-out
device's rows) and leave one source out (the same per publication), so each error is a
prediction for hardware or a publication the constants never saw.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from operator import mul

from gpuready.tasks import text_estimate

REFERENCE_FAMILY = "k-quant"
# 1 / the highest efficiency a fit may return for its first term (bandwidth for generation,
# compute for the prompt model): no device beats the peak its table lists, and without this cap
# least squares trades a >100% efficiency against a larger fixed cost.
MIN_INVERSE_EFFICIENCY = 1.0
ITERATIONS = 40


@dataclass(frozen=True)
class GenRow:
    backend: str
    family: str
    ideal_s: float  # bytes read per token / peak bandwidth
    layers: int
    measured_s: float  # 1 / measured tokens per second
    device: str
    source: str
    memory_class: str = ""  # "hbm" for HBM GPUs: their own efficiency and fixed cost when that term is on
    moe: bool = False  # mixture of experts: routing adds kernels (router, top-k, gathered matmuls) per layer
    variant: str = ""  # model and quant: pairs a prompt row with its generation row for time to first token
    weight_s: float = 0.0  # weights multiplied / vector FLOPS: seconds per unpacking op per weight (0: FLOPS unknown)
    rate: float = 1.0  # prompt rows: the matrix rate the kernels can use, in multiples of the table FLOPS
    known_s: float = 0.0  # seconds a token spends in work no generation constant scales (padded BF16 expert products on Vulkan)
    cublas: bool = False  # prompt rows: quantised weights dequantised to FP16 for cuBLAS (PromptRow.cublas)
    vendor_class: str = ""  # "intel" for Intel GPUs under Vulkan: their own constants when that term is on
    kv_s: float = 0.0  # KV cache bytes read per token / peak bandwidth (part of ideal_s)
    depth: int = 0  # tokens already in the context when the test began (llama-bench's @dN)
    label: str = ""  # model and quant, at every depth (variant is empty at depth: no prompt row pairs with it)


def klass(row: GenRow, hbm: bool, intel: bool = False) -> str:
    """The constant class of a row: its backend, backend-intel for an Intel GPU under Vulkan when that term is
    on, or backend-hbm when the HBM term is on."""
    if intel and row.vendor_class:
        return f"{row.backend}-{row.vendor_class}"
    return f"{row.backend}-{row.memory_class}" if hbm and row.memory_class else row.backend


@dataclass(frozen=True)
class GenFit:
    efficiency: dict  # backend -> bandwidth efficiency (K-quants)
    family: dict  # family -> efficiency multiple of K-quants
    layer_s: dict  # backend -> seconds per layer per token
    moe_layer_factor: float = 1.0  # a mixture-of-experts layer's fixed cost, in dense layers
    unpack_ops: dict = None  # family -> operations per weight to unpack it (compute, not bytes)
    kv_extra: float = 0.0  # k: the KV cache's read costs (1 + k) x its bytes over the weights' effective bandwidth


@dataclass(frozen=True)
class PromptRow:
    backend: str
    family: str
    implied: float  # measured / (peak FLOPS / (2 x active params))
    device: str
    source: str
    ideal_s: float = 0.0  # 2 x active params / peak FLOPS
    tflop: float = 0.0  # 2 x active params / 1e12: the work of one token, in TFLOP
    variant: str = ""  # model and quant
    rate: float = 1.0  # the matrix rate the kernels can use, in multiples of the table FLOPS (2 on GeForce RTX)
    moe: bool = False  # mixture of experts
    per_watt: float = 0.0  # 2 x active params / the board's power limit (FLOP per watt); 0 where the power is unknown
    vendor_class: str = ""  # "intel" for Intel GPUs under Vulkan (GenRow.vendor_class)
    cublas: bool = False  # quantised weights dequantised to FP16 for cuBLAS (CUDA builds before PR #8075, Volta and newer)
    # What the output token's own work (the last feed-forward, the output projection) would add to the work counted
    # above if it ran for every prompt token, as a share of it (0 where it did: builds before llama.cpp PR #6122)
    output_share: float = 0.0


@dataclass(frozen=True)
class PromptFit:
    efficiency: dict
    family: dict


LOW_BIT_FAMILY = "k-quant-low"
I_LOW_BIT_FAMILY = "i-quant-low"
# Each low-bit family and the family it folds into when its term is dropped: 2- and 3-bit K-quants into K-quants
# (the "lowbit" term), 1- to 3-bit i-quants into IQ4_NL/IQ4_XS (the "ilowbit" term).
LOW_BIT_PARENT = {LOW_BIT_FAMILY: REFERENCE_FAMILY, I_LOW_BIT_FAMILY: "i-quant"}


def merge_low_bit(rows: list, on: bool, family: str = LOW_BIT_FAMILY) -> list:
    """Rows with a low-bit family (2- and 3-bit K-quants by default) in their own family (its term on), or folded into
    the family it belongs to (LOW_BIT_PARENT)."""
    if on:
        return rows
    return [replace(row, family=LOW_BIT_PARENT[family]) if row.family == family else row for row in rows]


def merge_low_bits(rows: list, lowbit: bool = True, ilowbit: bool = True) -> list:
    """merge_low_bit for both low-bit families, by their terms' settings."""
    return merge_low_bit(merge_low_bit(rows, lowbit), ilowbit, I_LOW_BIT_FAMILY)


def unpack_ops_of(fit: "GenFit", family: str) -> float:
    """A family's fitted unpacking operations per weight, by the estimator's own rule for a family without rows
    (text_estimate.unpack_ops_per_weight: the K-quants' cost; F16/BF16 none)."""
    return text_estimate.unpack_ops_per_weight(family, fit.unpack_ops or {})


def fit_generation(rows: list[GenRow], layers: bool = True, families: bool = True, hbm: bool = True,
                   moe: bool = True, unpack: bool = True, lowbit: bool = True, intel: bool = True, kv: bool = True,
                   ilowbit: bool = True) -> GenFit:
    """Least squares on relative error, alternating per-class (1/e, c), per-family 1/q and unpacking ops, MoE factor,
    and the KV cache's extra read cost."""
    rows = merge_low_bits(rows, lowbit, ilowbit)
    # Each row's class, and which rows form a depth series, do not change while the constants move: found once
    # (the loop below runs up to ITERATIONS times over every row, thousands of times per cross-validation).
    class_of = {id(row): klass(row, hbm, intel) for row in rows}
    pairs = kv_pairs(rows) if kv else []
    inverse = {class_of[id(row)]: 1.5 for row in rows}
    fixed = {class_of[id(row)]: 0.0 for row in rows}
    ratio = {row.family: 1.0 for row in rows}
    ops = {row.family: 0.0 for row in rows}
    factor = 1.0
    kv_extra = 0.0
    # The loop reads each row's fields as a plain tuple: this fit runs thousands of times per scoring run, and
    # attribute and call overhead was most of its time. Every expression below is the term's formula in the
    # order it was first written (parts: bytes, fixed per layer, unpacking), so the fits are bit for bit the same.
    # (class, family, ideal_s, kv_s, weight_s, known_s, measured_s, layers, moe)
    fields = [(class_of[id(row)], row.family, row.ideal_s, row.kv_s, row.weight_s, row.known_s, row.measured_s,
               row.layers, row.moe) for row in rows]
    by_class = {key: [f for f in fields if f[0] == key] for key in inverse}
    by_family = {family: [f for f in fields if f[1] == family] for family in ratio}
    previous = None
    for _ in range(ITERATIONS):
        state = (*inverse.values(), *fixed.values(), *ratio.values(), *ops.values(), factor, kv_extra)
        if previous and all(abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12) for a, b in zip(state, previous)):
            break  # converged: no constant moved by a billionth
        previous = state
        for backend in inverse:
            mine = by_class[backend]
            u = [(ideal * ratio[fam] + kv_s * kv_extra) / m for _, fam, ideal, kv_s, _, _, m, _, _ in mine]
            v = [n * (factor if is_moe else 1.0) / m for _, _, _, _, _, _, m, n, is_moe in mine]
            y = [1 - (w * ops[fam] + known) / m for _, fam, _, _, w, known, m, _, _ in mine]
            inverse[backend], fixed[backend] = _two_term(u, v, layers, y)
        experts = [f for f in fields if f[8] and fixed[f[0]] > 0]
        if moe and layers and experts:
            u = [n * fixed[key] / m for key, _, _, _, _, _, m, n, _ in experts]
            y = [1 - (ideal * ratio[fam] + kv_s * kv_extra) * inverse[key] / m - (w * ops[fam] + known) / m
                 for key, fam, ideal, kv_s, w, known, m, _, _ in experts]
            suu = sum(map(mul, u, u))
            factor = max(1.0, sum(map(mul, u, y)) / suu) if suu else 1.0  # no row pays the term
        if kv:
            kv_extra = pairs_kv_extra(pairs, lambda row: 1 / inverse[class_of[id(row)]])
        if unpack:
            for family in ops:
                if family == "float":  # F16/BF16 weights need no unpacking
                    continue
                mine = [f for f in by_family[family] if f[4]]
                w = [weight / m for _, _, _, _, weight, _, m, _, _ in mine]
                y = [1 - (ideal * ratio[fam] + kv_s * kv_extra) * inverse[key] / m
                     - n * (factor if is_moe else 1.0) * fixed[key] / m - known / m
                     for key, fam, ideal, kv_s, _, known, m, n, is_moe in mine]
                sww = sum(map(mul, w, w))
                ops[family] = max(0.0, sum(map(mul, w, y)) / sww) if sww else 0.0
        if families:
            for family in ratio:
                if family == REFERENCE_FAMILY:
                    continue
                mine = by_family[family]
                u = [ideal * inverse[key] / m for key, _, ideal, _, _, _, m, _, _ in mine]
                y = [1 - kv_s * kv_extra * inverse[key] / m - n * (factor if is_moe else 1.0) * fixed[key] / m
                     - (w * ops[fam] + known) / m for key, fam, _, kv_s, w, known, m, n, is_moe in mine]
                suu = sum(map(mul, u, u))
                ratio[family] = max(0.2, sum(map(mul, u, y)) / suu) if suu else 1.0
    return GenFit(efficiency={b: 1 / a for b, a in inverse.items()},
                  family={f: 1 / r for f, r in ratio.items()},
                  layer_s=dict(fixed), moe_layer_factor=factor, unpack_ops=dict(ops), kv_extra=kv_extra)


def kv_pairs(rows: list[GenRow]) -> list[tuple]:
    """Each series of rows at several depths (one device, backend, source and model): (device, backend, label,
    shallowest row, deepest row), where the deeper row reads more cache; in a fixed order."""
    series: dict = {}
    for row in rows:
        series.setdefault((row.device, row.backend, row.source, row.label), []).append(row)
    found = []
    for (device, backend, _, label), mine in sorted(series.items()):
        mine = sorted(mine, key=lambda r: r.depth)
        shallow, deep = mine[0], mine[-1]
        if deep.depth == shallow.depth or deep.kv_s <= shallow.kv_s:
            continue
        found.append((device, backend, label, shallow, deep))
    return found


def kv_series(rows: list[GenRow], efficiency) -> list[tuple]:
    """What each series of rows at several depths says k is: (device, backend, model, shallowest depth, deepest
    depth, k). Between the shallowest and the deepest row of one device, source and model the weights and fixed
    costs are the same, so the extra time a token takes is the extra cache read alone:
    k = measured extra time / (extra cache bytes over the weights' effective bandwidth, ``efficiency(row)``) - 1
    (0: the cache reads as fast as the weights). Fitting k with the other constants on every row's relative error
    instead lets the devices' errors at depth 0 decide it (0.03 on the committed rows, against 0.1-0.9 from every
    series but one)."""
    return [(device, backend, label, shallow.depth, deep.depth, series_k(shallow, deep, efficiency))
            for device, backend, label, shallow, deep in kv_pairs(rows)]


def series_k(shallow: GenRow, deep: GenRow, efficiency) -> float:
    return (deep.measured_s - shallow.measured_s) / ((deep.kv_s - shallow.kv_s) / efficiency(deep)) - 1


def series_kv_extra(rows: list[GenRow], efficiency) -> float:
    """One k for every backend: the median over devices of each device's median series k (kv_series), so a device
    with many series (GB10's five models) counts once; 0 without a series, never below 0."""
    return pairs_kv_extra(kv_pairs(rows), efficiency)


def pairs_kv_extra(pairs: list[tuple], efficiency) -> float:
    """series_kv_extra over series already found (kv_pairs)."""
    by_device: dict = {}
    for device, _, _, shallow, deep in pairs:
        by_device.setdefault(device, []).append(series_k(shallow, deep, efficiency))
    if not by_device:
        return 0.0
    return max(0.0, statistics.median(statistics.median(values) for values in by_device.values()))


def _two_term(u: list[float], v: list[float], with_fixed: bool, y: list[float] | None = None) -> tuple[float, float]:
    """min sum (a u + c v - y)^2 (y defaults to 1) with c >= 0 (c = 0 when the fixed term is off)."""
    # Dot products as sum(map(mul, ...)): the same products added in the same order as a generator would, without a
    # generator frame per term (the fits call this about 1.7 million times a scoring run).
    y = y or [1.0] * len(u)
    suu = sum(map(mul, u, u))
    su = sum(map(mul, u, y))
    if with_fixed:
        suv = sum(map(mul, u, v))
        svv = sum(map(mul, v, v))
        sv = sum(map(mul, v, y))
        det = suu * svv - suv * suv
        if det > 1e-12 * suu * svv:
            a = (su * svv - sv * suv) / det
            c = (suu * sv - suv * su) / det
            if a < MIN_INVERSE_EFFICIENCY and svv:
                # No memory system delivers more than its peak: pin the efficiency at 100%, refit the fixed cost.
                a = MIN_INVERSE_EFFICIENCY
                c = max(0.0, (sv - a * suv) / svv)
                return a, c
            if a > 0 and c >= 0:
                return a, c
            if a <= 0 and svv:  # only the fixed cost explains the rows
                return max(MIN_INVERSE_EFFICIENCY, su / suu), 0.0
    return max(MIN_INVERSE_EFFICIENCY, su / suu) if suu else 1.0, 0.0


def predict_generation(row: GenRow, fit: GenFit) -> float:
    """Predicted tokens per second; backends or families the fit never saw get the pooled median / 1.0 (a quantised family
    the K-quants' unpacking cost, unpack_ops_of)."""
    key = next(key for key in (klass(row, True, True), klass(row, True), row.backend, "")
               if key in fit.efficiency or not key)
    efficiency = fit.efficiency.get(key) or statistics.median(fit.efficiency.values())
    family = fit.family.get(row.family, 1.0)
    fixed = fit.layer_s.get(key, 0.0) * (fit.moe_layer_factor if row.moe else 1.0)
    unpack = row.weight_s * unpack_ops_of(fit, row.family)
    return 1 / (row.ideal_s / (efficiency * family) + row.kv_s * fit.kv_extra / efficiency + row.layers * fixed + unpack
                + row.known_s)


def fit_prompt(rows: list[PromptRow], families: bool = True) -> PromptFit:
    backends = sorted({row.backend for row in rows})
    family = {row.family: 1.0 for row in rows}
    efficiency = {}
    for _ in range(ITERATIONS // 4):
        for backend in backends:
            efficiency[backend] = statistics.median(row.implied / family[row.family] for row in rows if row.backend == backend)
        if families:
            for name in family:
                if name != REFERENCE_FAMILY:
                    family[name] = statistics.median(row.implied / efficiency[row.backend] for row in rows if row.family == name)
    return PromptFit(efficiency=efficiency, family=family)


def error(predicted: float, measured: float) -> float:
    """Absolute relative error of a speed, in percent."""
    return abs(predicted - measured) / measured * 100


def cross_validate_generation(rows: list[GenRow], key: str, **terms) -> list[tuple[GenRow, float]]:
    """Each row with its error when its group (device or source) is left out of the fit."""
    rows = merge_low_bits(rows, terms.get("lowbit", True), terms.get("ilowbit", True))
    out = []
    for group in sorted({getattr(row, key) for row in rows}):
        train = [row for row in rows if getattr(row, key) != group]
        if not train:
            continue
        fit = fit_generation(train, **terms)
        out += [(row, error(predict_generation(row, fit), 1 / row.measured_s)) for row in rows if getattr(row, key) == group]
    return out


def median_of_group_medians(pairs) -> float:
    """The median of each group's median error, from (group, error) pairs: every device (or source) weighs the
    same, however many rows it has."""
    groups: dict = {}
    for key, value in pairs:
        groups.setdefault(key, []).append(value)
    return statistics.median(statistics.median(values) for values in groups.values())


def percentile(values: list[float], share: float) -> float:
    """The value below which `share` of the values lie (nearest rank, no interpolation)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def band_coverage(errors: list[tuple[object, float]], group: str, share: float = 0.8, min_devices: int = 0,
                  floor: float = 0.0, families: bool = False, intel: bool = False) -> list[tuple[object, float, bool]]:
    """Per row: the band of its class fitted without its own device, and whether its error falls inside.

    The band of a class (the row's backend) is the `share` percentile of the held-out
    errors of every other device of that class, so a row never sets its own band. A class
    left with fewer than `min_devices` devices gets at least the pooled band of every other
    row and at least `floor` (percent), as the committed bands do. With `families`, the band is
    then widened by the row's quant family's factor (family_band_factor) over the other devices. With
    `intel`, an Intel GPU under Vulkan is its own class (klass).
    """
    out = []
    for row, err in errors:
        key = klass(row, False, intel)
        others = [(r, e) for r, e in errors if getattr(r, group) != getattr(row, group)]
        mine = [e for r, e in others if klass(r, False, intel) == key]
        pooled = percentile([e for _, e in others], share)
        band = percentile(mine, share) if mine else pooled
        if len({getattr(r, group) for r, _ in others if klass(r, False, intel) == key}) < min_devices:
            band = max(band, pooled, floor)
        if families:
            band *= family_band_factor(others, row.family, share, min_devices)
        out.append((row, band, err <= band))
    return out


def family_band_factor(errors: list[tuple[object, float]], family: str, share: float = 0.8, min_devices: int = 0) -> float:
    """How much wider a quant family's errors run than all rows': the family's `share` percentile over the
    pooled one, where above 1 and the family has rows on at least `min_devices` devices; else 1."""
    mine = [e for r, e in errors if r.family == family]
    if not mine or len({r.device for r, e in errors if r.family == family}) < min_devices:
        return 1.0
    return max(1.0, percentile(mine, share) / percentile([e for _, e in errors], share))
