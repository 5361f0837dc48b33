"""Where a field is in a problem file: `file:line: field: message` for every error the check reports."""

from __future__ import annotations

import yaml

from grader.problems import strict_yaml
from grader.problems.registry import field_path, yaml_line


class Locator:
    """Turns a field path into `file:line: field` using the YAML node tree of the checked text."""

    def __init__(self, source: str, text: str) -> None:
        self.source = source
        try:
            self.root: yaml.Node | None = strict_yaml.compose(text)
        except yaml.YAMLError:
            self.root = None

    def error(self, loc: tuple[str | int, ...], message: str, line: int | None = None) -> str:
        line = line or yaml_line(self.root, loc)
        where = f"{self.source}:{line}" if line else self.source
        return f"{where}: {field_path(loc)}: {message}"

    def code_line(self, loc: tuple[str | int, ...], line_in_code: int | None) -> int | None:
        """The file line of a line inside a block scalar (`code: |`), or None if it cannot be known."""
        node = self.root
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
            else:
                return None
        if not line_in_code or not isinstance(node, yaml.ScalarNode) or node.style not in ("|", ">"):
            return None
        return node.start_mark.line + 1 + line_in_code
