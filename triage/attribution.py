"""Stage 2b: which rank failed first, once the root cause is chosen (culprits versus victims)."""

from __future__ import annotations

import re

from triage.candidates import Candidate
from triage.collected import Collected
from triage.launchers import ncclinit
from triage.rules.exceptions import library_file
from triage.tracebacks import Traceback

# "found at least two devices, cuda:1 and cuda:0": a process's own GPU beside the cuda:0 a module was pinned to
_PINNED_TO_GPU0 = re.compile(r"same device.{0,80}?\bcuda:(?:([1-9]\d{0,2}) and cuda:0|0 and cuda:([1-9]\d{0,2}))\b")


def _absent_from_barrier(collected: Collected, winner: Candidate) -> int | None:
    """The one rank of the world that no line shows waiting at the process group's start-up barrier."""
    world = winner.facts.get("barrier_world")
    if not world or world > 4096:
        return None
    waiting = {hit.facts.get("waiting_rank") for hit in collected.hits if hit.rule.id == winner.rule_id}
    absent = set(range(world)) - waiting
    return absent.pop() if len(absent) == 1 else None


def _own_store_server(winner: Candidate) -> bool:
    """The port refused to a training process's own init_process_group (the env:// or tcp:// store it serves
    as rank 0), not to torchrun's agent or a framework's side group."""
    frames = winner.traceback.frames if winner.traceback is not None else []
    functions = [str(frame.get("function", "")) for frame in frames]
    return "_create_c10d_store" in functions and any(name.endswith("init_process_group") for name in functions) \
        and not any("elastic" in str(frame.get("file", "")) for frame in frames)


