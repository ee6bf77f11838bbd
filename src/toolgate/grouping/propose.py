"""Groups proposed for a server's tools, from their names, annotations and descriptions.

A server with many tools becomes groups an agent can open cheaply: one per object noun
of the tool names (``list_issues``, ``issue_read`` -> ``issue``), nested where the names
nest (``pull_request_review`` under ``pull_request``), split by a secondary noun, by the
MCP annotations (read-only or not) and by verb while a group is over its size, and the
few tools no noun places joined to the group whose text is most like theirs (``words``).
Deterministic. Imports the catalog's ``Tool`` and ``toolgate.grouping.words``; no MCP.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from toolgate.catalog import Group, Tool
from toolgate.catalog.group import GROUP_NAME
from toolgate.errors import MAX_GROUP_NAME, ConfigError
from toolgate.grouping.words import NameReader, centroid, cosine, destructive, vector

MIN_GROUP = 3  # fewer tools than this under one noun: joined to a related group
NEST_SHARE = 0.5  # a noun nests under another when at least this share of its tools name both
JOIN_SIMILARITY = 0.25  # least cosine for a stray tool to join a group by its text
PREFIX_CHARS = 24  # a longer prefix is cut, so the group's own words stay in its name


@dataclass(frozen=True)
class GroupingSettings:
    """How proposals are made: groups of at most ``max_size`` tools, for servers with
    more than ``min_tools`` tools (smaller servers stay one group)."""

    max_size: int = 15
    min_tools: int = 20

    def __post_init__(self) -> None:
        if self.max_size < MIN_GROUP:
            raise ConfigError(
                f"group size {self.max_size}: a proposed group holds at least {MIN_GROUP} "
                "tools; give a larger size",
                key="max_size",
            )
        if self.min_tools < 1:
            raise ConfigError(f"min_tools {self.min_tools}: must be at least 1", key="min_tools")


@dataclass(frozen=True)
class ProposedGroup:
    """One proposed group: a valid name, a few words from its tools, the tools (server
    names, sorted) and its parent group, if it nests."""

    name: str
    description: str
    tools: tuple[str, ...]
    parent: str | None = None


@dataclass
class _Piece:
    """Tools with a label (noun stems and kind words) on their way to becoming a group."""

    label: tuple[str, ...]
    tools: list[str]
    children: list[_Piece] = field(default_factory=list)


class _Proposer:
    """One server's tools on their way to groups: anchors, splits, strays placed."""

    def __init__(self, tools: Sequence[Tool], settings: GroupingSettings) -> None:
        self.tools = {t.name: t for t in sorted(tools, key=lambda t: t.name)}
        self.settings = settings
        self.reader = NameReader(list(self.tools.values()))
        docs = {n: self.reader.terms(t) for n, t in self.tools.items()}
        df = Counter(t for terms in docs.values() for t in set(terms))
        idf = {t: math.log(1 + len(docs) / n) for t, n in df.items()}
        self.vectors = {n: vector(terms, idf) for n, terms in docs.items()}

    def nouns(self, name: str) -> tuple[str, ...]:
        return self.reader.words[name].nouns

    # -- anchors: the object noun each tool is grouped by --------------------------------------

    def anchors(self) -> dict[str, str | None]:
        """Each tool's anchor noun: the most shared of its nouns, where sharing is counted
        first over all names, then over the anchors so far, until nothing moves (so
        ``discussion_comment_write`` goes with the discussions, not with every comment)."""
        weight: Counter[str] = Counter(n for name in self.tools for n in self.nouns(name))
        anchor: dict[str, str | None] = {}
        for _ in range(6):
            new: dict[str, str | None] = {}
            for name in self.tools:
                nouns = self.nouns(name)
                new[name] = (
                    min(nouns, key=lambda n: (-weight[n], nouns.index(n))) if nouns else None
                )
            if new == anchor:
                break
            anchor = new
            weight = Counter(a for a in anchor.values() if a is not None)
        return anchor

    # -- splitting a piece that is over its size ---------------------------------------------

    def split(self, label: tuple[str, ...], tools: list[str], nested: list[_Piece]) -> _Piece:
        """``tools`` (and the ``nested`` pieces of nouns under this one) as a piece whose
        own tools and children are each within the size: children by secondary noun,
        then the changing tools apart from the read-only ones, then by verb."""
        limit = self.settings.max_size
        children = {p.label[-1]: p for p in nested}
        own = sorted(tools)
        # 1. secondary nouns: carve the most shared one while the piece is over its size,
        # into the nested piece of that noun when there is one
        while len(own) > limit:
            # the label's nouns, and nouns always written with them, name no subset
            covered = {w for n in label for w in self.reader.phrases.get(n, (n,))}
            counts = Counter(
                n for t in own for n in self.nouns(t) if n not in covered and n not in children
            )
            counts.update(
                {n: sum(1 for t in own if n in self.nouns(t)) for n in children if n not in covered}
            )
            fits = [(n, c) for n, c in counts.items() if MIN_GROUP <= c < len(own)]
            best = min(fits, key=lambda kv: (-kv[1], kv[0]), default=None)
            if best is None:
                break
            noun = best[0]
            taken = [t for t in own if noun in self.nouns(t)]
            own = [t for t in own if t not in taken]
            if noun in children:
                children[noun].tools = sorted(children[noun].tools + taken)
            else:
                children[noun] = _Piece((*label, noun), taken)
        # small nested nouns fold back into the piece while it has room, else into the
        # sibling most like them that has room
        for noun in sorted(children, key=lambda n: (len(children[n].tools), n)):
            child = children[noun]
            if len(child.tools) >= MIN_GROUP or child.children:
                continue
            if len(own) + len(child.tools) <= limit:
                own = sorted(own + child.tools)
                del children[noun]
                continue
            mine = centroid(self.vectors[t] for t in child.tools)
            room = [
                (cosine(mine, centroid(self.vectors[t] for t in p.tools)), n)
                for n, p in children.items()
                if n != noun
                and len(p.tools) >= MIN_GROUP
                and len(p.tools) + len(child.tools) <= limit
            ]
            if room:
                into = max(room, key=lambda sn: (sn[0], sn[1]))[1]
                children[into].tools = sorted(children[into].tools + child.tools)
                del children[noun]
        # 2. the changing tools apart from the read-only ones, 3. by verb, 4. by text
        extra: list[_Piece] = []
        if len(own) > limit:
            reads = [t for t in own if self.reader.words[t].reads]
            writes = [t for t in own if not self.reader.words[t].reads]
            if reads and writes:
                own, changes = (reads, writes) if len(reads) >= MIN_GROUP else (writes, reads)
                kind = "write" if changes is writes else "read"
                extra += self.by_verb(label, changes, kind)
        if len(own) > limit:
            pieces = self.by_verb(label, own, "")
            own, extra = pieces[0].tools, extra + pieces[1:]
        out = [*sorted(children.values(), key=lambda p: p.label), *extra]
        for child in out:  # a child still over its size (rare): split it again
            if len(child.tools) > limit or child.children:
                grown = self.split(child.label, child.tools, child.children)
                child.tools, child.children = grown.tools, grown.children
        return _Piece(label, own, out)

    def by_verb(self, label: tuple[str, ...], tools: list[str], kind: str) -> list[_Piece]:
        """``tools`` as pieces within the size: the biggest verb at a time, then by text.
        The first piece is what remains, under ``label`` and ``kind`` (read, write)."""
        limit = self.settings.max_size
        rest = sorted(tools)
        pieces: list[_Piece] = []
        while len(rest) > limit:
            counts = Counter(v for t in rest for v in set(self.reader.words[t].verbs))
            fits = [(v, n) for v, n in counts.items() if MIN_GROUP <= n <= limit and n < len(rest)]
            if not fits:
                break
            verb = min(fits, key=lambda vn: (-vn[1], vn[0]))[0]
            taken = [t for t in rest if verb in self.reader.words[t].verbs]
            rest = [t for t in rest if t not in taken]
            pieces.append(_Piece((*label, verb), taken))
        chunks = self.by_text(rest)
        base = (*label, kind) if kind else label
        head = _Piece(base, chunks[0])
        tail = [_Piece((*base, str(i)), c) for i, c in enumerate(chunks[1:], 2)]
        return [head, *pieces, *tail]

    def by_text(self, tools: list[str]) -> list[list[str]]:
        """``tools`` in chunks within the size, each seeded by the tool least like the
        chunks so far and filled with the tools most like its seed."""
        limit = self.settings.max_size
        rest = sorted(tools)
        chunks: list[list[str]] = []
        while len(rest) > limit:
            seed = (
                rest[0]
                if not chunks
                else min(
                    rest,
                    key=lambda t: (
                        max(cosine(self.vectors[t], self.vectors[c[0]]) for c in chunks),
                        t,
                    ),
                )
            )
            near = sorted(rest, key=lambda t: (-cosine(self.vectors[t], self.vectors[seed]), t))
            chunk = sorted(near[:limit])
            chunks.append(chunk)
            rest = [t for t in rest if t not in chunk]
        return [rest, *chunks] if rest else chunks

    # -- the whole proposal ------------------------------------------------------------------

    def pieces(self) -> list[_Piece]:
        anchors = self.anchors()
        buckets: dict[str | None, list[str]] = defaultdict(list)
        for name, noun in anchors.items():
            buckets[noun].append(name)
        size = {n: len(ts) for n, ts in buckets.items() if n is not None}
        # a noun nests under the bigger noun that most of its tools also name
        parent: dict[str, str] = {}
        for noun in sorted(size, key=lambda n: (size[n], n)):
            named = [t for t in self.tools if noun in self.nouns(t)]
            shared = Counter(m for t in named for m in self.nouns(t) if m != noun)
            fits = [
                (m, c)
                for m, c in shared.items()
                if size.get(m, 0) > size[noun] and c / len(named) >= NEST_SHARE
            ]
            if fits:
                parent[noun] = min(fits, key=lambda mc: (-mc[1], -size[mc[0]], mc[0]))[0]

        def top(noun: str) -> str:
            while noun in parent:
                noun = parent[noun]
            return noun

        strays: list[list[str]] = [[t] for t in buckets.get(None, [])]
        nested: dict[str, list[_Piece]] = defaultdict(list)
        tops: list[str] = []
        for noun in sorted(size):
            if noun in parent:
                head = top(noun)
                nested[head].append(_Piece((head, noun), sorted(buckets[noun])))
            elif size[noun] >= MIN_GROUP:
                tops.append(noun)
            else:
                strays.append(sorted(buckets[noun]))
        out = [self.split((noun,), buckets[noun], nested.get(noun, [])) for noun in tops]
        for noun in sorted(nested):  # nouns nested under a stray noun come back as strays
            if noun not in tops:
                strays += [sorted(p.tools) for p in nested[noun]]
        return self.place(out, sorted(strays))

    def place(self, pieces: list[_Piece], strays: list[list[str]]) -> list[_Piece]:
        """Each stray set of tools (one small noun's, or one tool without a noun) joins
        the group whose text is most like it and has room; the rest make one group of
        their own (``other``), split by text when over the size."""
        limit = self.settings.max_size
        flat: list[_Piece] = []

        def walk(p: _Piece) -> None:
            flat.append(p)
            for c in p.children:
                walk(c)

        for p in pieces:
            walk(p)
        centroids = [centroid(self.vectors[t] for t in p.tools) for p in flat]
        left: list[str] = []
        for tools in strays:
            mine = centroid(self.vectors[t] for t in tools)
            scored = [
                (cosine(mine, c), i)
                for i, c in enumerate(centroids)
                if flat[i].tools and len(flat[i].tools) + len(tools) <= limit
            ]
            best = max(scored, key=lambda si: (si[0], -si[1]), default=None)
            if best is not None and best[0] >= JOIN_SIMILARITY:
                flat[best[1]].tools = sorted([*flat[best[1]].tools, *tools])
            else:
                left += tools
        if left:
            chunks = self.by_text(left)
            pieces += [
                _Piece(("other",) if i == 1 else ("other", str(i)), c)
                for i, c in enumerate(chunks, 1)
            ]
        return pieces


