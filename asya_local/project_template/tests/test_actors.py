"""Each handler alone: plain function calls, milliseconds each."""

from __future__ import annotations

import pytest
from text import count_words, normalize


def test_normalize_keeps_the_words_in_lower_case() -> None:
    assert normalize({"text": "Hello, hello World!"})["words"] == ["hello", "hello", "world"]


def test_a_text_without_words_is_refused() -> None:
    with pytest.raises(ValueError, match="no words"):
        normalize({"text": "42 !"})


def test_count_words_puts_the_most_frequent_first() -> None:
    counted = count_words({"text": "b a b", "words": ["b", "a", "b"]})
    assert counted["total"] == 3
    assert list(counted["counts"].items()) == [("b", 2), ("a", 1)]
