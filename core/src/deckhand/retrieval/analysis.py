"""Text analysis for keyword search: lowercase, unicode word split, English stopwords, stemming.

The SciFact reference BM25 (0.676 nDCG@10) uses this recipe: an English Snowball stemmer
(PyStemmer, a small C extension) and an English stopword list. Splitting is done with
``str.translate`` + ``str.split`` (C speed; a regex was 2-3× slower on this workload):
every character that is not a letter, a digit or a dot becomes a space, then leading and
trailing dots are stripped, so a sentence's last word loses its full stop while dotted
numbers such as ``4.2`` stay one term and section numbers remain searchable.

Identifiers (issue 47) are understood on top of that split: :func:`identifier_words` gives the words an
identifier adds to it, so that a query for the whole identifier and for its parts both match. A compound joined
by ``_ - / @ : +`` (``parse_args``, ``ERR-4521``, a UUID, an e-mail address, a URL) adds itself whole (the split
gives its parts); a ticket number ``#1234`` adds itself with its ``#``; a dotted name with a letter in it
(``a.b.c``, ``bob.smith``) adds its parts (the split keeps it whole; dotted numbers such as ``4.2`` and
``1.4.2`` stay whole only); a CamelCase or camelCase word adds its parts (``HTTPTransport``: ``http``,
``transport``). Hex numbers (``0x1f``) and words mixing letters and digits are one word already. The builtin
BM25, tantivy (its ``ident`` field) and the exact modality all use these same words. A document is indexed with
all of them; a query looks up its words and each identifier's whole (:meth:`Analyzer.query_terms`), which is
what the parts of the document's identifiers are matched by anyway: a part asked for is one of the query's words.
"""

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
#: A compound identifier: letters and digits joined by connectors (``parse_args``, ``ERR-4521``, a UUID,
#: ``bob@example.com``, ``https://example.com/a``), or a ticket number (``#1234``). Both patterns start only where
#: a run of letters and digits starts (the look-behind): the same matches, but a search tried again inside a long
#: run that cannot match made them quadratic (a 20,000-letter token ending in ``-`` took 6 s).
COMPOUND = re.compile(r"#\d+(?![^\W_])|(?<![^\W_])[^\W_]+(?:[._\-/@:+]+[^\W_]+)+")
#: A word with a case change inside: ``getValue``, ``ParseArgs``, ``HTTPTransport``.
CAMEL = re.compile(r"(?<![^\W_])[^\W_]*(?:[a-z0-9][A-Z]|[A-Z]{2}[a-z])[^\W_]*")
#: The parts of a CamelCase word: ``HTTPTransport`` → ``HTTP``, ``Transport``.
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_words(text: str) -> list[str]:
    """The raw lower-case words identifiers in ``text`` add to :func:`words`' split (see the module's text):
    each compound's whole, the parts of dotted names, the parts of CamelCase words.

    Only the whitespace-separated tokens that can hold an identifier reach a regular expression: one that is
    letters and digits in one case (or capitalised) cannot, nor can a plural acronym (``URLs``)."""
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
    """``word`` lower-cased when it is one compound identifier that :func:`identifier_words` adds whole
    (``err-4521``, ``#1234``, a UUID, an address), else None (a plain word, a dotted name, a phrase)."""
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
        """Index terms a query for ``text`` looks up: its words' terms, and each identifier's whole (``err-4521``);
        not the parts an identifier adds to a document (they are among its words already, or they would count an
        identifier two and three times over the other words of a question)."""
        return [t for t in map(self.term, words(text) + identifier_wholes(text)) if t is not None]

    def terms(self, text: str) -> list[str]:
        """Index terms of ``text`` (stopwords dropped, words stemmed): its words in order, then the words its
        identifiers add (:func:`identifier_words`)."""
        return [t for t in map(self.term, words(text) + identifier_words(text)) if t is not None]