def _slug(words: Iterable[str]) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", "-".join(words).lower()).strip("-")
    return name[:MAX_GROUP_NAME].strip("-") or "tools"


def _prefixed(prefix: str, label: Sequence[str]) -> str:
    """``prefix`` and ``label`` as one name, the prefix cut (at a word where it can be)
    to ``PREFIX_CHARS``, and further when the label needs the room: a long server name
    must not push the group's own words out of its name."""
    own = _slug(label)
    head = _slug([prefix])
    room = max(0, min(PREFIX_CHARS, MAX_GROUP_NAME - len(own) - 1))
    if len(head) > room:
        whole = head[: room + 1].split("-")[:-1]  # the words that fit whole
        head = "-".join(whole) if whole else head[:room]
    return _slug([head, own])


def wire(name: str) -> str:
    """A group name as the groups extension sends it: names equal here collide."""
    return Group(name).wire_name


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or it with a counter, unlike every name in ``taken`` (wire forms)."""
    base, i = name, 2
    while wire(name) in taken or name == "default" or not GROUP_NAME.fullmatch(name):
        suffix = f"-{i}"
        name = base[: MAX_GROUP_NAME - len(suffix)].strip("-") + suffix
        i += 1
    taken.add(wire(name))
    return name


def _top(counter: Counter[str], n: int) -> list[str]:
    return [w for w, _ in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def propose_groups(
    tools: Sequence[Tool],
    *,
    server: str = "",
    prefix: str = "",
    settings: GroupingSettings | None = None,
    taken: Iterable[str] = (),
) -> tuple[ProposedGroup, ...]:
    """Groups for ``tools`` (one server's), parents before their children; every tool in
    exactly one group, each group within ``settings.max_size``. ``prefix`` starts every
    name (cut to ``PREFIX_CHARS`` when long); names in ``taken``, or names that are the
    same on the groups-extension wire (``pull_request``, ``pull-request``), are not
    used. Empty when the server has ``min_tools`` or fewer tools, or when its tools
    make one group anyway: such a server stays one group.

    >>> [g.name for g in propose_groups([Tool(f"get_item_{i}") for i in range(3)])]
    []
    """
    settings = settings or GroupingSettings()
    if len(tools) <= settings.min_tools:
        return ()
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        twice = sorted(n for n, c in Counter(names).items() if c > 1)
        raise ConfigError(f"tools named twice: {', '.join(twice)}", key="tools")
    proposer = _Proposer(tools, settings)
    spelling = proposer.reader.spelling
    words = proposer.reader.words
    used = {wire(n) for n in taken}
    out: list[ProposedGroup] = []

    def emit(piece: _Piece, parent: str | None) -> None:
        stems = list(proposer.reader.phrases.get(piece.label[0], piece.label[:1]))
        for w in piece.label[1:]:
            phrase = proposer.reader.phrases.get(w, (w,))
            if piece.label[0] in phrase:  # ``sub issue`` under ``issue``
                stems = list(phrase)
            else:
                stems += [x for x in phrase if x not in stems]
        label = [spelling.get(w, w) for w in stems]
        name = _unique(_prefixed(prefix, label) if prefix.strip("-") else _slug(label), used)
        members = piece.tools or [t for c in piece.children for t in c.tools]
        verbs = Counter(v for t in members for v in dict.fromkeys(words[t].verbs))
        objects = Counter(
            spelling.get(n, n) for t in members for n in words[t].nouns if n not in stems
        )
        # the group's name (and its prefix) sits beside its description wherever a model
        # reads it, so the description says only what the name does not: the server
        # (unless the prefix names it), the verbs, the other objects
        said = [", ".join(_top(verbs, 5))] if verbs else []
        said += [", ".join(_top(objects, 4))] if objects else []
        head = " ".join(label).replace("-", " ")
        text = "; ".join(said) or f"{head[:1].upper()}{head[1:]} tools"
        if server and not prefix:
            text = f"{server}: {text}"
        # a destructive member is named whatever else its annotations say
        if any(destructive(proposer.tools[t]) for t in members):
            text += " (some destructive)"
        elif piece.tools and all(words[t].reads for t in piece.tools):
            text += " (read-only)"
        out.append(ProposedGroup(name, text, tuple(sorted(piece.tools)), parent))
        for child in piece.children:
            emit(child, name)

    for piece in sorted(proposer.pieces(), key=lambda p: p.label):
        emit(piece, None)
    # one group holding every tool says less than the server's own group (``server:*``,
    # its instructions): it stays that
    return tuple(out) if len(out) > 1 else ()


__all__ = ["GroupingSettings", "ProposedGroup", "propose_groups", "wire"]
