"""The language-model side of the llm generator: prompts, answers, backends and models.

- :mod:`sgcc.llm.prompt` -- the papers' prompt per function unit, answer parsing, and the
  refinement feedback built from what the engine found out about the last attempt;
- :mod:`sgcc.llm.backends` -- where answers come from: a local GGUF model through
  llama-cpp-python, an OpenAI-compatible chat endpoint (standard library HTTP), or scripted
  answers for tests;
- :mod:`sgcc.llm.models` -- finding GGUF models (``--model``, configuration, ``models/``,
  the user model directory, the packaged tiny model) and reading their headers.

Nothing here is imported on the compile path; llama-cpp-python itself is imported only when
a local model is loaded.
"""