def first_failing_rank(
    collected: Collected, winner: Candidate, pool: list[Candidate], world_size: int | None
) -> tuple[int | None, str]:
    launcher = collected.launcher
    laggards = winner.facts.get("laggard_ranks") or []
    if len(laggards) == 1:
        return laggards[0], "the only rank the monitored barrier reports as never arriving"
    if winner.category == "nccl_timeout":
        return _timeout_culprit(collected, winner, pool, world_size)
    if winner.rule_id == "rendezvous.store_barrier_waiting":
        absent = _absent_from_barrier(collected, winner)
        if absent is not None:
            return absent, "the one rank missing among the ranks that waited at the start-up barrier"
    if winner.rule_id == "code.collective_mismatch":
        ahead = _newest_progress(collected)
        if ahead is not None:
            return ahead, ("the only rank whose progress went past the others': it skipped a collective they "
                           "made, so their next ones no longer matched")
    if winner.category == "host_oom":
        killed = _oom_killed_rank(collected)
        if killed is not None:
            return killed, "the process the kernel's OOM killer named, by the pid the launcher spawned it with"
        task = _srun_oom_task(collected)
        if task is not None:
            return task, "the one srun task Slurm reported as Out Of Memory (srun started one task per rank)"
    if winner.rank is not None:
        first = _launcher_first_exit(collected, winner)
        if first is not None:
            return first, (
                f"the rank the launcher saw exit first on its own; rank {winner.rank}'s log shows the same error"
            )
        return winner.rank, "the rank that raised the root error"
    by_pid = _rank_by_pid(collected, winner)
    if by_pid is not None:
        return by_pid, "the worker pid the error names, in the launcher's table of pids and world ranks"
    if winner.rule_id == "config.devices_spread" and winner.category == "code_bug" and winner.rank is None:
        pinned = _PINNED_TO_GPU0.search(winner.text or "")
        if pinned:
            # one process per GPU, and something the script pinned to cuda:0 met this process's own tensors on
            # cuda:N: the process is local rank N (rank 0's own device is cuda:0, where nothing differs)
            return int(pinned.group(1) or pinned.group(2)), ("the process whose own GPU the error names beside "
                                                             "cuda:0, where the script pinned a module")
    if winner.rule_id == "rendezvous.port_in_use" and "deepspeed" in launcher.launchers and _own_store_server(winner):
        # (the DeepSpeed launcher's kill line names the last process it started, not the one that failed)
        return 0, ("the process that binds the job's store server is global rank 0 (its own "
                   "init_process_group, not a launcher's agent)")
    if winner.category == "hardware":
        pci = _PCI.search(winner.text or "")
        by_bus = ncclinit.rank_of_bus(collected.launcher, pci.group(1), winner.source or "") if pci else None
        if by_bus is not None:
            return by_bus, "the rank whose GPU has the PCI bus id the kernel line names, by NCCL's start-up lines"
        # a kernel line (Xid, ECC) names no rank; the one rank whose CUDA calls failed is where it surfaced
        # (its own prefix names the global rank, where a launcher's exit on another node names a local one)
        surfaced = _distinct(item.rank for item in pool if item.category == "cuda_error")
        if len(surfaced) == 1:
            return surfaced[0], "the only rank whose CUDA call failed when the GPU fault was logged"
        if not surfaced:
            # no CUDA call failed where the log shows it: the process on the lost GPU hung in its collective
            # and printed nothing, while its peers' watchdogs fired around it
            gap = _silent_gap(collected, pool)
            if gap is not None:
                return gap, ("the one rank missing among the ranks that reported the collective timeout: its GPU "
                             "was lost and it stopped without a word")
        if len(surfaced) > 1:
            # several ranks of the node saw the lost GPU: the one the launcher saw fail first, else the
            # earliest by the clock
            if launcher.root_cause_rank in surfaced:
                return launcher.root_cause_rank, ("of the ranks whose CUDA calls failed when the GPU fault was "
                                                  "logged, the launcher's first observed failure")
            timed = sorted((item.t, item.rank) for item in pool
                           if item.category == "cuda_error" and item.rank is not None and item.t is not None)
            if timed and (len(timed) == 1 or timed[0][0] < timed[1][0]):
                return timed[0][1], "of the ranks whose CUDA calls failed when the GPU fault was logged, the earliest"
    # a rank-less root line (NCCL's own "host:pid:tid [dev]" prefix): the rank whose own report of the same
    # kind of failure came first, by the clock
    timed = [(item.t, item.rank) for item in pool
             if item.category == winner.category and item.rank is not None and item.t is not None]
    if len({rank for _, rank in timed}) > 1:
        earliest = min(t for t, _ in timed)
        first = _distinct(rank for t, rank in timed if t == earliest)
        if len(first) == 1:
            return first[0], "the rank whose own report of the same kind of failure is the earliest"
    # a rank-less warning line (a data converter's, a library's): the one rank that raised an error of the
    # same kind of its own (the converter warned, then that rank found no valid samples)
    raised = _distinct(item.rank for item in pool if item.category == winner.category and item.rank is not None
                       and item.traceback is not None and item.weight >= 0.5)
    if len(raised) == 1:
        return raised[0], "the only rank that raised an error of the same kind"
    # a rank-less root line: attribute it through the launcher's exit records
    ranks = _distinct(_exit_rank(item) for item in _own_exits(launcher))
    if len(ranks) == 1:
        return ranks[0], "the only rank the launcher saw fail on its own"
    if launcher.root_cause_rank is not None and (not ranks or launcher.root_cause_rank in ranks):
        return launcher.root_cause_rank, "the launcher's first observed failure"
    if ranks:
        return ranks[0], "the first rank the launcher reported failing"
    if winner.facts.get("device_index") is not None and not launcher.exits and not collected.tracks:
        # "GPU 5" is the device as that process sees it: a rank only in a lone single-process excerpt,
        # never where the log names its ranks (then GPU numbering and ranks differ across nodes)
        return winner.facts["device_index"], "the GPU index the error names (one process per GPU)"
    own = [item.rank for item in pool if item.rank is not None and item.category == winner.category]
    return (
        (own[0], "the rank that printed the root error") if own else (None, "the logs do not say which rank")
    )


_PCI = re.compile(r"\bPCI:?\s?((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")
# a pid as Ray, torch's OOM message and the kernel's OOM killer print it
_PID = re.compile(r"\bpid[=: ]\s?(\d+)|\bProcess (\d+) has|\b[Kk]illed process (\d+)\b")
_RAY_TASK = re.compile(r"\bray::[\w.]+\(\) \(pid=\d+")


