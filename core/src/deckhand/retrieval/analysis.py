"""Text analysis for keyword search: lower case, a ``str.translate`` word split (2-3x a regex's speed), English
stopwords, Snowball stemming, and the words identifiers add (issue 47: an identifier's whole and its parts)."""

from __future__ import annotations

import re
import sys

import Stemmer

#: English stopwords (the common IR list: articles, pronouns, auxiliaries, prepositions).
_STOPWORDS_TEXT = """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don shall may might must also"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORDS_TEXT.split())


def _separator_table() -> dict[int, str]:
    table = {i: " " for i in range(0x10000) if not chr(i).isalnum() and chr(i) != "."}
    table[ord("_")] = " "
    return table


_SEPARATORS = _separator_table()


def words(text: str) -> list[str]:
    """Raw lower-case words of ``text`` (dots kept inside words; see :meth:`Analyzer.term`)."""
    return text.lower().translate(_SEPARATORS).split()


#: Characters that join the parts of a compound identifier (a dot only joins: the split keeps dotted words).
CONNECTORS = "._-/@:+"
#: A compound identifier (``parse_args``, ``ERR-4521``, a UUID, an address), or a ticket number (``#1234``). Both
#: start only where a run of letters and digits starts: without the look-behind they were quadratic (6 s on 20 kB).
COMPOUND = re.compile(r"#\d+(?![^\W_])|(?<![^\W_])[^\W_]+(?:[._\-/@:+]+[^\W_]+)+")
#: A word with a case change inside: ``getValue``, ``ParseArgs``, ``HTTPTransport``.
CAMEL = re.compile(r"(?<![^\W_])[^\W_]*(?:[a-z0-9][A-Z]|[A-Z]{2}[a-z])[^\W_]*")
#: The parts of a CamelCase word: ``HTTPTransport`` → ``HTTP``, ``Transport``.
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_words(text: str) -> list[str]:
    """The lower-case words identifiers in ``text`` add to :func:`words`' split: each compound's whole, the parts
    of dotted and CamelCase names (only tokens that can hold one reach a regular expression)."""
    out: list[str] = []
    for token in text.split():
        if not token.isalnum():
            token = token.strip(AROUND)
            if not token.isalnum():
                if token:
                    _compounds(token, out)
                    _camel(token, out)
                continue
        if token.islower() or token.isupper() or token.isdigit() or (token[0].isupper() and token[1:].islower()):
            continue
        if not _PLURAL_ACRONYM.fullmatch(token):
            _camel(token, out)
    return out


def identifier_wholes(text: str) -> list[str]:
    """The compounds :func:`identifier_words` adds whole (``err-4521``, ``#1234``, a URL), not the parts."""
    return [w for w in identifier_words(text) if compound_whole(w) is not None]


#: Punctuation around a token that is not part of an identifier (a ``#`` before digits is).
AROUND = ".,;:!?()[]{}<>\"'`*“”‘’"
#: A plural acronym (``URLs``): a word, not a CamelCase name.
_PLURAL_ACRONYM = re.compile(r"[A-Z]{2,}s")


def _compounds(token: str, out: list[str]) -> None:
    """The compounds in ``token`` (no whitespace in it): each one's whole and the parts of its dotted words."""
    for match in COMPOUND.finditer(token):
        whole = match.group(0).lower()
        if whole.startswith("#") or not _only_dots(whole):
            out.append(whole)
        for word in whole.translate(_SEPARATORS).split():
            word = word.strip(".")
            if "." in word and not word.replace(".", "").isdigit():
                out.extend(word.split("."))


def _camel(token: str, out: list[str]) -> None:
    """The parts of the CamelCase words in ``token``."""
    for match in CAMEL.finditer(token):
        if _PLURAL_ACRONYM.fullmatch(match.group(0)):
            continue
        parts = _CAMEL_PART.findall(match.group(0))
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)


def _only_dots(whole: str) -> bool:
    """Whether a compound's connectors are all dots (the split keeps it whole already)."""
    return all(c not in whole for c in CONNECTORS if c != ".")


def compound_whole(word: str) -> str | None:
    """``word`` lower-cased when :func:`identifier_words` adds it whole (``err-4521``, ``#1234``), else None."""
    word = word.strip().lower()
    if not COMPOUND.fullmatch(word) or not (word.startswith("#") or not _only_dots(word)):
        return None
    return word


class Analyzer:
    """Turns text into index terms; the same analyzer must serve documents and queries."""

    def __init__(self, *, stem: bool = True, stopwords: frozenset[str] = STOPWORDS, language: str = "english") -> None:
        self.stopwords = stopwords
        self.stem = stem
        self._stemmer = Stemmer.Stemmer(language) if stem else None

    def term(self, word: str) -> str | None:
        """The index term of one raw word from :func:`words`, or None (stopword, punctuation)."""
        word = word.strip(".")
        if not word or word in self.stopwords:
            return None
        if self._stemmer is None or not word.isalpha():
            return sys.intern(word)
        return sys.intern(self._stemmer.stemWord(word))

    def query_terms(self, text: str) -> list[str]:
        """Index terms a query for ``text`` looks up: its words' terms and each identifier's whole, not the parts
        (they are among its words already, or would count an identifier twice)."""
        return [t for t in map(self.term, words(text) + identifier_wholes(text)) if t is not None]

    def terms(self, text: str) -> list[str]:
        """Index terms of ``text`` (stopwords dropped, words stemmed), then the words its identifiers add."""
        return [t for t in map(self.term, words(text) + identifier_words(text)) if t is not None]
