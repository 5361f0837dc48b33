// A small code editor for Python: a real <textarea> (so the browser keeps the caret, selection, undo,
// IME, spell-check off and screen-reader support) under a highlighted overlay that mirrors its text.
//
// Keys: Tab indents (to the next multiple of 4, or every selected line), Shift+Tab dedents, Enter keeps
// the indentation and adds a level after ":" or an open bracket and drops one after return/pass/...,
// Backspace in leading spaces removes one level, Ctrl/Cmd+Enter submits. Escape then Tab leaves the
// editor, so keyboard users are never trapped. Edits go through execCommand("insertText") where the
// browser has it, so Ctrl+Z undoes them like typing.

const INDENT = 4;
const SPACES = " ".repeat(INDENT);

const KEYWORDS = new Set(
  ("and as assert async await break class continue def del elif else except finally for from global if import in " +
    "is lambda nonlocal not or pass raise return try while with yield match case").split(" "),
);
const CONSTANTS = new Set(["True", "False", "None"]);
const BUILTINS = new Set(
  ("abs all any bool bytes callable dict dir divmod enumerate filter float format frozenset getattr hasattr hash " +
    "id int isinstance issubclass iter len list map max min next object open pow print range repr reversed round " +
    "set setattr slice sorted str sum super tuple type vars zip Exception ValueError TypeError RuntimeError " +
    "KeyError IndexError NotImplementedError").split(" "),
);
const PSEUDO = new Set(["self", "cls"]);
const DEDENT_AFTER = /^\s*(return|pass|raise|break|continue)\b/;

// One alternative per token kind; anything unmatched (spaces) is copied through as text.
const TOKEN = new RegExp(
  [
    /(#[^\n]*)/.source, // 1 comment
    /((?:[rRbBuUfF]{1,2})?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?))/
      .source, // 2 string (an unterminated one runs to the end of its line, or of the text if triple-quoted)
    /(\b(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?[jJ]?|\.\d[\d_]*(?:[eE][+-]?\d+)?[jJ]?))/
      .source, // 3 number
    /(@[A-Za-z_][\w.]*)/.source, // 4 decorator
    /([A-Za-z_]\w*)/.source, // 5 name
    /([^\sA-Za-z_0-9#'"@]+)/.source, // 6 operators and punctuation
  ].join("|"),
  "g",
);

/** Python source as a DocumentFragment of spans with Pygments' class names (shared CSS with the server). */
export function highlightPython(text) {
  const fragment = document.createDocumentFragment();
  let last = 0;
  let previousName = "";
  TOKEN.lastIndex = 0;
  for (let match = TOKEN.exec(text); match !== null; match = TOKEN.exec(text)) {
    if (match[0] === "") {
      TOKEN.lastIndex += 1;
      continue;
    }
    if (match.index > last) fragment.append(text.slice(last, match.index));
    let cls = "";
    if (match[1] !== undefined) cls = "c1";
    else if (match[2] !== undefined) cls = "s";
    else if (match[3] !== undefined) cls = "m";
    else if (match[4] !== undefined) cls = "nd";
    else if (match[5] !== undefined) {
      const name = match[5];
      if (previousName === "def") cls = "nf";
      else if (previousName === "class") cls = "nc";
      else if (CONSTANTS.has(name)) cls = "kc";
      else if (KEYWORDS.has(name)) cls = "k";
      else if (PSEUDO.has(name)) cls = "bp";
      else if (BUILTINS.has(name)) cls = "nb";
      previousName = name;
    } else if (match[6] !== undefined) cls = "o";
    if (match[5] === undefined) previousName = "";
    if (cls) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = match[0];
      fragment.append(span);
    } else {
      fragment.append(match[0]);
    }
    last = match.index + match[0].length;
  }
  if (last < text.length) fragment.append(text.slice(last));
  return fragment;
}

/** The code part of a line: what comes before a "#" that is not inside a string. */
function codeBeforeComment(line) {
  let quote = "";
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i];
    if (quote) {
      if (ch === "\\") i += 1;
      else if (ch === quote) quote = "";
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === "#") return line.slice(0, i);
  }
  return line;
}

export class Editor {
  constructor(textarea, { onSubmit } = {}) {
    this.textarea = textarea;
    this.root = textarea.closest("[data-editor]");
    this.code = this.root.querySelector(".editor-highlight code");
    this.overlay = this.root.querySelector(".editor-highlight");
    this.gutter = this.root.querySelector(".editor-gutter");
    this.onSubmit = onSubmit;
    this.escaped = false;
    this.lineCount = -1;
    this.frame = 0;

    textarea.addEventListener("keydown", (event) => this.onKeyDown(event));
    textarea.addEventListener("input", () => this.schedule());
    textarea.addEventListener("scroll", () => this.syncScroll());
    textarea.addEventListener("blur", () => {
      this.escaped = false;
    });
    this.root.classList.add("is-enhanced");
    this.render();
  }

  get value() {
    return this.textarea.value;
  }

  /** Replaces the whole text as one undoable edit. */
  setValue(text) {
    this.replace(0, this.textarea.value.length, text);
    this.textarea.setSelectionRange(0, 0);
    this.textarea.scrollTop = 0;
    this.render();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const text = this.textarea.value;
    // A trailing newline needs a line of its own in the overlay, as it has in the textarea.
    this.code.replaceChildren(highlightPython(text), "\n");
    const lines = text.split("\n").length;
    if (lines !== this.lineCount) {
      this.lineCount = lines;
      let numbers = "";
      for (let i = 1; i <= lines; i += 1) numbers += `${i}\n`;
      this.gutter.textContent = numbers;
    }
    this.syncScroll();
  }

