"""The job never formed: ports, addresses, rendezvous, ssh between nodes."""

from __future__ import annotations

import re

from triage.rules import ROOT, rule


def _port(match: re.Match) -> dict:
    found = re.search(r"(?:port|PORT)[: =`]+(\d{2,5})|:(\d{2,5})\b", match.string)
    return {"port": int(found.group(1) or found.group(2))} if found else {}


def _barrier_wait(match: re.Match) -> dict:
    return {"waiting_rank": int(match.group(1)), "barrier_world": int(match.group(2)),
            "barrier_workers": int(match.group(3))}


RULES = [
    rule(
        # ranks waiting at the process group's start-up barrier with fewer workers than the world: a rank never
        # reached init_process_group (stuck before it: a network retry, data preparation on one rank, a wrong
        # rank or world size); weaker than any error a rank printed
        "rendezvous.store_barrier_waiting",
        "rendezvous",
        ROOT,
        ["Waiting in store based barrier"],
        r"Waiting in store based barrier to initialize process group for rank: (\d+).{0,120}?"
        r"world_size=(\d+), worker_count=(\d+)",
        ["fix_config", "fix_rendezvous"],
        0.3,
        "the job never formed: ranks waited at the process group's start-up barrier for a rank that never "
        "reached it (stuck before init_process_group, or given a rank or world size that does not fit)",
        facts=_barrier_wait,
    ),
    rule(
        "rendezvous.port_in_use",
        "rendezvous",
        ROOT,
        ["EADDRINUSE", "Address already in use", "address already in use", "another process is utili"],
        # (accelerate checks the port itself: "... on port `29500`, but another process is utilizing it")
        r"EADDRINUSE|[Aa]ddress already in use|port `?\d+`?, but another process is utili[sz]ing it",
        ["fix_rendezvous"],
        0.9,
        "the rendezvous port (MASTER_PORT) is already taken by another process",
        facts=_port,
    ),
    rule(
        "rendezvous.gloo_mesh_not_formed",
        "rendezvous",
        ROOT,
        ["connectFullMesh failed"],
        # gloo building its connections when the process group is created: a rank's peer address (read from the
        # store) refuses or never answers, e.g. a file:// or TCP store left over from an earlier run hands out
        # the addresses of processes that are gone; the job never formed
        r"Gloo connectFullMesh failed",
        ["fix_rendezvous"],
        0.45,  # (also what a restarted attempt prints after the first one failed: the first failure outranks it)
        "gloo could not connect the ranks when the process group was created: the addresses its store handed "
        "out do not answer (a store file left from an earlier run, a wrong interface or a firewall)",
    ),
    rule(
        "rendezvous.timeout",
        "rendezvous",
        ROOT,
        [
            "Rendezvous",
            "connect() timed out",
            "client socket has timed out",
            "failed to listen",
            "DistNetworkError",
            "TCPStore",
            "socket has timed out",
            "DistStoreError",
        ],
        r"Rendezvous(?:Timeout|Closed|Connection)Error|RendezvousError|connect\(\) timed out|"
        r"client socket has timed out|server socket has failed to listen|DistNetworkError|DistStoreError|"
        r"TCPStore.{0,100}(?:failed|refused|timed out|Timed out)",
        ["fix_rendezvous"],
        0.8,
        "the processes could not meet at the rendezvous endpoint (MASTER_ADDR:MASTER_PORT)",
        facts=_port,
    ),
    rule(
        "rendezvous.ssh",
        "rendezvous",
        ROOT,
        ["ssh", "Could not resolve hostname", "Host key verification"],
        # ("pdsh@a: b: ssh exited with exit code 1" is not here: pdsh says it whenever the remote command
        # failed, which is a consequence; it is a cascade line)
        r"not reachable via ssh|ssh: connect to host|Permission denied \(publickey|Could not resolve hostname|"
        r"Host key verification failed",
        ["fix_rendezvous"],
        0.8,
        "the multi-node launcher could not reach another node over ssh",
    ),
    rule(
        "rendezvous.name_resolution",
        "rendezvous",
        ROOT,
        ["Name or service not known", "Name does not resolve", "name resolution", "nodename nor servname",
         "No address associated with hostname"],
        # a node that cannot resolve the master's host name (not the Hub's: a download is model_load's)
        r"^(?!.*(?:https?://|huggingface|hf\.co|pypi|github|\.com\b|\.org\b|\.io\b)).*(?:Name or service not known|"
        r"Name does not resolve|Temporary failure in name resolution|nodename nor servname provided|"
        r"No address associated with hostname)",
        ["fix_rendezvous"],
        0.6,
        "a node cannot resolve the master's host name (MASTER_ADDR / the rendezvous endpoint): DNS inside the "
        "cluster, or a host name that only the master's node knows",
    ),
    rule(
        "rendezvous.env",
        "rendezvous",
        ROOT,
        ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "environment variable"],
        r"environment variable (?:MASTER_ADDR|MASTER_PORT|RANK|WORLD_SIZE) expected|"
        r"(?:MASTER_ADDR|MASTER_PORT).{0,60}(?:not set|invalid|expected)",
        ["fix_rendezvous"],
        0.8,
        "the rendezvous environment (MASTER_ADDR/MASTER_PORT/WORLD_SIZE) is missing or wrong",
    ),
    rule(
        "rendezvous.world_size",
        "rendezvous",
        ROOT,
        ["nnodes", "node_rank", "world size"],
        r"(?:--nnodes|--node_rank).{0,80}(?:invalid|mismatch|expected)|[Ww]orld size.{0,40}mismatch",
        ["fix_rendezvous"],
        0.7,
        "the launch arguments disagree about the number of nodes/ranks",
    ),
    rule(
        "rendezvous.ray_cluster",
        "rendezvous",
        ROOT,
        ["running Ray instance", "connect to GCS", "GCS server", "Ray cluster"],
        # Ray's way of forming the job: the driver must find the cluster's head (GCS) before any worker exists
        r"Could not find any running Ray instance|(?:Failed|Unable) to connect to (?:the )?GCS|"
        r"GCS server (?:at|address) .{0,80}(?:not|unreachable|timed out|failed)|"
        r"(?:cannot|could not|unable to) (?:connect to|reach) (?:the |a )?Ray cluster",
        ["fix_rendezvous"],
        0.75,
        "the job's driver could not find the Ray cluster it should join (no Ray head on this node, or the "
        "wrong address in --address / RAY_ADDRESS)",
    ),
]
