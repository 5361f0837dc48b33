"""The YAML that problem files may use: PyYAML's safe subset without anchors and aliases or a key written
twice in one mapping, nested at most MAX_DEPTH levels.

An alias re-uses a node, so a small file can stand for a huge problem: a 64 KiB string aliased a thousand
times is a 64 MB problem once the registry dumps it to compute its version, and nested aliases (the
"billion laughs") grow exponentially. Problem files never need them, so they are refused outright, at the
first anchor or alias, before anything is built. The composer also recurses once per nesting level: a
file of nested brackets would end in a RecursionError instead of a refusal. And YAML takes the last of
two equal keys, silently: a second `pitfalls:` once dropped the five pitfalls of the first.
"""

from __future__ import annotations

from typing import Any

import yaml

# A problem file's deepest data is tests[i].check.<key>.rtol: five levels. 32 leaves room for any field.
MAX_DEPTH = 32


class YamlRefused(yaml.YAMLError):
    """Well-formed YAML that problem files may not use; `line` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases and nesting deeper than MAX_DEPTH while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise YamlRefused(line, f"YAML anchors and aliases are not allowed (*{event.anchor})")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise YamlRefused(line, f"YAML anchors and aliases are not allowed (&{anchor})")
        if self._depth >= MAX_DEPTH:
            raise YamlRefused(line, f"YAML nested deeper than {MAX_DEPTH} levels")
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, yaml.MappingNode):
            _refuse_repeated_keys(node)
        return node  # type: ignore[no-any-return]


def _refuse_repeated_keys(node: yaml.MappingNode) -> None:
    seen: dict[Any, int] = {}
    for key, _value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        name = (key.tag, key.value)
        line = key.start_mark.line + 1
        if name in seen:
            raise YamlRefused(
                line, f"the key {key.value[:80]!r} is written twice in one mapping (lines {seen[name]} and {line})"
            )
        seen[name] = line


def compose(text: str) -> yaml.Node | None:
    """The node tree of one YAML document (None when empty); raises yaml.YAMLError, YamlRefused included."""
    loader = StrictLoader(text)
    try:
        return loader.get_single_node()  # type: ignore[no-any-return]
    finally:
        loader.dispose()


def load(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree (for error lines) and the data of one YAML document, from a single parse."""
    loader = StrictLoader(text)
    try:
        root = loader.get_single_node()
        return root, loader.construct_document(root) if root is not None else None
    finally:
        loader.dispose()
