"""The NPU as a place to run: Whisper's encoder and embedding models through OpenVINO on an
Intel NPU, offered next to the verdict's own placement with a speed, basis and band, and
what is missing (driver, runtime) when it cannot run here yet."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpuready.hardware import Backend
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.report import build_report, report_json, schema_text
from gpuready.tasks import npu as npu_module
from gpuready.tasks.registry import judge_model, load_catalog
from gpuready.tasks.verdict import Options

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
CATALOG = load_catalog()


def machine(name: str):
    hardware, _ = probe_hardware(ReplayHost(FIXTURES / name))
    return hardware


def test_whispers_encoder_on_a_meteor_lake_npu_is_offered_with_its_own_speed():
    hardware = machine("linux-meteor-lake-npu")
    verdict = judge_model(CATALOG.get("whisper-large-v3"), CATALOG, hardware, Options())
    offer = verdict.npu
    # Encoder: 2 x 12 x 1280^2 x 32 layers x 1,500 frames on 11 TOPS x 5.7%
    encoder = 2 * 12 * 1280**2 * 32 * 1500 / (11e12 * npu_module.NPU_EFFICIENCY)
    decoder = 30 / verdict.speed - dict(verdict.estimate.details)["encoder_seconds_per_window"]
    assert offer.speed == pytest.approx(30 / (encoder + decoder))
    assert (offer.npu, offer.speed_unit, offer.uncertainty, verdict.placement) == (
        "Intel AI Boost NPU (Meteor Lake)", "x realtime", 0.6, "cpu")
    assert offer.speed > verdict.speed  # the NPU takes the encoder off the CPU


def test_without_openvino_the_offer_says_what_is_missing_and_with_it_the_npu_is_available():
    hardware = machine("linux-meteor-lake-npu")
    model = CATALOG.get("bge-m3")
    offer = judge_model(model, CATALOG, hardware, Options()).npu
    assert (offer.available, offer.missing) == (
        False, ("the OpenVINO runtime was not seen (pip install openvino; `gpuready report --torch` looks for it)",))
    with_openvino = dataclasses.replace(hardware, backends=hardware.backends + (
        Backend("openvino", True, version="2025.3", detail="devices: CPU, GPU, NPU", source="python"),))
    offer = judge_model(model, CATALOG, with_openvino, Options()).npu
    assert (offer.available, offer.missing, offer.speed_unit) == (True, (), "chunks/s")


def test_no_npu_no_offer_and_text_to_speech_gets_none():
    assert judge_model(CATALOG.get("whisper-large-v3"), CATALOG, machine("nvidia-rtx4090"), Options()).npu is None
    assert judge_model(CATALOG.get("piper-medium"), CATALOG, machine("linux-meteor-lake-npu"), Options()).npu is None
    assert judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, machine("linux-meteor-lake-npu"), Options()).npu is None


def test_a_report_with_npu_offers_validates_against_the_schema():
    import jsonschema

    data = json.loads(json.dumps(report_json(build_report(machine("linux-meteor-lake-npu"), [], CATALOG, Options()))))
    jsonschema.validate(data, json.loads(schema_text()))
    assert {v["task"] for v in data["verdicts"] if v["npu"]} == {"speech", "document-search"}


def test_a_reranker_on_the_npu_names_openvinos_rerank_pipeline_and_an_embedding_model_its_embedding_one():
    # Rerankers were named OpenVINO GenAI's TextEmbeddingPipeline, which runs embedding models only.
    hardware = machine("linux-meteor-lake-npu")
    runtimes = {model_id: judge_model(CATALOG.get(model_id), CATALOG, hardware, Options()).npu.runtime
                for model_id in ("bge-reranker-v2-m3", "ms-marco-minilm-l-6-v2", "bge-base-en-v1.5")}
    assert runtimes == {"bge-reranker-v2-m3": npu_module.RERANKER_RUNTIME, "ms-marco-minilm-l-6-v2": npu_module.RERANKER_RUNTIME,
                        "bge-base-en-v1.5": "OpenVINO (optimum-intel or OpenVINO GenAI TextEmbeddingPipeline)"}
    assert "TextRerankPipeline" in npu_module.RERANKER_RUNTIME