def _rank_by_pid(collected: Collected, winner: Candidate) -> int | None:
    """A launcher that printed which pid is which world rank (Ray Train's worker table), and a root error
    whose text or re-raising chain names one of those pids."""
    table = collected.launcher.state.get("pid_rank") or {}
    if not table:
        return None
    texts = [winner.text or ""]
    if winner.traceback is not None and _RAY_TASK.search(winner.traceback.lead):
        texts.append(winner.traceback.lead)  # Ray's "Unhandled error ...: ray::Actor.method() (pid=P, ...)"
    link, hops = winner.traceback, 0
    while link is not None and hops < 20:
        texts += [link.exc_text or "", link.message or ""]
        link, hops = link.previous, hops + 1
    for tb in collected.tracebacks:  # the wrappers that re-raised it ("RayTaskError(OutOfMemoryError): ... (pid=P")
        if winner.traceback is not None and tb.previous is winner.traceback:
            texts.append(tb.exc_text or "")
    exception = winner.traceback.exception if winner.traceback is not None else None
    if exception:  # Ray's own re-raise lines of the same class, printed above the remote frames
        texts += [hit.text for hit in collected.hits
                  if hit.source == winner.source and f"RayTaskError({exception})" in (hit.text or "")]
        texts += [f"pid={pid}" for raised, pid in collected.launcher.state.get("task_error_pids") or []
                  if raised == exception]
    ranks = {table[pid] for text in texts for pid in _pids(text) if pid in table}
    if not ranks:
        # a summary line naming no pid ("1 Workers killed due to memory pressure"): the same kind of report
        # in the same log that does ("... where the task (..., pid=48123, memory used=58GB) was running")
        texts = [hit.text or "" for hit in collected.hits
                 if hit.source == winner.source and hit.rule.category == winner.category]
        ranks = {table[pid] for text in texts for pid in _pids(text) if pid in table}
    return ranks.pop() if len(ranks) == 1 else None


def _pids(text: str) -> list[int]:
    return [int(next(group for group in groups if group)) for groups in _PID.findall(text)]


def _oom_killed_rank(collected: Collected) -> int | None:
    """The kernel's OOM-killer line names a pid; the DeepSpeed launcher logged which local rank it spawned
    with that pid. Only on one node (no host prefixes), where a local rank is the global one."""
    launcher = collected.launcher
    spawned, killed = launcher.state.get("spawned") or {}, launcher.state.get("oom_killed_pids") or []
    if not spawned or not killed or "host" in collected.prefix_styles:
        return None
    ranks = {spawned[pid] for pid in killed if pid in spawned}
    return ranks.pop() if len(ranks) == 1 else None


def _srun_oom_task(collected: Collected) -> int | None:
    """srun's "task N: Out Of Memory" for one task, where srun started the ranks themselves (where it started a
    launcher per node, the collector took its tasks for nodes and they name no rank)."""
    launcher = collected.launcher
    if any(name in launcher.launchers for name in ("torchrun", "deepspeed", "accelerate")):
        return None
    tasks = _distinct(item.rank for item in launcher.exits if "Out Of Memory" in (item.text or ""))
    return tasks[0] if len(tasks) == 1 else None


def _launcher_first_exit(collected: Collected, winner: Candidate) -> int | None:
    """Every rank raised the same start-up error, but only one rank's traceback was kept: the launcher's
    own record of the one rank that exited by itself (the others got SIGTERM) names the first failure.
    Only when that rank left no output here (else its own lines would have decided) and the launcher
    wrote into the same log as the winner (same node, so local and global ranks agree)."""
    launcher = collected.launcher
    own = []
    if "host" in collected.prefix_styles or any(item.host for item in launcher.exits):
        return None  # several nodes: a launcher's local rank does not name a global one
    for item in _own_exits(launcher):
        if _exit_rank(item) is None or item.root_cause_block or item.rank_is_a_guess:
            continue
        if item.source != winner.source:
            return None
        own = _distinct([*own, _exit_rank(item)])
    if len(own) != 1 or own[0] == winner.rank or own[0] in collected.tracks:
        return None
    if winner.rank >= 1 + len(launcher.sigterm_pids):
        return None  # the winner's rank is beyond this launcher's processes: another node's numbering
    return own[0]


