"""Which tables a SQL statement reads or writes without filtering them on project_id: the check behind
tests/context/test_statements_filter_on_project.py (docs/scaling.md: such a statement cannot be routed to one
shard when the tables are distributed by project).

A tokenizer and a small parser of the SQL this project sends (raw SQL and the ORM's), not of all SQL: sqlglot is
not in the environment. A reference to a scoped table is *filtered* when, in the clauses of the query block that
names it (WHERE, or the ON of its join):
- a conjunct (a term of the top-level AND) compares its project_id with equality to a parameter or a literal
  (`f.project_id = %(project_id)s`, `"facts_fact"."project_id" IN (%s, %s)`, `= ANY(%s)`), or
- a conjunct equates its project_id with the project_id of a reference filtered itself (`m.project_id =
  f.project_id`), the enclosing blocks' references included (correlated subqueries), or
- a conjunct is a parenthesised OR whose every branch filters it (the ORM's Q(...) | Q(...)).
An INSERT is filtered when its column list names project_id (every row then carries its project).
Anything else — a comparison under NOT, a branch of an OR that does not filter, a project_id compared with `<>` —
leaves the reference unfiltered. The parse is conservative: what it cannot read counts as not filtered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

COLUMN = "project_id"

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<dollar>\$(?P<tag>\w*)\$.*?\$(?P=tag)\$)
  | (?P<string>[EeXxBbNn]?'(?:[^'\\]|''|\\.)*')
  | (?P<qident>"(?:[^"]|"")*")
  | (?P<param>%\(\w+\)s|%s|\$\d+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<op>::|<=>|<->|<\#>|<>|!=|>=|<=|\|\||@@|->>|->|%%|[-+*/<>=~!@\#%^&|`?\[\]:])
  | (?P<punct>[(),;.])
""",
    re.VERBOSE | re.DOTALL,
)


