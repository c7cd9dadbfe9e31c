"""The symptom vocabulary: what a user says when a kernel fails -> the mechanisms its fix names.

A question in a user's words ("crashes with an illegal memory access once slot ids exceed about
4096") often shares no word with the commit that fixed it ("widen pool indices to Int64 to
prevent int32 element-offset overflow"). symptoms.yaml, beside this module, maps symptoms to
mechanisms as data; search adds the mechanisms as a low-weight query expansion, the way an
alias row's `related` terms expand. Sizes the question gives (past 4096, 2^31) read as the
large-size symptom: that is where 32-bit offsets and fixed-size buffers run out.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kloop.errors import BadInput
from kloop.wiki.aliases import TokenMatcher, tokens_of
from kloop.wiki.yamlcache import YamlError, load_yaml, parse_yaml


class SymptomRow(BaseModel):
    """One family of failures: how users describe it and what the fixing commits say."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validators built only when the YAML is read

    canonical: str = Field(..., description="The row's name.")
    why: str = Field(..., min_length=1, description="Why these symptoms point to these mechanisms.")
    symptoms: list[str] = Field(..., min_length=1, description="What a user says.")
    mechanisms: list[str] = Field(..., min_length=1, description="What fix commits say: query expansions only.")


class NumberRule(BaseModel):
    """Which sizes in a question read as a row's symptom."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validators built only when the YAML is read

    row: str = Field(..., description="The row a large size fires.")
    min: int = Field(..., ge=1, description="Smallest size, after a comparison word, that counts.")
    min_power: int = Field(..., ge=1, description="Smallest N of a 2^N / 2**N that counts.")
    after: list[str] = Field(..., min_length=1, description="Comparison words a size must follow.")


class SymptomFile(BaseModel):
    """The whole symptom file."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validators built only when the YAML is read

    numbers: NumberRule | None = None
    fix_words: list[str] = Field(default_factory=list, description="How fix commits say they fix something.")
    rows: list[SymptomRow] = Field(..., min_length=1)


_POWER = re.compile(r"(?<![\w.])2\s*(?:\^|\*\*)\s*\(?\s*(\d{1,3})")
# a size: digits (1,000 / 100_000 / 2.5), an optional multiplier (64k, 1M, 2 billion), or a small number in words
_SIZE = re.compile(
    r"(?<![\w.])(\d[\d,_]*(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|hundreds of)"
    r"\s*(k|m|g|b|thousand|million|billion|thousands|millions|billions)?(?![\w])",
    re.I,
)
_WORD_VALUES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "a few": 3, "several": 3, "hundreds of": 100}
_MULTIPLIERS = {"k": 1e3, "thousand": 1e3, "thousands": 1e3, "m": 1e6, "million": 1e6, "millions": 1e6,
                "g": 1e9, "b": 1e9, "billion": 1e9, "billions": 1e9}
# how many words may sit between the comparison word and the size ("exceed about 4096", "over 65536 tokens")
_GAP = 2


def size_value(number: str, multiplier: str | None) -> float | None:
    """The value a size spells ('4096', '64k', 'four thousand', '2.5 billion'), None for a bare word."""
    text = number.lower()
    if text in _WORD_VALUES:
        if not multiplier:
            return None  # "two" alone is no size
        value = float(_WORD_VALUES[text])
    else:
        try:
            value = float(text.replace(",", "").replace("_", ""))
        except ValueError:
            return None
    return value * _MULTIPLIERS.get((multiplier or "").lower(), 1.0)