def _silent_gap(collected: Collected, pool: list[Candidate]) -> int | None:
    """The one rank inside the span of the ranks that reported a collective timeout that neither reported it
    nor lost a peer (a node's log posted alone: "8..12, 14, 15" timed out and 13 said nothing)."""
    reporters = _distinct(item.rank for item in pool if item.category == "nccl_timeout" and item.rank is not None)
    if len(reporters) < 3 or max(reporters) >= 4096:
        return None
    spoke = set(reporters) | {hit.rank for hit in collected.cascades}
    gaps = [rank for rank in range(min(reporters), max(reporters) + 1) if rank not in spoke]
    return gaps[0] if len(gaps) == 1 else None


def _timeout_culprit(
    collected: Collected, winner: Candidate, pool: list[Candidate], world_size: int | None
) -> tuple[int | None, str]:
    reporters = []
    for item in pool:
        if item.category == "nccl_timeout" and item.rank is not None and item.rank not in reporters:
            reporters.append(item.rank)
    known = set(collected.tracks)
    for item in collected.launcher.exits:
        rank = item.rank if item.rank is not None else item.local_rank
        if rank is not None:
            known.add(rank)
    if world_size and world_size <= 4096:
        known |= set(range(world_size))
    if len(reporters) >= 2 and max(reporters) < 4096:
        known |= set(range(max(reporters) + 1))  # a gap among the reporters is a rank that stayed silent
    silent = sorted(rank for rank in known if rank not in reporters)
    if reporters and len(silent) == 1:
        odd = _odd_place(_script_places(collected, [*reporters, *silent]), [*reporters, *silent])
        if odd is not None and odd in reporters:
            # the silent rank only lost a peer, at the same line as a rank that timed out there: it was
            # waiting too; the rank waiting at another line took another path (fewer batches, a skipped step)
            winner.facts["out_of_step"] = odd
            return odd, ("the only rank waiting at another line of the script than all the others (the rank that "
                         "reported no timeout lost its peer at their line): it took another path")
        return silent[0], "the only rank that did not report the timeout: it stalled while the others waited"
    if reporters and len(silent) > 1:
        # a rank that printed a consequence of a lost peer ("Connection closed by peer") was alive and
        # waiting too; the stalled rank is the one that printed nothing at all
        lost_peer = {hit.rank for hit in collected.cascades}
        quiet = [rank for rank in silent if rank not in lost_peer]
        if not quiet:
            # every rank spoke: a timeout or a lost peer; the one rank whose last call sits at another line of the
            # script than all the others' took another path (it skipped a step and went on to the next barrier)
            spoke = [*reporters, *sorted(lost_peer & set(silent))]
            odd = _odd_place(_script_places(collected, spoke), spoke)
            if odd is not None and odd in reporters:
                winner.facts["out_of_step"] = odd
                return odd, ("the only rank waiting at another line of the script than all the others (the rest "
                             "waited or lost their peer at one line): it took another path")
        if len(quiet) == 1:
            return quiet[0], "the only rank that neither reported the timeout nor lost a peer: it stalled"
        if not quiet and len(reporters) == 1:
            # the others were alive elsewhere (they only lost this rank as a peer): it waited alone in a
            # collective they never called
            winner.facts["out_of_step"] = reporters[0]
            return reporters[0], ("the only rank waiting in the collective; the others were elsewhere and only "
                                  "lost it as a peer: it called a collective they did not")
        stalled = _oldest_progress(collected, silent)
        if stalled is not None:
            return stalled, "of the ranks that did not report the timeout, its last progress is the oldest"
        if len(reporters) == 1 and "atchdog" in winner.text:  # NCCL's watchdog, not a gloo wait timing out
            # nothing tells the silent ranks apart: the launcher took them down when the one watchdog that
            # fired ended its process; that rank is the first failure the log shows
            return reporters[0], ("the only rank whose watchdog fired; the launcher stopped the others before "
                                  "theirs did")
        return None, "several ranks did not report the timeout; any of them may have stalled"
    if len(reporters) == 1:
        return reporters[0], "the only rank whose watchdog reported the timeout"
    if reporters:
        odd = _odd_collective(pool, reporters)
        if odd is not None:
            winner.facts["out_of_step"] = odd
            return odd, (
                "every rank reported the timeout, and this one timed out in a different collective (SeqNum) "
                "than all the others: it fell out of step with them"
            )
        place_of = _places(pool)
        odd = _odd_place(place_of, reporters)
        if odd is not None:
            winner.facts["out_of_step"] = odd
            return odd, (
                "every rank reported the timeout, and this one was waiting at another line of the script than "
                "all the others: it took another path (more batches, a skipped or extra collective)"
            )
        if _diverged(place_of, reporters):
            # the ranks wait in different collectives: they took different paths (no majority names one)
            winner.facts["diverged"] = True
        stalled = _oldest_progress(collected, reporters)
        if stalled is not None:
            return stalled, "every rank reported the timeout; its last progress is the oldest"
        alone = _fired_well_before(pool)
        if alone is not None:
            return alone, ("every rank reported the timeout, and this rank's watchdog fired well before any "
                           "other's: it was the first to wait, out of step with the rest")
        return None, "every rank reported the timeout; the logs do not show which one stalled"
    return winner.rank, "the rank that reported the timeout"