@dataclass
class Tok:
    kind: str  # ident, qident, string, param, number, op, punct, group
    text: str
    children: list = field(default_factory=list)  # a group's tokens, parentheses excluded

    @property
    def word(self) -> str:
        """An identifier's name as PostgreSQL folds it; '' for anything else."""
        if self.kind == "ident":
            return self.text.lower()
        if self.kind == "qident":
            return self.text[1:-1].replace('""', '"')
        return ""

    def is_kw(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.upper() in words


def tokenize(sql: str) -> list[Tok]:
    """The statement's tokens, each parenthesised part a `group` token holding its own."""
    stack: list[list[Tok]] = [[]]
    pos = 0
    while pos < len(sql):
        m = _TOKEN.match(sql, pos)
        if m is None:
            raise ValueError(f"cannot tokenize at {sql[pos : pos + 40]!r}")
        pos = m.end()
        kind = m.lastgroup if m.lastgroup != "tag" else "dollar"
        if kind == "space":
            continue
        text = m.group(0)
        if text == "(":
            stack.append([])
        elif text == ")":
            children = stack.pop()
            stack[-1].append(Tok("group", "()", children))
        else:
            stack[-1].append(Tok("string" if kind == "dollar" else kind, text))
    if len(stack) != 1:
        raise ValueError("unbalanced parentheses")
    return stack[0]


# Keywords that end a FROM item's alias, a WHERE or an ON.
_CLAUSE_END = {
    "WHERE",
    "GROUP",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "HAVING",
    "WINDOW",
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "RETURNING",
    "FOR",
    "ON",
    "USING",
    "JOIN",
    "LEFT",
    "RIGHT",
    "FULL",
    "INNER",
    "CROSS",
    "NATURAL",
    "SET",
    "SELECT",
    "VALUES",
    "WITH",
    "FETCH",
    "INSERT",
    "UPDATE",
    "DELETE",
    "DEFAULT",
    "LATERAL",
    "ONLY",
    "AS",
    "TABLESAMPLE",
    "AND",
    "OR",
    "NOT",
    "IS",
    "IN",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
}
_STARTS = {"SELECT", "INSERT", "UPDATE", "DELETE", "VALUES"}
_WHERE_END = {
    "GROUP",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "HAVING",
    "WINDOW",
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "RETURNING",
    "FOR",
    "FETCH",
}
_ON_END = _WHERE_END | {"WHERE", "JOIN", "LEFT", "RIGHT", "FULL", "INNER", "CROSS", "NATURAL"}
_JOIN_WORDS = {"JOIN", "LEFT", "RIGHT", "FULL", "INNER", "CROSS", "NATURAL", "OUTER"}


@dataclass
class Ref:
    table: str
    alias: str
    block: "Block"
    insert_columns: list[str] | None = None  # an INSERT's target: its column list


@dataclass
class Block:
    """One query block: a SELECT, or the target part of an INSERT, UPDATE or DELETE."""

    parent: "Block | None"
    refs: list[Ref] = field(default_factory=list)
    conditions: list[list[Tok]] = field(default_factory=list)  # WHERE and ON clauses

    def resolve(self, qualifier: str | None) -> Ref | None:
        block = self
        while block is not None:
            if qualifier is None:
                if len(block.refs) == 1:
                    return block.refs[0]
                if block.refs:
                    return None  # ambiguous: counts as not filtered
            else:
                for ref in block.refs:
                    if ref.alias == qualifier:
                        return ref
            block = block.parent
        return None


class Statement:
    def __init__(self, sql: str):
        self.sql = sql
        self.blocks: list[Block] = []
        self.refs: list[Ref] = []
        tokens = tokenize(sql)
        for part in _split(tokens, lambda t: t.kind == "punct" and t.text == ";"):
            self._level(part, None)

    # --- parsing ------------------------------------------------------------------------------------------

    def _level(self, tokens: list[Tok], parent: Block | None) -> None:
        """A sequence of tokens at one parenthesis level: CTEs, then query bodies, each starting at a keyword
        of _STARTS; groups inside are levels of their own, under the block they appear in."""
        i, n = 0, len(tokens)
        current: Block | None = None
        clause = None
        while i < n:
            tok = tokens[i]
            if tok.is_kw(*_STARTS) and not (tok.is_kw("UPDATE") and clause == "for"):
                current = Block(parent)
                self.blocks.append(current)
                clause = tok.text.lower()
                if tok.is_kw("INSERT") and i + 1 < n and tokens[i + 1].is_kw("INTO"):
                    i = self._insert_target(tokens, i + 2, current)
                    continue
                if tok.is_kw("UPDATE"):
                    i = self._from_item(tokens, i + 1, current)
                    clause = "set"
                    continue
                if tok.is_kw("DELETE") and i + 1 < n and tokens[i + 1].is_kw("FROM"):
                    i = self._from_item(tokens, i + 2, current)
                    clause = "delete"
                    continue
                i += 1
                continue
            if tok.kind == "group":
                self._level(tok.children, current if current is not None else parent)
                i += 1
                continue
            if current is None:  # WITH name AS [NOT] MATERIALIZED (...), ... : the groups are levels above
                i += 1
                continue
            if tok.is_kw("FROM") or (tok.is_kw("USING") and clause == "delete"):
                clause = "from"
                i = self._from_item(tokens, i + 1, current)
                continue
            if clause == "from" and tok.kind == "punct" and tok.text == ",":
                i = self._from_item(tokens, i + 1, current)
                continue
            if tok.is_kw("JOIN"):
                i = self._from_item(tokens, i + 1, current)
                continue
            if tok.is_kw("WHERE", "ON"):
                ends = _WHERE_END if tok.is_kw("WHERE") else _ON_END
                end = i + 1
                while (
                    end < n
                    and not (tokens[end].kind == "ident" and tokens[end].text.upper() in ends)
                    and not (tok.is_kw("ON") and tokens[end].kind == "punct" and tokens[end].text == ",")
                ):
                    end += 1
                condition = tokens[i + 1 : end]
                current.conditions.append(condition)
                for t in condition:
                    if t.kind == "group":
                        self._level(t.children, current)
                clause = "where" if tok.is_kw("WHERE") else "from"
                i = end
                continue
            if tok.is_kw("GROUP", "ORDER", "LIMIT", "HAVING", "RETURNING", "WINDOW", "OFFSET"):
                clause = tok.text.lower()
            elif tok.is_kw("FOR"):
                clause = "for"
            elif tok.is_kw("UNION", "INTERSECT", "EXCEPT"):
                current, clause = None, None
            i += 1

    def _insert_target(self, tokens: list[Tok], i: int, block: Block) -> int:
        name, i = _name(tokens, i)
        alias = name
        if i < len(tokens) and tokens[i].is_kw("AS"):
            alias = tokens[i + 1].word
            i += 2
        columns = None
        if i < len(tokens) and tokens[i].kind == "group":
            columns = [t.word for t in tokens[i].children if t.word]
            i += 1
        ref = Ref(name, alias, block, insert_columns=columns or [])
        block.refs.append(ref)
        self.refs.append(ref)
        return i

    def _from_item(self, tokens: list[Tok], i: int, block: Block) -> int:
        """One FROM item (a table, a subquery or a function call, and its alias); returns the index after it."""
        n = len(tokens)
        while i < n and tokens[i].is_kw("LATERAL", "ONLY"):
            i += 1
        if i >= n:
            return i
        if tokens[i].kind == "group":
            self._level(tokens[i].children, block)
            name, i = "", i + 1
        else:
            name, i = _name(tokens, i)
            if i < n and tokens[i].kind == "group":  # a function: unnest(...), string_to_table(...)
                for t in tokens[i].children:
                    if t.kind == "group":
                        self._level(t.children, block)
                name, i = "", i + 1
                while i < n and tokens[i].is_kw("WITH", "ORDINALITY"):
                    i += 1
        alias = name
        if i < n and tokens[i].is_kw("AS"):
            i += 1
        if (
            i < n
            and tokens[i].word
            and not (tokens[i].kind == "ident" and tokens[i].text.upper() in _CLAUSE_END | _JOIN_WORDS)
        ):
            alias = tokens[i].word
            i += 1
            if i < n and tokens[i].kind == "group":  # AS q(v, idx)
                i += 1
        ref = Ref(name, alias, block)
        block.refs.append(ref)
        if name:
            self.refs.append(ref)
        return i

    # --- the check ----------------------------------------------------------------------------------------

    def unfiltered(self, scoped: set[str]) -> list[str]:
        """The scoped tables this statement names without filtering them on project_id, as 'table alias'."""
        pinned: set[int] = set()
        changed = True
        while changed:
            changed = False
            for block in self.blocks:
                for condition in block.conditions:
                    for ref in _pins(condition, block, pinned):
                        if id(ref) not in pinned:
                            pinned.add(id(ref))
                            changed = True
        missing = []
        for ref in self.refs:
            if ref.table not in scoped:
                continue
            if ref.insert_columns is not None:
                if COLUMN not in ref.insert_columns:
                    missing.append(f"INSERT INTO {ref.table}")
            elif id(ref) not in pinned:
                missing.append(f"{ref.table} {ref.alias}")
        return missing


def _name(tokens: list[Tok], i: int) -> tuple[str, int]:
    """A possibly schema-qualified name: its last part."""
    name = tokens[i].word
    i += 1
    while i + 1 < len(tokens) and tokens[i].kind == "punct" and tokens[i].text == "." and tokens[i + 1].word:
        name = tokens[i + 1].word
        i += 2
    return name, i


def _split(tokens: list[Tok], at) -> list[list[Tok]]:
    parts, current = [], []
    for tok in tokens:
        if at(tok):
            parts.append(current)
            current = []
        else:
            current.append(tok)
    parts.append(current)
    return [p for p in parts if p]


def _conjuncts(tokens: list[Tok]) -> list[list[Tok]]:
    """The terms of the top-level AND; the AND of a BETWEEN stays in its term."""
    parts, current, between = [], [], False
    for tok in tokens:
        if tok.is_kw("BETWEEN"):
            between = True
        if tok.is_kw("AND"):
            if between:
                between = False
            else:
                parts.append(current)
                current = []
                continue
        current.append(tok)
    parts.append(current)
    return [p for p in parts if p]


def _column(tokens: list[Tok], block: Block) -> tuple[Ref | None, bool, int]:
    """A column reference at the start of `tokens`: (its table's reference, whether it is project_id, tokens used)."""
    if not tokens or not tokens[0].word or tokens[0].kind == "ident" and tokens[0].text.upper() in _CLAUSE_END:
        return None, False, 0
    parts, i = [tokens[0].word], 1
    while i + 1 < len(tokens) and tokens[i].kind == "punct" and tokens[i].text == ".":
        parts.append(tokens[i + 1].word)
        i += 2
    if i < len(tokens) and tokens[i].kind == "group":  # a function call, not a column
        return None, False, 0
    qualifier = parts[-2] if len(parts) > 1 else None
    return block.resolve(qualifier), parts[-1] == COLUMN, i


def _is_value(tokens: list[Tok]) -> bool:
    """A parameter or a literal, with casts: %(p)s, %s::text, 'x'."""
    if not tokens or tokens[0].kind not in ("param", "string", "number"):
        return False
    rest = tokens[1:]
    while rest and rest[0].kind == "op" and rest[0].text == "::" and len(rest) > 1 and rest[1].word:
        rest = rest[2:]
        if rest and rest[0].kind == "group":  # varchar(128)
            rest = rest[1:]
    return not rest


def _pins(condition: list[Tok], block: Block, pinned: set[int]) -> list[Ref]:
    """The references `condition` filters on project_id: those of every branch of a top-level OR, else those
    of any term of its AND."""
    branches = _split(condition, lambda t: t.is_kw("OR"))
    if len(branches) > 1:
        common = None
        for branch in branches:
            ids = {id(r): r for r in _pins(branch, block, pinned)}
            common = ids if common is None else {k: v for k, v in common.items() if k in ids}
        return list((common or {}).values())
    found = []
    for term in _conjuncts(condition):
        found += _term_pins(term, block, pinned)
    return found


def _term_pins(term: list[Tok], block: Block, pinned: set[int]) -> list[Ref]:
    if len(term) == 1 and term[0].kind == "group":
        inner = term[0].children
        if inner and inner[0].is_kw("SELECT", "WITH"):
            return []
        return _pins(inner, block, pinned)
    ref, is_project, used = _column(term, block)
    if ref is None or not is_project or used >= len(term):
        # `value = column` is read from the right
        for k, tok in enumerate(term):
            if tok.kind == "op" and tok.text == "=" and _is_value(term[:k]):
                ref, is_project, used = _column(term[k + 1 :], block)
                if ref is not None and is_project and k + 1 + used == len(term):
                    return [ref]
        return []
    op, rest = term[used], term[used + 1 :]
    if (
        len(rest) == 1
        and rest[0].kind == "group"
        and rest[0].children
        and not rest[0].children[0].is_kw("SELECT", "WITH")
    ):
        rest = rest[0].children  # the ORM's outer references: = ("facts_fact"."project_id")
    if op.kind == "op" and op.text == "=":
        if _is_value(rest):
            return [ref]
        if rest and rest[0].is_kw("ANY") and len(rest) == 2 and rest[1].kind == "group":
            return [ref]
        other, other_is_project, other_used = _column(rest, block)
        if other is not None and other_is_project and other_used == len(rest):
            if id(other) in pinned:
                return [ref]
            if id(ref) in pinned:
                return [other]
        return []
    if (
        op.is_kw("IN")
        and len(rest) == 1
        and rest[0].kind == "group"
        and all(
            t.kind in ("param", "string", "number") or (t.kind == "punct" and t.text == ",") for t in rest[0].children
        )
    ):
        return [ref]
    return []