class SymptomTable:
    """The compiled vocabulary: `expansions(text)` gives the mechanisms of each symptom the text names."""

    def __init__(self, spec: SymptomFile) -> None:
        self.rows = spec.rows
        self.numbers = spec.numbers
        self.fix_words = spec.fix_words
        self._matcher = TokenMatcher([(s, i) for i, r in enumerate(self.rows) for s in r.symptoms])
        # a mechanism many rows share ("overflow", "mask") counts for each of them
        spelled: dict[str, set[int]] = {}
        for i, r in enumerate(self.rows):
            for m in r.mechanisms:
                spelled.setdefault(" ".join(tokens_of(m)), set()).add(i)
        self._mechanism_rows = [frozenset(rows) for rows in spelled.values()]
        self._mechanisms = TokenMatcher([(m, k) for k, m in enumerate(spelled)])
        self._number_row = next((i for i, r in enumerate(self.rows) if spec.numbers and r.canonical == spec.numbers.row), None)
        self._after = [tokens_of(a) for a in spec.numbers.after] if spec.numbers else []

    def spans(self, tokens: list[str]) -> list[tuple[int, int, list[str]]]:
        """(first, end, mechanisms) per symptom span of these tokens: the span's concept, as a fix spells it."""
        return [(a, b, self.rows[row].mechanisms) for a, b, row in self._matcher.scan(tokens)]

    def size_mechanisms(self, text: str, tokens: list[str]) -> list[str]:
        """The large-size row's mechanisms when only a number says it (no spelled symptom of that row)."""
        row = self._number_row
        if row is None or any(r == row for _, _, r in self._matcher.scan(tokens)) or not self.large_size(text):
            return []
        return self.rows[row].mechanisms

    def fired(self, text: str) -> list[int]:
        """Rows the text names, in order of first mention: symptom spellings, then a large size."""
        rows = [row for _, _, row in self._matcher.scan(tokens_of(text))]
        if self._number_row is not None and self.large_size(text):
            rows.append(self._number_row)
        return list(dict.fromkeys(rows))

    def named_by(self, tokens: list[str], rows: list[int]) -> tuple[float, float]:
        """Shares of these rows (a question's symptoms) that the tokens (a fix's title) name by a symptom
        spelling ("hangs", "NaN") and by a mechanism ("int32 overflow", "deadlock"): a fix's title names what
        it fixes in the user's terms more often than it repeats the user's other words."""
        if not rows:
            return 0.0, 0.0
        symptoms, mechanisms = self._title_rows(tuple(tokens))
        return len(symptoms.intersection(rows)) / len(rows), len(mechanisms.intersection(rows)) / len(rows)

    @lru_cache(maxsize=65536)  # noqa: B019 - one table per process; the same titles are read search after search
    def _title_rows(self, tokens: tuple[str, ...]) -> tuple[frozenset[int], frozenset[int]]:
        """The rows these tokens name by a symptom spelling, and by a mechanism."""
        symptoms = frozenset(row for _, _, row in self._matcher.scan(list(tokens)))
        mechanisms = frozenset(row for _, _, k in self._mechanisms.scan(list(tokens)) for row in self._mechanism_rows[k])
        return symptoms, mechanisms

    def expansions(self, text: str) -> list[str]:
        """The mechanisms of every row the text fires, each once, in row order of mention."""
        return list(dict.fromkeys(m for row in self.fired(text) for m in self.rows[row].mechanisms))

    def large_size(self, text: str) -> bool:
        """Whether the text gives a size past the rule: 2^N with N >= min_power, or a comparison word
        ('exceeds', 'over', 'more than', '>') followed within two words by a size >= min."""
        rule = self.numbers
        if rule is None:
            return False
        if any(int(n) >= rule.min_power for n in _POWER.findall(text)):
            return True
        for match in _SIZE.finditer(text):
            value = size_value(match.group(1), match.group(2))
            if value is None or value < rule.min:
                continue
            before = text[: match.start()]
            if before.rstrip().endswith((">", ">=", "≥")):
                return True
            words = tokens_of(before)[-(_GAP + 3):]
            for phrase in self._after:
                for start in range(len(words) - len(phrase) + 1):
                    if words[start : start + len(phrase)] == phrase and len(words) - start - len(phrase) <= _GAP:
                        return True
        return False


def load_symptom_table(text: str, where: str, *, cached: bool = False) -> SymptomTable:
    """Parse and validate a symptom file; BadInput names `where` on any problem. `cached`: the parse is read
    back from kloop's YAML cache when it holds this text (a search then imports no YAML parser)."""
    try:
        raw = load_yaml(text, "symptoms") if cached else parse_yaml(text)
        spec = SymptomFile.model_validate(raw)
    except YamlError as exc:
        raise BadInput(where, f"not valid YAML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInput(where, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    names = [r.canonical for r in spec.rows]
    if spec.numbers and spec.numbers.row not in names:
        raise BadInput(where, f"numbers.row {spec.numbers.row!r} names no row")
    return SymptomTable(spec)


@lru_cache(maxsize=1)
def default_symptom_table() -> SymptomTable:
    """kloop's shipped symptom vocabulary."""
    ref = resources.files("kloop.wiki").joinpath("symptoms.yaml")
    return load_symptom_table(ref.read_text(encoding="utf-8"), "kloop/wiki/symptoms.yaml", cached=True)