# watchdogs of ranks stuck in the same collective fire within a second or two of each other
_WELL_BEFORE_S = 10.0


def _fired_well_before(pool: list[Candidate]) -> int | None:
    """The one rank whose watchdog fired, by the clock, well before every other rank's."""
    first: dict[int, float] = {}
    for item in pool:
        if item.category == "nccl_timeout" and item.rank is not None and item.t is not None:
            first[item.rank] = min(first.get(item.rank, item.t), item.t)
    if len(first) < 2:
        return None
    order = sorted(first.items(), key=lambda pair: pair[1])
    return order[0][0] if order[1][1] - order[0][1] >= _WELL_BEFORE_S else None


def _odd_collective(pool: list[Candidate], reporters: list[int]) -> int | None:
    """The one rank whose watchdog names another collective than every other rank's (another SeqNum, or at
    the same SeqNum another operation or size): the ranks agree on where they are stuck except the one that
    skipped, repeated or swapped a collective."""
    seq_of: dict[int, set[tuple]] = {}
    for item in pool:
        if item.category == "nccl_timeout" and item.rank is not None and item.facts.get("seq_num") is not None:
            call = (int(item.facts["seq_num"]), item.facts.get("op"), item.facts.get("numel_in"))
            seq_of.setdefault(item.rank, set()).add(call)
    if len(seq_of) < 3 or len(seq_of) != len(reporters) or any(len(seqs) != 1 for seqs in seq_of.values()):
        return None
    counts: dict[tuple, list[int]] = {}
    for rank, seqs in seq_of.items():
        counts.setdefault(next(iter(seqs)), []).append(rank)
    if len(counts) != 2:
        return None
    lone = [ranks for ranks in counts.values() if len(ranks) == 1]
    return lone[0][0] if len(lone) == 1 else None


def _places(pool: list[Candidate]) -> dict[int, set[tuple[str, int]]]:
    """Where in the script's own code each rank's timed-out call was made (file name and line)."""
    place_of: dict[int, set[tuple[str, int]]] = {}
    for item in pool:
        if item.category != "nccl_timeout" or item.rank is None or item.traceback is None:
            continue
        place = _own_place(item.traceback)
        if place is not None:
            place_of.setdefault(item.rank, set()).add(place)
    return place_of