  syncScroll() {
    this.overlay.scrollTop = this.textarea.scrollTop;
    this.overlay.scrollLeft = this.textarea.scrollLeft;
    this.gutter.scrollTop = this.textarea.scrollTop;
  }

  /** Replaces [start, end) with text, through the browser's editing so that undo works. */
  replace(start, end, text) {
    const area = this.textarea;
    area.focus();
    area.setSelectionRange(start, end);
    let done = false;
    try {
      done = text === "" ? document.execCommand("delete") : document.execCommand("insertText", false, text);
    } catch {
      done = false;
    }
    if (!done) {
      area.setRangeText(text, start, end, "end");
      area.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }

  onKeyDown(event) {
    if (event.isComposing) return;
    const key = event.key;
    if (key === "Escape") {
      // The next Tab leaves the editor instead of indenting.
      this.escaped = true;
      return;
    }
    if (key === "Tab") {
      if (this.escaped || event.ctrlKey || event.altKey || event.metaKey) {
        this.escaped = false;
        return; // the browser moves the focus on
      }
      event.preventDefault();
      if (event.shiftKey) this.dedent();
      else this.indent();
      return;
    }
    if (key !== "Shift") this.escaped = false;
    if (key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if (this.onSubmit) this.onSubmit();
      return;
    }
    if (key === "Enter" && !event.shiftKey && !event.altKey) {
      event.preventDefault();
      this.newline();
      return;
    }
    if (key === "Backspace" && !event.ctrlKey && !event.altKey && !event.metaKey && this.backspaceIndent()) {
      event.preventDefault();
    }
  }

  /** Start of the line holding `position`, and of the line after the selection's last line. */
  lineBounds(start, end) {
    const text = this.textarea.value;
    const first = text.lastIndexOf("\n", start - 1) + 1;
    // A selection that ends at the very start of a line does not include that line.
    const endAt = end > start && text[end - 1] === "\n" ? end - 1 : end;
    let last = text.indexOf("\n", endAt);
    if (last === -1) last = text.length;
    return [first, last];
  }

  indent() {
    const area = this.textarea;
    const { selectionStart: start, selectionEnd: end, value } = area;
    if (start === end || !value.slice(start, end).includes("\n")) {
      const column = start - (value.lastIndexOf("\n", start - 1) + 1);
      this.replace(start, end, " ".repeat(INDENT - (column % INDENT)));
      return;
    }
    const [first, last] = this.lineBounds(start, end);
    const block = value.slice(first, last);
    const indented = block
      .split("\n")
      .map((line) => (line.trim() ? SPACES + line : line))
      .join("\n");
    this.replace(first, last, indented);
    area.setSelectionRange(first, first + indented.length);
  }

  dedent() {
    const area = this.textarea;
    const { selectionStart: start, selectionEnd: end, value } = area;
    const [first, last] = this.lineBounds(start, end);
    const lines = value.slice(first, last).split("\n");
    let removedFirst = 0;
    const dedented = lines.map((line, index) => {
      const leading = line.length - line.trimStart().length;
      const spaces = line.slice(0, leading);
      let remove = Math.min(leading, spaces.startsWith("\t") ? 1 : leading % INDENT || INDENT);
      if (!/^[ \t]*$/.test(spaces.slice(0, remove))) remove = 0;
      if (index === 0) removedFirst = remove;
      return line.slice(remove);
    });
    const block = dedented.join("\n");
    if (block === lines.join("\n")) return;
    this.replace(first, last, block);
    if (start === end) {
      const caret = Math.max(first, start - removedFirst);
      area.setSelectionRange(caret, caret);
    } else {
      area.setSelectionRange(first, first + block.length);
    }
  }

  newline() {
    const { selectionStart: start, selectionEnd: end, value } = this.textarea;
    const lineStart = value.lastIndexOf("\n", start - 1) + 1;
    const before = value.slice(lineStart, start);
    let indent = before.match(/^[ \t]*/)[0];
    const code = codeBeforeComment(before).trimEnd();
    if (code.endsWith(":") || /[([{]$/.test(code)) {
      indent += SPACES;
    } else if (DEDENT_AFTER.test(code)) {
      indent = indent.slice(0, Math.max(0, indent.length - INDENT));
    }
    // Spaces right after the caret would push the new line's code past its indentation.
    let after = end;
    while (value[after] === " " && before.trim() !== "") after += 1;
    this.replace(start, after, `\n${indent}`);
  }

  /** Backspace in a line's leading spaces removes back to the previous indentation level. */
  backspaceIndent() {
    const { selectionStart: start, selectionEnd: end, value } = this.textarea;
    if (start !== end || start === 0) return false;
    const lineStart = value.lastIndexOf("\n", start - 1) + 1;
    const before = value.slice(lineStart, start);
    if (before === "" || /[^ ]/.test(before)) return false;
    const remove = before.length % INDENT || INDENT;
    if (remove <= 1) return false;
    this.replace(start - remove, start, "");
    return true;
  }
}
