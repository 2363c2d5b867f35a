"""Stage 1: stream every source once and collect what the later stages need, in bounded memory:
rule hits, tracebacks, launcher facts, per-rank progress and events, memory lines."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from triage import decorations, faultstacks, grepscan, launchers, nodeoffsets, rules, timestamps
from triage.collected import Collected, Hit
from triage.commandline import parse_script, srun_per_node
from triage.errorfiles import read_error_file
from triage.launchers import composer, raytrain
from triage.progress import PHASE_LOADING, record_progress
from triage.ranks import Prefixed, mentioned_rank, rank_in_decorations, split_prefix
from triage.rules import CASCADE, HINT, exceptions
from triage.scan import LineScanner, compile_literals
from triage.sources import Source, is_pod_replica, rotation_order
from triage.text import EMBEDDED_MARK, clean_line, embedded_lines, json_record_lines
from triage.tracebacks import HEADER, Assemblers, Traceback, TracebackAssembler, parse_exception_line

MAX_HITS = 5000
MAX_TRACEBACKS = 2000
OPEN_TRACEBACK_FOLLOW = 40  # lines read unconditionally after a line of a rank with a traceback open
# `kubectl logs --prefix`: "[pod/<job>-worker-1/<container>] " before every line of that pod
_POD_TAG = re.compile(r"\[pod/([\w.\-]{1,120})/[\w.\-]{1,60}\]\s")
_RANK_ENV = re.compile(r"(?<![A-Za-z_])RANK[=:]\s{0,12}(\d{1,6})\b")
EXTRA_LITERALS = (
    HEADER,
    *faultstacks.LITERALS,
    *composer.BLOCK_LITERALS,
    'File "',
    "Error",
    "Exception",
    "error",
    "Killed",
    "Signal",
    "signal",
    "Loading checkpoint shards",
    "RANK=",  # a replica pod's environment printed (see _pod_stream_rank)
    "RANK:",
    "+ srun ",  # a batch script traced with `set -x`: the srun line it ran (srun_per_node)
    "ERROR",  # a logger's error line: a traceback logged under it is its rank's (see _logged_traceback_rank)
    "exception",
    "The above exception",
    "During handling",
    "RemoteTraceback",
    "Traceback",
    "terminate called",
    "what():",
    "│",
)
_WARNING = re.compile(r"\w*Warning\b|warnings\.warn|^\s*\[?W\d{3,4} |^\[W ")  # c10 logging: [W304 ...] / [W0304
# a Kubernetes event row ("4m12s  Warning  Evicted  pod/x  ..." from kubectl get events, "  Warning  OOMKilling  3m
# kubelet ..." from describe): "Warning" is the event's type column, and such an event is the cluster's own report
_K8S_EVENT = re.compile(r"^\s*(?:\S+\s{2,})?Warning\s{2,}[A-Z][A-Za-z]+\s{2,}")
_LOGGED_ERROR = re.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b|\b[Ee]xception\b")
_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Exit|Interrupt|Invalid|Failure|Fault|Timeout)$")
# a tqdm bar, labelled or not ("Map (num_proc=32):  71%|███"): another stream's output, never a message's rest
_PROGRESS_BAR = re.compile(r"\d%\|")
_NOT_CONTINUATION = re.compile(
    r"(?:Original )?Traceback|During handling|The above exception|File \"|[\[│╭╰┃|]|frame #|\d+%\||"
    r"(?:INFO|WARNING|ERROR|DEBUG)\b|\w+:\d+:\d+ |"
    # separators and the footers tools print after a traceback (an IDE's exit line, Hydra's hint)
    r"[=\-*#~_]{5,}|```|Process finished with exit code|Set the environment variable HYDRA_FULL_ERROR|"
    r"[\"'}\]),\s]{1,8}$"  # the closing quote and braces of a JSON record the traceback was kept in
)
_LAUNCHER_LINE = re.compile(
    r"Killing subprocess|closing signal|exitcode|return code|srun: |slurmstepd|"
    r"ChildFailedError|Sending process|Main process received"
)
_HTTP_CLIENT = re.compile(r"[/\\](?:requests|urllib3|httpx|httpcore|aiohttp|huggingface_hub)[/\\]|[/\\]http[/\\]client\.py$")
_SPAWNED = re.compile(r"^\s*-- Process (\d{1,6}) terminated with the following error")


class Collector:
    def __init__(
        self, memory_collector=None, memory_literals: tuple[str, ...] = (), nproc_per_node: int | None = None,
        node_layout: dict[int, tuple[int, int]] | None = None, srun_labels_are_nodes: bool = False,
        node_offsets: tuple[dict[str, int], dict[str, int]] = ({}, {}),
    ):
        self.out = Collected()
        self.memory = memory_collector
        self.memory_literals = tuple(literal.lower() for literal in memory_literals)
        self.memory_pattern = (
            re.compile("|".join(re.escape(literal) for literal in memory_literals), re.IGNORECASE)
            if memory_collector is not None and memory_literals
            else None
        )
        self.nproc = nproc_per_node
        self.srun_labels_are_nodes = srun_labels_are_nodes  # srun started one launcher per node: "1: " is node 1
        self.node_layout = node_layout or {}  # {node: (first global rank, processes)} when nodes differ
        # (by source name, by host): where a node's local ranks start, from its agent's failure table
        self.node_offsets = node_offsets
        self._offset = 0  # the current source's
        self._non_strict_at: dict[str, int] = {}  # source -> line of a loader's "did not match exactly" warning
        self.rules = rules.registry()
        self.pending_message = None
        self._in_error_file = False
        self._spawn_rank: dict[str, int] = {}
        self._error_line: dict[str, tuple[int, int]] = {}  # source -> (rank, line) of its last ranked error line
        self._logged_tb: dict[str, list] = {}  # source -> [rank, lines left]: a traceback logged under that line
        self._rotation: tuple | None = None  # (last source's name, its assemblers)
        self._pod_rank: dict[tuple, int] = {}  # (source, pod) -> the one rank its lines named (-1: several)
        self._pod_sources: set[str] = set()  # sources named for a replica pod ("job-worker-1.log")
        self.faults = faultstacks.FaultStacks(self.out.fault_stacks)
        literal_list = (
            list(rules.literals()) + list(launchers.LITERALS) + list(EXTRA_LITERALS) + list(memory_literals)
        )
        literal_list = _minimal(literal_list)
        self.literal_list = literal_list
        self._pattern = None

    @property
    def pattern(self):
        """The Python-side prefilter; compiled only when a source is scanned without grep (it costs ~0.1 s)."""
        if self._pattern is None:
            self._pattern = compile_literals(self.literal_list)
        return self._pattern

    def add(self, source: Source) -> None:
        self.out.sources.append(source.name)
        if is_pod_replica(source.name):
            self._pod_sources.add(source.name)
        rank_hint = source.rank_hint
        self._offset = nodeoffsets.offset_of(source.name, *self.node_offsets) or 0
        if source.local_rank_hint is not None:
            node = source.node_hint or 0
            if self._offset and not source.node_hint and not self.node_layout:
                rank_hint = self._offset + source.local_rank_hint
            elif node in self.node_layout:
                rank_hint = self.node_layout[node][0] + source.local_rank_hint
            else:
                rank_hint = (
                    node * self.nproc + source.local_rank_hint
                    if (self.nproc and source.node_hint)
                    else source.local_rank_hint
                )
        stream = source.stream
        if source.is_error_file:
            stream = read_error_file(source, rank_hint, self.out.error_files)
            if stream is None:
                return
        self._in_error_file = source.is_error_file
        scanner = self._scanner(source, stream)
        assemblers = self._continued_rotation(source.name)
        if assemblers is None:
            assemblers = Assemblers()  # {rank: TracebackAssembler}; knows repeated openers of any rank
        self._rotation = (source.name, assemblers)
        follow = 0
        for lineno, raw in scanner:
            if assemblers.repeated(raw) and self.pending_message is None:
                # still read the lines after it, as its first parse asked (its rank has a traceback open)
                scanner.follow = max(scanner.follow, follow, OPEN_TRACEBACK_FOLLOW)
                continue
            record = json_record_lines(raw) if raw[:1] == b"{" else None
            if record is None and EMBEDDED_MARK in raw:  # a traceback kept as one escaped string
                record = embedded_lines(raw)
            if record is not None:
                follow = 0
                for part in record:
                    follow = max(follow, self._line(source.name, lineno, part, rank_hint, assemblers))
            else:
                follow = self._line(source.name, lineno, raw, rank_hint, assemblers)
            if follow > scanner.follow:
                scanner.follow = follow
        for lineno, raw in scanner.progress_samples:
            record_progress(self.out, source.name, lineno, raw, rank_hint, MAX_HITS)
        if not any(hit.rule.sampled and hit.source == source.name for hit in self.out.hits):
            return
        # chatter rules (NCCL INFO) only count when the log stops in the middle of them
        last_other = max(
            (line for line, raw in scanner.progress_samples if b"NCCL INFO" not in raw), default=0
        )
        self.out.hits = [
            hit
            for hit in self.out.hits
            if not (
                hit.rule.sampled
                and hit.source == source.name
                and (hit.line < last_other or hit.line < scanner.lines_total - 3)
            )
        ]

    def _scanner(self, source: Source, stream):
        path = getattr(source, "path", None)
        if path is not None and not source.is_error_file and grepscan.available():
            try:
                if os.path.getsize(path) >= grepscan.MIN_SIZE:
                    return grepscan.GrepScanner(str(path), self.literal_list, pattern=self._pattern)
            except OSError:
                pass
        return LineScanner(stream, self.pattern)

    def _line(self, source: str, lineno: int, raw: bytes, rank_hint, assemblers) -> int:
        out = self.out
        text = clean_line(raw)
        if not text:
            return 0
        if text.startswith("+ srun ") and srun_per_node(parse_script(text[2:])):
            # the batch script's own trace: srun starts one launcher per node, so its labels are nodes
            self.srun_labels_are_nodes = True
        prefixed = split_prefix(text)
        if prefixed.style:
            out.prefix_styles.add(prefixed.style)
        body = prefixed.text
        core = decorations.core(body)
        if prefixed.rank is None and core is not body:
            # "2024-05-01 10:00:00 [rank1]: ..." / a bar glued before "[rank1]:" / "[time] rank=3 | ...": the
            # rank follows the decorations ("trainer-1  | 3: ..." is srun's label behind compose's tag); or a logger
            # put it among them ("10:00:00 [RANK 2] ERROR ...")
            inner = split_prefix(core) if ("[" in core[:12] or "ank" in core[:8] or core[:1].isdigit()) else None
            if inner is not None and inner.rank is not None:
                prefixed, core = inner, decorations.core(inner.text)
                out.prefix_styles.add(inner.style)
            elif body.endswith(core):
                named = rank_in_decorations(body[: len(body) - len(core)])
                if named is not None:
                    prefixed = Prefixed(rank=named, host=prefixed.host, text=prefixed.text, style="logger")
                    out.prefix_styles.add("logger")
        if prefixed.rank is None and rank_hint is None and "terminated with the following" in core:
            # torch.multiprocessing.spawn re-raises a child's traceback under "-- Process N terminated ...":
            # the process index is the rank for what follows
            spawned = _SPAWNED.search(core)
            if spawned:
                self._spawn_rank[source] = int(spawned.group(1))
        if prefixed.rank is None and rank_hint is None and "ank " in core[:40]:
            block = composer.block_rank(core)
            if block is not None:
                # a supervisor's "Begin global rank N STDERR" ... "End ..." block: the rank of what is inside
                if block[0] == "begin":
                    self._spawn_rank[source] = block[1]
                else:
                    self._spawn_rank.pop(source, None)
        if prefixed.local and self._offset and prefixed.rank is not None:
            prefixed = replace(prefixed, rank=prefixed.rank + self._offset)
        if prefixed.style == "srun" and self.srun_labels_are_nodes:
            prefixed = Prefixed(rank=None, host=prefixed.host, text=prefixed.text, style="srun-node")
        rank = prefixed.rank if prefixed.rank is not None else rank_hint
        if rank is None:
            rank = self._spawn_rank.get(source)
            if rank is not None and self._offset:
                rank += self._offset  # (the spawn index counts from 0 on every machine)
        rank = self._logged_traceback_rank(source, lineno, core, rank)
        rank = self._pod_stream_rank(source, text, rank)
        if rank is not None and "pid=" in body[:60]:
            raytrain.learn_actor_rank(out.launcher, decorations.without_collector_lead(body), rank)
        out.seq += 1
        # an error.json repeats what the rank's own log says; cite the log when both have it
        seq = out.seq + (10**9 if self._in_error_file else 0)
        if out.year is None:
            out.year = timestamps.year_of(body)
        t = timestamps.parse(body, out.year)
        track = out.track(rank)
        if track is not None:
            if track.first_seq is None:
                track.first_seq = seq
                track.first_line = (source, lineno, body[:300])
            if t is not None:
                track.last_t = t
        if self.memory_pattern is not None and self.memory_pattern.search(body):
            try:
                self.memory.feed(source, rank, lineno, body, t)
            except Exception:  # the memory series is an extra; a bad line must not cost the diagnosis
                self.memory_pattern = None
        follow = launchers.feed(out.launcher, source, lineno, body, rank, prefixed.host)
        self.faults.feed(source, rank, lineno, core, seq, t)
        assembler = assemblers.get(rank)
        if assembler is None:
            assembler = assemblers[rank] = TracebackAssembler(source, rank, out.tracebacks)
        if self._continue_message(source, rank, body):
            return 0
        finished_before = len(out.tracebacks)
        was_open = assembler.open
        earlier = assembler.last_finished
        assembler.feed(lineno, core, seq, t)
        if not was_open and not assembler.open and len(out.tracebacks) == finished_before:
            self._bare_exception(source, lineno, core, rank, seq, t, led=_has_collector_lead(body))
        if len(out.tracebacks) > finished_before:
            finished = out.tracebacks[-1]
            if source in self._logged_tb and finished.rank == self._logged_tb[source][0]:
                del self._logged_tb[source]
            if finished.chained_to_previous and finished_before > 0:
                finished.previous = _previous_of(out.tracebacks, finished)
            elif earlier is not None and _reraises(earlier, finished):
                # the worker's original traceback, printed inside the message of its re-raise
                earlier.previous, earlier.chained_to_previous = finished, True
            if len(out.tracebacks) > MAX_TRACEBACKS:
                del out.tracebacks[MAX_TRACEBACKS // 2 : MAX_TRACEBACKS // 2 + 1]
            self.pending_message = [finished, source, rank, 3, _has_collector_lead(body)]
            follow = max(follow, 3)
        if self.pending_message is not None:
            follow = max(follow, 3)
        if assembler.open or "Traceback" in body or 'File "' in body or "RemoteTraceback" in body:
            follow = max(follow, 40)
        # a frame and the source line under it are code; a line further from the last frame inside an open
        # traceback is another stream's output interleaved (another rank's error line): the rules read it
        inside_body = was_open and assembler.open and _near_frame(assembler, body)
        self._rules(source, lineno, body, rank, seq, t, code_only=inside_body, core=core)
        if PHASE_LOADING.search(body) and track is not None and track.phase is None:
            track.phase = "loading"
        return follow

    def _continued_rotation(self, name: str):
        """A rotated log's next file (train.log after train.log.1) goes on where the previous one stopped: a
        traceback cut by the rotation keeps its opening lines and its rank."""
        if self._rotation is None:
            return None
        previous, assemblers = self._rotation
        before, now = rotation_order(os.path.basename(previous)), rotation_order(os.path.basename(name))
        if before[1] != 0 or before[0] != now[0] or os.path.dirname(previous) != os.path.dirname(name):
            return None
        if previous in self._logged_tb:
            self._logged_tb[name] = self._logged_tb.pop(previous)
        return assemblers

    def _logged_traceback_rank(self, source: str, lineno: int, core: str, rank):
        """`logging.exception` under a ranked logger line: "10:00:02 [rank1] ERROR train: uncaught exception"
        and then a traceback with no prefix of its own; the traceback is that rank's."""
        if rank is not None:
            if _LOGGED_ERROR.search(core):
                self._error_line[source] = (rank, lineno)
            return rank
        active = self._logged_tb.get(source)
        if active is not None:
            active[1] -= 1
            if active[1] <= 0:
                del self._logged_tb[source]
            return active[0]
        last = self._error_line.get(source)
        if last is not None and HEADER in core and lineno - last[1] == 1:
            self._logged_tb[source] = [last[0], OPEN_TRACEBACK_FOLLOW * 10]
            return last[0]
        return None

    def _bare_exception(self, source, lineno, body, rank, seq, t, led: bool) -> None:
        """body: the line's core; led: the line as collected carries a collector's lead (so will its wrapped rest)."""
        parsed = parse_exception_line(body)
        if (
            parsed is None
            or not _EXCEPTION_NAME.search(parsed[0])
            or len(self.out.bare_exceptions) >= MAX_HITS
        ):
            return
        item = {
            "source": source,
            "line": lineno,
            "rank": rank,
            "exception": parsed[0],
            "full_name": parsed[1],
            "message": parsed[2],
            "text": body[:1000],
            "seq": seq,
            "t": t,
        }
        self.out.bare_exceptions.append(item)
        self.pending_message = [item, source, rank, 3, led]

    def _pod_stream_rank(self, source: str, text: str, rank):
        """A Kubernetes job's replica pod running one process (a PyTorchJob without a launcher inside): once the
        pod's stream has named one rank ("[rank2] ...", "rank=2"), its unranked lines are that rank's; a pod
        that names two ranks runs several processes and lends none."""
        pod = _POD_TAG.search(text, 0, 200) if "[pod/" in text[:200] else None
        if pod:
            key = (source, pod.group(1))
        elif source in self._pod_sources:
            key = (source, None)
        else:
            return rank
        known = self._pod_rank.get(key)
        if rank is None and known is None:
            env = _RANK_ENV.search(text)  # the pod's environment printed ("env RANK=3 ...", describe's "RANK: 3")
            if env:
                self._pod_rank[key] = int(env.group(1))
                return rank
        if rank is not None:
            self._pod_rank[key] = rank if known in (None, rank) else -1
            return rank
        return known if known is not None and known >= 0 else rank

    def finish(self) -> Collected:
        """What was collected, with the lines of a one-process replica pod printed before its rank was named
        (a describe's OOMKilled state above its RANK variable) given that rank, and srun's `task N` records
        taken for nodes where srun started one launcher per node."""
        if self.srun_labels_are_nodes:
            for item in self.out.launcher.exits:
                if "srun: error:" in (item.text or ""):
                    item.rank = None
        for (source, pod), rank in self._pod_rank.items():
            if rank < 0:
                continue
            tag = f"[pod/{pod}/" if pod else None
            for hit in [*self.out.hits, *self.out.cascades]:
                if hit.rank is None and hit.source == source and (tag is None or tag in hit.text):
                    hit.rank = rank
            if tag is None:
                for tb in self.out.tracebacks:
                    if tb.rank is None and tb.source == source:
                        tb.rank = rank
        # "Connection reset by peer" raised inside an HTTP client (a hub download, a reward server's request) is a
        # remote service dropping the connection, not another rank's failure: that exception may be the root
        http = {(tb.source, tb.exc_line) for tb in self.out.tracebacks
                if any(_HTTP_CLIENT.search(str(frame.get("file", ""))) for frame in tb.frames[-8:])}
        if http:
            self.out.cascades = [hit for hit in self.out.cascades if (hit.source, hit.line) not in http]
        return self.out

    def _continue_message(self, source, rank, body) -> bool:
        """Wrapped exception messages ("... 64 != 4 *" / "8 * 1", "Last error:" / "Duplicate GPU ...")."""
        pending = self.pending_message
        if pending is None:
            return False
        target, pending_source, pending_rank, left, led = pending
        if led:
            # every line carries the collector's lead (kubectl --timestamps): judge what the program printed
            inner = decorations.without_collector_lead(body)
            if inner is body:
                self.pending_message = None
                return False
            body = inner
        if body[:1] == "(":
            # Ray's "(Actor pid=P, ip=A) " before every line an actor printed: a tag and nothing else is a blank line
            tag = decorations.RAY_ACTOR.match(body)
            body = body[tag.end():] if tag else body
        stripped = body.strip()
        so_far = target["message"] if isinstance(target, dict) else (target.message or "")
        inner = parse_exception_line(stripped) if so_far.rstrip().endswith("raised:") else None
        if inner is not None and isinstance(target, Traceback) and pending_source == source and pending_rank == rank:
            # torch.compile's "BackendCompilerFailed: backend='inductor' raised:" and the exception the backend
            # raised on the next line: that one is the error, the compiler only passed it on
            wrapper = target.exception
            target.exception, target.full_name = inner[0], inner[1]
            target.message = f"{inner[2]} (raised through {wrapper})"[:2000]
            self.pending_message = None
            return False
        if (
            pending_source != source
            or pending_rank != rank
            or left <= 0
            or not stripped
            # (a message that ends announcing a list, "Error(s) in loading state_dict for X:", takes long lines)
            or (len(stripped) > 400 and not so_far.rstrip().endswith(":"))
            or _NOT_CONTINUATION.match(stripped)
            or _PROGRESS_BAR.search(stripped)
            or parse_exception_line(stripped) is not None
            or _LAUNCHER_LINE.search(stripped)
            or timestamps.parse(stripped) is not None
        ):
            self.pending_message = None
            return False
        pending[3] -= 1
        if isinstance(target, dict):
            target["message"] = (target["message"] + " " + stripped)[:2000]
        else:
            target.message = (target.message + " " + stripped)[:2000]
        return False

    def _rules(self, source, lineno, body, rank, seq, t, code_only: bool = False, core=None) -> None:
        """code_only: the line is a frame or a source line inside a traceback; only frame hints apply.
        core: the line without its decorations (timestamps, levels, runner tags); anchored rules read it."""
        out = self.out
        line_hits = []
        cascade = False
        core = body if core is None else core
        stripped = core.lstrip()
        if (
            stripped.startswith(
                ("raise ", "assert ", "except ", "if ", "elif ", "#", "warnings.warn(", "│", "┃")
            )
            or "❱" in body
        ):
            code_only = True  # source code quoted in a traceback (plain or rich box) is not the error itself
        matches = rules.matching(body)
        if core is not body:
            seen = {id(item) for item, _match in matches}
            matches += [(item, match) for item, match in rules.matching(core) if id(item) not in seen]
        for item, match in matches:
            if code_only and item.role != HINT:
                continue
            if item.role == CASCADE:
                cascade = True
                continue
            facts = item.facts(match) if item.facts else {}
            line_hits.append(
                Hit(
                    item,
                    rank if rank is not None else mentioned_rank(body),
                    source,
                    lineno,
                    _after_progress_bar(match.string, match.start())[:1000],
                    seq,
                    t,
                    facts,
                )
            )
        is_warning = bool(line_hits) and "NCCL WARN" not in body and not _K8S_EVENT.match(body) and bool(
            _WARNING.search(body) or _WARNING.search(decorations.without_collector_lead(body)))
        if any(hit.rule.id == "model_load.non_strict_load" for hit in line_hits):
            self._non_strict_at[source] = lineno
        for hit in line_hits:
            hit.demoted = is_warning or (cascade and hit.rule.weight < 0.85)
            if hit.rule.id == "model_load.state_dict" and 0 < lineno - self._non_strict_at.get(source, -10**9) <= 40:
                # the listing under a loader's non-strict warning ("The model and loaded state dict do not match
                # exactly"): the load went on without those weights (a new head), a warning, not the failure
                hit.demoted = True
        if cascade:
            out.cascades.append(
                Hit(
                    rules.Rule("cascade", "unknown", CASCADE, (), re.compile("")),
                    rank,
                    source,
                    lineno,
                    body[:500],
                    seq,
                    t,
                )
            )
            if len(out.cascades) > MAX_HITS:
                del out.cascades[MAX_HITS // 2]
        out.hits.extend(line_hits)
        if len(out.hits) > MAX_HITS:
            # keep the earliest and the latest evidence; a million identical warnings add nothing
            del out.hits[MAX_HITS // 2 : MAX_HITS // 2 + len(line_hits)]


def _minimal(literals: list[str]) -> list[str]:
    """Drop literals that contain another literal: the shorter one already flags the line."""
    unique = sorted({literal for literal in literals if literal}, key=len)
    kept: list[str] = []
    for literal in unique:
        if not any(shorter in literal for shorter in kept):
            kept.append(literal)
    return kept


def _after_progress_bar(body: str, start: int) -> str:
    """'Steps: 3%|#  | 1/800 [00:17<3:57, 17.8s/it]ERROR: bus error' -> 'ERROR: bus error' (a bar without newline)."""
    cut = body.rfind("]", 0, start)
    if cut > 0 and ("it/s" in body[:cut] or "s/it" in body[:cut] or "%|" in body[:cut]):
        return body[cut + 1 :].lstrip()
    return body


def _reraises(outer: Traceback, inner: Traceback) -> bool:
    """`outer` is torch's re-raise of `inner` ("Caught X in DataLoader worker process N. Original Traceback")."""
    caught = _CAUGHT.match(outer.message or "")  # (a class torch cannot rebuild comes back as RuntimeError)
    return (
        (outer.exception == inner.exception or (caught is not None and caught.group(1) == inner.exception))
        and outer.previous is None
        and bool(exceptions.REraised.match(outer.message))
        and 0 < inner.start_line - (outer.exc_line or outer.start_line) <= 50  # other ranks may interleave
    )


_CARETS = re.compile(r"[\s^~]*")
_CAUGHT = re.compile(r"Caught (\w+) in ")


def _has_collector_lead(body: str) -> bool:
    return decorations.without_collector_lead(body) is not body


def _near_frame(assembler, body: str) -> bool:
    """The line is a frame, the source line under it, the carets under that, or more indented source (a
    statement over several lines); an unindented line is another stream's output."""
    current = getattr(assembler, "current", None)
    return (current is None or not current.frames or current.since_frame <= 1 or body.startswith("    ")
            or bool(_CARETS.fullmatch(body)))


def _previous_of(tracebacks: list[Traceback], current: Traceback) -> Traceback | None:
    for candidate in reversed(tracebacks[:-1]):
        if candidate.source == current.source and candidate.rank == current.rank:
            return candidate
    return None
