"""The languages the ``code`` chunker parses: which files are each, the grammar wheel that parses it, and
which of its syntax nodes are definitions (functions, classes, ...) and which hold nested ones.

Grammars come from the per-language wheels (``tree-sitter-python``, ...), each with its compiled
parser inside, so nothing is downloaded at run time. A grammar is loaded on first use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache

import tree_sitter


@dataclass(frozen=True)
class LanguageSpec:
    """How one language's syntax tree is read.

    ``definitions`` maps a node type to the kind of definition it is (``function``, ``class``, ...);
    ``containers`` are the kinds whose body holds nested definitions (a class's methods);
    ``wrappers`` are node types around a definition that belong to it (Python decorators, JS ``export``,
    C++ ``template<...>``); ``comments`` are the node types of comments, kept with the definition that
    follows them.
    """

    name: str
    module: str
    function: str = "language"
    extensions: frozenset[str] = frozenset()
    interpreters: frozenset[str] = frozenset()
    definitions: dict[str, str] = field(default_factory=dict)
    containers: frozenset[str] = frozenset({"class"})
    wrappers: frozenset[str] = frozenset()
    comments: frozenset[str] = frozenset({"comment"})


_C_DEFINITIONS = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
}

_JS_DEFINITIONS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
    "lexical_declaration": "function",
    "variable_declaration": "function",
}
_TS_DEFINITIONS = {
    **_JS_DEFINITIONS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "type_alias_declaration": "type",
    "module": "namespace",
    "internal_module": "namespace",
}

LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec(
        "python",
        "tree_sitter_python",
        extensions=frozenset({".py", ".pyi", ".pyw"}),
        interpreters=frozenset({"python", "python3", "python2", "pypy", "pypy3"}),
        definitions={"function_definition": "function", "class_definition": "class"},
        wrappers=frozenset({"decorated_definition"}),
    ),
    LanguageSpec(
        "javascript",
        "tree_sitter_javascript",
        extensions=frozenset({".js", ".mjs", ".cjs", ".jsx"}),
        interpreters=frozenset({"node", "nodejs", "deno", "bun"}),
        definitions=_JS_DEFINITIONS,
        wrappers=frozenset({"export_statement"}),
    ),
    *(
        LanguageSpec(
            name,
            "tree_sitter_typescript",
            function,
            extensions=frozenset(extensions),
            definitions=_TS_DEFINITIONS,
            containers=frozenset({"class", "namespace"}),
            wrappers=frozenset({"export_statement"}),
        )
        for name, function, extensions in (
            ("typescript", "language_typescript", {".ts", ".mts", ".cts"}),
            ("tsx", "language_tsx", {".tsx"}),
        )
    ),
    LanguageSpec(
        "go",
        "tree_sitter_go",
        extensions=frozenset({".go"}),
        definitions={
            "function_declaration": "function",
            "method_declaration": "method",
            "type_declaration": "type",
        },
        containers=frozenset(),
    ),
    LanguageSpec(
        "rust",
        "tree_sitter_rust",
        extensions=frozenset({".rs"}),
        definitions={
            "function_item": "function",
            "struct_item": "struct",
            "enum_item": "enum",
            "trait_item": "trait",
            "impl_item": "impl",
            "mod_item": "module",
            "macro_definition": "macro",
        },
        containers=frozenset({"trait", "impl", "module"}),
        comments=frozenset({"line_comment", "block_comment", "attribute_item"}),
    ),
    LanguageSpec(
        "java",
        "tree_sitter_java",
        extensions=frozenset({".java"}),
        definitions={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "record_declaration": "class",
            "method_declaration": "method",
            "constructor_declaration": "method",
        },
        containers=frozenset({"class", "interface", "enum"}),
        comments=frozenset({"line_comment", "block_comment"}),
    ),
    LanguageSpec(
        "c",
        "tree_sitter_c",
        extensions=frozenset({".c", ".h"}),
        definitions=_C_DEFINITIONS,
        containers=frozenset(),
    ),
    LanguageSpec(
        "cpp",
        "tree_sitter_cpp",
        extensions=frozenset({".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp"}),
        definitions={
            **_C_DEFINITIONS,
            "class_specifier": "class",
            "namespace_definition": "namespace",
        },
        containers=frozenset({"class", "struct", "namespace"}),
        wrappers=frozenset({"template_declaration"}),
    ),
    LanguageSpec(
        "bash",
        "tree_sitter_bash",
        extensions=frozenset({".sh", ".bash"}),
        interpreters=frozenset({"sh", "bash", "dash", "ksh", "zsh"}),
        definitions={"function_definition": "function"},
        containers=frozenset(),
    ),
)

#: Extension (lower case, with the dot) → language.
BY_EXTENSION: dict[str, LanguageSpec] = {ext: spec for spec in LANGUAGES for ext in spec.extensions}
#: Interpreter named on a ``#!`` line → language.
BY_INTERPRETER: dict[str, LanguageSpec] = {name: spec for spec in LANGUAGES for name in spec.interpreters}
#: Every extension the code loader reads.
EXTENSIONS: frozenset[str] = frozenset(BY_EXTENSION)


def interpreter_of(text: str) -> str:
    """The interpreter a ``#!`` first line names (``#!/usr/bin/env python3`` → ``python3``); empty when none."""
    if not text.startswith("#!"):
        return ""
    words = text[2 : text.find("\n") if "\n" in text else len(text)].split()
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    if program == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        program = rest[0].rsplit("/", 1)[-1] if rest else ""
    return program


def language_of(source: str, text: str) -> LanguageSpec | None:
    """The language of the file ``source`` (by extension, else by its ``#!`` line); ``None`` when unknown."""
    name = source.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    spec = BY_EXTENSION.get(name[dot:].lower()) if dot > 0 else None
    if spec is not None:
        return spec
    program = interpreter_of(text)
    return BY_INTERPRETER.get(program) or BY_INTERPRETER.get(program.rstrip("0123456789."))


def parser_for(spec: LanguageSpec) -> tree_sitter.Parser:
    """A parser of ``spec``'s language (its grammar wheel imported on first use)."""
    return _parser(spec.module, spec.function)


def grammar_of(spec: LanguageSpec) -> tree_sitter.Language:
    """``spec``'s grammar (its wheel imported on first use), for parsers and queries."""
    return _grammar(spec.module, spec.function)


@cache
def _grammar(module: str, function: str) -> tree_sitter.Language:
    return tree_sitter.Language(getattr(importlib.import_module(module), function)())


@cache
def _parser(module: str, function: str) -> tree_sitter.Parser:
    return tree_sitter.Parser(_grammar(module, function))
