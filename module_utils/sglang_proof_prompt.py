"""The long prompt: its text (a needle number stated once at the start, or the fox question) and its size, built
to a token count as the server itself counts tokens."""

from __future__ import annotations

import random

from ansible.module_utils.sglang_proof_failures import HTTPFailure, SmokeFailure

FOX_FILLER = "The quick brown fox jumps over the lazy dog. "
FOX_QUESTION = "In one word, what animal is mentioned?"
# A completion prompt (no chat template): the last line ends where the answer starts, so a base or
# instruct model continues with the number. The double answers from the line that states it.
NEEDLE_HEAD = "The secret number is %d. Remember it: you will be asked for it at the end.\n"
NEEDLE_TAIL = ("\nQuestion: what is the secret number stated at the very beginning of this text? "
               "Answer: the secret number is")


def make_prompt_parts(question, filler):
    """(head, filler, tail, needle): the needle is new on every call, so no server can know it."""
    if question == "needle":
        needle = random.SystemRandom().randint(1_000_000, 9_999_999)
        return NEEDLE_HEAD % needle, filler, NEEDLE_TAIL, needle
    return "", filler, "\n" + FOX_QUESTION, None


class PromptSizer:
    """Sizes head + filler * k + tail to a token count as the server counts it.

    The count is linear in k for a repeated filler (tokenizers see the same pieces each time), so two
    short measurements give the slope and intercept; /tokenize, where the server has it, then checks
    and corrects the long prompt itself (a few cheap calls). Without /tokenize, each measurement is a
    1-token completion and the long request's own usage is the final word.
    """

    def __init__(self, client, model, head, filler, tail):
        self.client, self.model, self.head, self.filler, self.tail = client, model, head, filler, tail
        self.has_tokenize = True
        self.slope = self.intercept = None

    def text(self, repeats):
        return self.head + self.filler * repeats + self.tail

    def count(self, repeats):
        prompt = self.text(repeats)
        if self.has_tokenize:
            try:
                return int(self.client.json("POST", "/tokenize", {"model": self.model, "prompt": prompt})["count"])
            except HTTPFailure as error:
                if error.status not in (404, 405):
                    raise
                self.has_tokenize = False
            except (KeyError, TypeError, ValueError):
                self.has_tokenize = False
        response = self.client.json("POST", "/v1/completions",
                                    {"model": self.model, "prompt": prompt, "max_tokens": 1, "temperature": 0})
        return int(response["usage"]["prompt_tokens"])

    def size(self, target):
        """(prompt, its token count: the server's where /tokenize exists, else the linear estimate)."""
        small, large = 8, 64
        base_small, base_large = self.count(small), self.count(large)
        self.slope = (base_large - base_small) / float(large - small)
        if self.slope <= 0:
            raise SmokeFailure("The server counts the same tokens for %d and %d fillers; cannot size a prompt."
                               % (small, large))
        self.intercept = base_small - self.slope * small
        repeats = max(1, int(round((target - self.intercept) / self.slope)))
        counted = int(round(self.intercept + self.slope * repeats))
        if self.has_tokenize:
            for _attempt in range(4):
                counted = self.count(repeats)
                if abs(counted - target) <= max(1, target * 0.002):
                    break
                repeats = max(1, repeats + int(round((target - counted) / self.slope)))
        return self.text(repeats), counted
