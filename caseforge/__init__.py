"""caseforge: trustworthy legal NLP benchmarks from court sources.

Importing it keeps third-party libraries from drawing progress bars of their own (transformers' "Loading
weights", huggingface_hub's, sentence-transformers' through them) into a command's or a nightly's output:
caseforge.progress says how far long work is. huggingface_hub reads the setting when first imported, and
transformers asks it; where one was imported before caseforge, its bars are switched off here instead.
"""
import os
import sys

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
if "huggingface_hub" in sys.modules:
    sys.modules["huggingface_hub"].utils.disable_progress_bars()
if "transformers.utils.logging" in sys.modules:
    sys.modules["transformers.utils.logging"].disable_progress_bar()
