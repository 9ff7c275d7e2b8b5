"""Estimators and judges for the tasks other than text generation.

One module per task: ``image`` (diffusion models: seconds per image), ``speech``
(speech-to-text and text-to-speech: real-time factor), ``search`` (embedding models and
rerankers: chunks per second, and the memory of the document index). Each module holds
the task's catalogue entry dataclass and parser, its pure estimate, and ``judge_model``
returning the same :class:`gpuready.verdict.Verdict` text generation uses.
"""

from __future__ import annotations


def parsers() -> dict:
    """Catalogue parsers of the tasks here, keyed by task name."""
    from gpuready.tasks import image, search, speech

    return {"image-generation": image.parse_image_model, "speech": speech.parse_speech_model,
            "document-search": search.parse_search_model}


def judge_task(model, catalog, hardware, options):
    """The verdict for one model of these tasks, by the model's task."""
    from gpuready.tasks import image, search, speech

    modules = {"image-generation": image, "speech": speech, "document-search": search}
    return modules[model.task].judge_model(model, catalog, hardware, options)
