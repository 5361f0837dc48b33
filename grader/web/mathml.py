"""TeX to MathML on the server, so that statements show their math without JavaScript.

latex2mathml does the conversion but copies `\\text{...}` into the output verbatim (markup included)
and passes through attributes such as `href` and `style`; its output is therefore re-parsed as XML
and written out again from an allowlist of MathML elements and attributes. A formula that does not
convert, or holds anything outside the allowlist, is shown as its TeX source instead.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import lru_cache

from latex2mathml.converter import convert
from markupsafe import Markup, escape

MATHML_NS = "http://www.w3.org/1998/Math/MathML"

ELEMENTS = frozenset(
    {
        "math", "mi", "mn", "mo", "ms", "mtext", "mspace", "mrow", "mfrac", "msqrt", "mroot", "mstyle",
        "merror", "mpadded", "mphantom", "msub", "msup", "msubsup", "munder", "mover", "munderover",
        "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mtd", "menclose", "semantics",
        "annotation",
    }
)  # fmt: skip

ATTRIBUTES = frozenset(
    {
        "display", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "width", "height",
        "depth", "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame",
        "displaystyle", "scriptlevel", "accent", "accentunder", "movablelimits", "largeop", "symmetric",
        "minsize", "maxsize", "linethickness", "form", "notation", "encoding", "mathsize", "mathcolor",
        "columnspan", "rowspan",
    }
)  # fmt: skip

# MathML 3's named spaces, which MathML Core (what browsers implement) no longer understands.
NAMED_SPACES = {
    "veryverythinmathspace": "0.0556em",
    "verythinmathspace": "0.1111em",
    "thinmathspace": "0.1667em",
    "mediummathspace": "0.2222em",
    "thickmathspace": "0.2778em",
    "verythickmathspace": "0.3333em",
    "veryverythickmathspace": "0.3889em",
}
NAMED_SPACES.update({f"negative{name}": f"-{value}" for name, value in list(NAMED_SPACES.items())})

# Environments latex2mathml does not know, mapped to ones it does with the same layout.
ENVIRONMENT_ALIASES = {"aligned": "align*", "alignedat": "align*", "gathered": "matrix"}
_ENVIRONMENT = re.compile(r"\\(begin|end)\{(" + "|".join(ENVIRONMENT_ALIASES) + r")\}")

MAX_TEX_CHARS = 20_000


class UnsafeMathML(ValueError):
    """The converter produced something outside the allowlist."""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _write(element: ET.Element, out: list[str]) -> None:
    tag = _local(element.tag)
    if tag not in ELEMENTS:
        raise UnsafeMathML(f"element <{tag}> is not allowed")
    attributes = []
    for raw_name, value in sorted(element.attrib.items()):
        name = _local(raw_name)
        if name not in ATTRIBUTES:
            continue  # dropped: href, style, event handlers and anything else not in MathML Core's vocabulary
        if name in ("width", "lspace", "rspace", "height", "depth"):
            value = NAMED_SPACES.get(value, value)
        attributes.append(f' {name}="{escape(value)}"')
    out.append(f"<{tag}{''.join(attributes)}>")
    if element.text:
        out.append(str(escape(element.text)))
    for child in element:
        _write(child, out)
        if child.tail:
            out.append(str(escape(child.tail)))
    out.append(f"</{tag}>")


def sanitize_mathml(mathml: str) -> str:
    """MathML rebuilt from the allowlist; raises UnsafeMathML (or ET.ParseError) on anything else."""
    root = ET.fromstring(mathml)
    if _local(root.tag) != "math":
        raise UnsafeMathML("the root element is not <math>")
    out: list[str] = []
    _write(root, out)
    return "".join(out)


def _fallback(tex: str, display: bool) -> Markup:
    kind = "math-source math-source-block" if display else "math-source"
    return Markup('<code class="{}" title="TeX that could not be rendered">{}</code>').format(kind, tex)


@lru_cache(maxsize=4096)
def tex_to_mathml(tex: str, display: bool = False) -> Markup:
    """A <math> element for a TeX formula, with its source kept as an annotation (copy, screen readers)."""
    tex = tex.strip()
    if not tex or len(tex) > MAX_TEX_CHARS:
        return _fallback(tex, display)
    try:
        converted = convert(_ENVIRONMENT.sub(lambda m: f"\\{m[1]}{{{ENVIRONMENT_ALIASES[m[2]]}}}", tex))
        body = sanitize_mathml(converted)
    except Exception:  # the converter raises many kinds of errors on TeX it does not know
        return _fallback(tex, display)
    # <math display=..><semantics><mrow>converted</mrow><annotation>TeX</annotation></semantics></math>
    inner = body[body.index(">") + 1 : body.rindex("</math>")]
    mode = "block" if display else "inline"
    return Markup(
        f'<math xmlns="{MATHML_NS}" display="{mode}"><semantics><mrow>{inner}</mrow>'
        f'<annotation encoding="application/x-tex">{escape(tex)}</annotation></semantics></math>'
    )
