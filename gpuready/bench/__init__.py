"""`gpuready bench`: measure this machine instead of trusting a table.

measure.py times numpy kernels (memory read/copy, FP32 matmul); torch_worker.py runs in a
child interpreter and times each GPU; llama.py runs and parses llama-bench; stats.py is pure
statistics over timings; results.py the measured values; cache.py keeps them per machine;
apply.py puts them into a Hardware value (and the verdicts) before a report is built.
"""
