"""Inline markup (MyST and Sphinx roles, RST and Markdown literals, emphasis and links) rendered to the text a reader
sees, for definitions shown beside a result; every pattern is linear-time."""

from __future__ import annotations

import re

#: ``{role}`text``` (MyST) and ``:role:`text``` / ``:domain:role:`text``` (Sphinx, RST).
_ROLE = re.compile(r"(?:\{[\w.:+-]{1,40}\}|(?<![\w`]):(?:[\w+-]{1,20}:){1,2})`([^`\n]{1,300})`")
#: ``title <target>`` inside a role or an RST link: the title is what is shown.
_TITLED = re.compile(r"^(.*?\S)\s*<[^<>\n]{1,300}>$")
#: RST ``literal``.
_LITERAL = re.compile(r"``([^`\n]{1,300})``")
#: RST links: ```text <url>`_``, ```text`_``, ```text`__``.
_RST_LINK = re.compile(r"`([^`\n]{1,300})`__?(?!\w)")
#: Markdown links and images: ``[text](url)``, ``![alt](url)``.
_MD_LINK = re.compile(r"!?\[([^\[\]\n]{1,300})\]\([^()\s]{0,500}(?:\s+\"[^\"\n]{0,200}\")?\)")
#: Markdown reference links: ``[text][ref]``.
_MD_REF_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\[[^\[\]\n]{0,100}\]")
#: Inline code (Markdown) and RST interpreted text: ```x```.
_CODE = re.compile(r"`([^`\n]{1,300})`")
#: ``**strong**`` then ``*emphasis*`` (the marker hugs the text, as in both syntaxes).
_STRONG = re.compile(r"(?<![\w*])\*\*(?=\S)([^*\n]{1,300}?)(?<=\S)\*\*(?![\w*])")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]{1,300}?)(?<=\S)\*(?![\w*])")
#: A ``**`` or ````` left without its pair (a definition cut after its first sentence ends inside bold text).
_STRAY = re.compile(r"\*\*(?=\S)|(?<=\S)\*\*|``")
_SPACES = re.compile(r"[ \t]+")


def _role_text(match: re.Match[str]) -> str:
    """What a role shows: its title when it has one, else its target (``~a.b.C`` shows ``C``)."""
    text = match.group(1).strip()
    titled = _TITLED.match(text)
    if titled:
        return titled.group(1)
    text = text.lstrip("!")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    return text


def _link_text(match: re.Match[str]) -> str:
    text = match.group(1).strip()
    titled = _TITLED.match(text)
    return titled.group(1) if titled else text


def plain_text(text: str) -> str:
    """``text`` with its inline MyST, Sphinx, reStructuredText and Markdown markup rendered as plain text."""
    text = _ROLE.sub(_role_text, text)
    text = _LITERAL.sub(r"\1", text)
    text = _RST_LINK.sub(_link_text, text)
    text = _MD_LINK.sub(r"\1", text)
    text = _MD_REF_LINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _STRONG.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _STRAY.sub("", text)
    return _SPACES.sub(" ", text).strip()


#: A definition that is only a pointer: ``See field.``, ``See also: field``, ``Same as field.``, ``Alias of x``.
_REDIRECT = re.compile(
    r"^(?:see(?:\s+also)?|same\s+as|synonym\s+(?:for|of)|alias\s+(?:for|of)|another\s+name\s+for)\s*:?\s+"
    r"(?:the\s+)?[\"“'‘]?([^\s.;:,\"“”'‘’][^.;:\"“”'‘’\n]{0,80}?)[\"”'’]?\s*\.?$",
    re.IGNORECASE,
)


def redirect_target(definition: str) -> str | None:
    """The term a definition only points to (``See field.`` → ``field``), or None when it says something itself."""
    found = _REDIRECT.match(plain_text(definition))
    if found is None:
        return None
    target = found.group(1).strip()
    return target if len(target.split()) <= 6 else None
