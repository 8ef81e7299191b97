"""A TEST DOUBLE of SGLang, not SGLang.

It starts like SGLang (`python -m sglang.launch_server <the real flags>`), sizes a KV pool with
the formula of the release it impersonates (0.5.23 by default, 0.5.9 when the simulated GPU says
so) from its launch flags (parsed with that release's own flag table), the model's config.json and
a *simulated* GPU, prints
SGLang's startup log lines, and serves SGLang's HTTP API shapes with a tokenizer of its own and a
trivial "model" that names the last animal in the prompt. Nothing here touches a GPU. Launched on several
nodes (--nnodes, --node-rank, --dist-init-addr), the processes meet over TCP as SGLang's ranks do; node 0 serves
the API, the others SGLang's dummy health endpoints: sglang/_double_nodes.py.

The simulated GPU comes from the JSON file named by SGLANG_DOUBLE_GPU (only molecule, the demo and
the tests set it; each node reads its own); see sglang/_double_gpu.py. Shapes and texts follow SGLang 0.4.6 ("old") and
0.5.9+ ("new"): ../../shared/reference/sglang-memory.md sections 6 and 7.
"""

__version__ = "0.5.23+double"
