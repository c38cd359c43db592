"""Prompt formatting with the target's own chat template (the same for every strategy)."""

from __future__ import annotations

from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from phase.base.errors import PhaseError, UsageProblem
from phase.decode.native import NativeModel
from phase.decode.vocab_file import VocabFile


def format_prompt(model: NativeModel | VocabFile, user_text: str, *,
                  chat_template: bool = True) -> list[int]:
    """Token ids for one user turn, ready for generation.

    With `chat_template`, the GGUF's Jinja template is rendered the way Hugging Face does it
    (llama-cpp-python's formatter) with the generation prompt appended; otherwise the text is
    tokenized as given. Either way the model gets exactly one BOS when it wants one: some
    templates write the BOS text themselves, others leave it to the tokenizer.
    """
    if not chat_template:
        tokens = model.tokenize(user_text, add_special=True, parse_special=True)
    else:
        template = model.chat_template()
        if not template:
            raise PhaseError(
                f"{model.path}: the model has no chat template; send the prompt as is (--raw)"
            )
        formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=model.eos_text,
            bos_token=model.bos_text,
            add_generation_prompt=True,
        )
        try:
            text = formatter(messages=[{"role": "user", "content": user_text}]).prompt
        except Exception as exc:  # jinja raises many types; the template is the model's
            raise PhaseError(f"{model.path}: its chat template failed to render: {exc}") from None
        tokens = model.tokenize(text, add_special=False, parse_special=True)
        info = model.vocab_info()
        if info.add_bos and info.bos >= 0 and (not tokens or tokens[0] != info.bos):
            tokens.insert(0, info.bos)
    if not tokens:
        raise UsageProblem("the prompt is empty: it produced no tokens")
    return tokens