def _own_place(tb: Traceback) -> tuple[str, int] | None:
    """The script's own innermost frame of a traceback: its file name (nodes may run other copies of the
    script from other folders) and line."""
    own = [frame for frame in tb.frames if not library_file(str(frame.get("file", "")))]
    if not own:
        return None
    return str(own[-1].get("file")).replace("\\", "/").rsplit("/", 1)[-1], int(own[-1].get("line") or 0)


def _script_places(collected: Collected, ranks: list[int]) -> dict[int, set[tuple[str, int]]]:
    """Where in the script's own code each rank's last traceback was raised (file name and line), for
    ranks whose last traceback is a collective's failure or a lost peer alike."""
    last: dict[int, Traceback] = {}
    for tb in collected.tracebacks:
        if tb.rank in ranks and tb.frames:
            last[tb.rank] = tb
    return {rank: {place} for rank, tb in last.items() if (place := _own_place(tb)) is not None}


def _diverged(place_of: dict[int, set[tuple[str, int]]], reporters: list[int]) -> bool:
    """Every reporting rank's timed-out call is known, and they are not all at the same line."""
    return len(place_of) >= 2 and len(place_of) == len(reporters) and len(set().union(*place_of.values())) > 1


def _odd_place(place_of: dict[int, set[tuple[str, int]]], reporters: list[int]) -> int | None:
    """The one rank whose timed-out call sits at another line of the script's own code than every other
    rank's (the others wait in the final barrier, it is still in a training step's all_reduce)."""
    if len(place_of) < 3 or len(place_of) != len(reporters) or any(len(places) != 1 for places in place_of.values()):
        return None
    ranks_at: dict[tuple[str, int], list[int]] = {}
    for rank, places in place_of.items():
        ranks_at.setdefault(next(iter(places)), []).append(rank)
    if len(ranks_at) != 2:
        return None
    lone = [ranks for ranks in ranks_at.values() if len(ranks) == 1]
    return lone[0][0] if len(lone) == 1 else None


def _oldest_progress(collected: Collected, ranks: list[int]) -> int | None:
    steps = {}
    for rank in ranks:
        track = collected.tracks.get(rank)
        if track and track.last_progress and track.last_progress[3] is not None:
            steps[rank] = track.last_progress[3]
    if len(steps) < len(ranks) or len(set(steps.values())) < 2:
        return None
    lowest = min(steps.values())
    behind = [rank for rank, step in steps.items() if step == lowest]
    return behind[0] if len(behind) == 1 else None


def _newest_progress(collected: Collected) -> int | None:
    """The one rank whose last progress line names a later step than every other rank's (all ranks known)."""
    steps = {rank: track.last_progress[3] for rank, track in collected.tracks.items()
             if rank is not None and track.last_progress and track.last_progress[3] is not None}
    if len(steps) < 2 or len(steps) < len(collected.tracks) or len(set(steps.values())) < 2:
        return None
    highest = max(steps.values())
    ahead = [rank for rank, step in steps.items() if step == highest]
    return ahead[0] if len(ahead) == 1 else None


def rank_without_verdict(collected: Collected) -> int | None:
    """No signature matched: a rank that died on its own (not SIGTERM, no cascade message) is still the first."""
    launcher = collected.launcher
    cascades = {hit.rank for hit in collected.cascades}
    own = _distinct(_exit_rank(item) for item in _own_exits(launcher) if _exit_rank(item) not in cascades)
    if len(own) == 1:
        return own[0]
    return launcher.root_cause_rank


def _own_exits(launcher) -> list:
    """The launcher's exit records of processes that ended on their own: a failure code, not the
    SIGTERM the launcher itself sent (by signal, or by the pid it said it was terminating)."""
    return [
        item
        for item in launcher.exits
        if item.exit_code not in (None, 0, -15)
        and item.signal != "SIGTERM"
        and (item.pid is None or item.pid not in launcher.sigterm_pids)
    ]


def _exit_rank(item) -> int | None:
    return item.rank if item.rank is not None else item.local_rank


def _distinct(ranks) -> list[int]:
    """Ranks in first-seen order, without None and repeats."""
    out: list[int] = []
    for rank in ranks:
        if rank is not None and rank not in out:
            out.append(rank)
    return out
