"""The Ray pool on a real two-node local Ray cluster, custom resources in place of GPUs.

One cluster for the whole module (Ray start-up costs seconds on this machine), and one xdist
worker for the module (`xdist_group`), so a parallel suite starts one cluster, not one per worker.
The fault tests kill a node while its actor holds a candidate (of `kloop bench`'s pool, and of a
`kloop run --team 2`): the candidate is requeued and judged on the other node, never counted as
rejected; a node added back joins the pool again.

Order matters: the tests that start their own driver (`kloop bench`, `kloop run`) come first,
because the module's `pool` fixture, once made, holds every `kloop_slot` until the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402 - after the skip when Ray is absent
from tests.pool.conftest import FAST, SILU, VECTORIZED, judged  # noqa: E402

from kloop.pool.bundle import Bundle  # noqa: E402
from kloop.pool.job import POOL_ENV_KEY, JobOutcome, OutcomeKind, VerifyJob  # noqa: E402
from kloop.pool.ray_pool import CPU_RESOURCE, RayPool  # noqa: E402
from kloop.pool.verifier import job_options  # noqa: E402
from kloop.verify.forkserver import BOX_NAME  # noqa: E402

pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.own_fork_server]  # a node's boxes are found under its raylet
FAST_HEALTH = {"health_check_period_ms": 500, "health_check_failure_threshold": 3, "health_check_timeout_ms": 10_000}
"""A removed node is found dead within about 1.5 s: its raylet is gone, so each check fails at once
(connection refused), three in a row. A live raylet gets Ray's default 10 s to answer: at 500 ms a
raylet starved by a loaded box (load 25 in a parallel suite) could miss three checks in 1.5 s and be
declared dead with its actor: a false node loss (both nodes lost: a job waits out its 600 s limit)."""
NODE: dict[str, Any] = {"num_cpus": 1, "resources": {CPU_RESOURCE: 1}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    from kloop.verify.process import SHARED_SERVERS_ENV

    shared = os.environ.pop(SHARED_SERVERS_ENV, None)  # the nodes' workers fork their own boxes, under their raylet
    try:
        cl = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "_system_config": FAST_HEALTH})
        for _ in range(2):
            cl.add_node(**NODE)
        cl.wait_for_nodes()
    finally:
        if shared is not None:
            os.environ[SHARED_SERVERS_ENV] = shared
    ray.init(address=cl.address, log_to_driver=False, logging_level="ERROR")
    yield cl
    ray.shutdown()
    cl.shutdown()


@pytest.fixture(scope="module")
def pool(cluster: Cluster) -> Iterator[RayPool]:
    with RayPool(address="auto", device="cpu") as p:
        _wait_workers(p, 2)
        yield p


def _wait_workers(pool: RayPool, n: int, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while len(pool.workers()) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(pool.workers()) >= n, pool.workers()


def _job(job_id: str, solution: Path, options: dict[str, Any] = FAST) -> VerifyJob:
    return VerifyJob(id=job_id, task=Bundle.from_dir(SILU), solution=Bundle.from_dir(solution),
                     options=job_options("cpu", options, True, 1))


def test_bench_over_the_ray_cluster(cluster: Cluster, tmp_path: Path) -> None:
    """`kloop bench --cluster auto` from a fresh process attaches to the running cluster (RAY_ADDRESS).

    First in the module: the `pool` fixture's actors, once made, hold every `kloop_slot` until the end."""
    from tests.pool.conftest import RMSNORM
    from tests.pool.test_bench_cli import check_bench, kloop

    proc = kloop("bench", str(SILU), str(RMSNORM), "--solutions", str(VECTORIZED),
                 str(RMSNORM / "solutions" / "python_vectorized"), "--cluster", "auto", "--device", "cpu",
                 "--trace-out", str(tmp_path / "traces.jsonl"), "--json", str(tmp_path / "bench.json"),
                 env={"RAY_ADDRESS": cluster.address})
    check_bench(proc, tmp_path, "ray")


def test_run_verifies_its_rounds_on_the_ray_cluster(cluster: Cluster, tmp_path: Path) -> None:
    """`kloop run --cluster auto`: the round's verdict comes from an actor (named in the result)."""
    import json

    from tests.pool.conftest import RMSNORM, ROOT
    from tests.pool.test_bench_cli import kloop

    run = tmp_path / "run"
    proc = kloop("run", str(RMSNORM), "--writer", f"replay:{ROOT / 'examples' / 'campaigns' / 'rmsnorm.jsonl'}",
                 "--reviewer", "rules", "--stages", "iterate", "--rounds", "1", "--device", "cpu",
                 "--cluster", "auto", "--out", str(run), env={"RAY_ADDRESS": cluster.address})
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads((run / "artifacts" / "round-001" / "verify.json").read_text())
    assert verdict["environment"][POOL_ENV_KEY].startswith("ray:"), verdict["environment"]
    pool_log = json.loads((run / "artifacts" / "round-001" / "logs" / "pool.json").read_text())
    assert pool_log["worker"]["pool"] == "ray" and pool_log["attempts"] == 1
    assert json.loads((run / "summary.json").read_text())["rounds"][0]["verify_status"] == verdict["status"]


def _ray_workers(run: Path, rounds: list[dict[str, Any]], cluster: Cluster) -> dict[int, str]:
    """{round: pool_worker} of every verified round, after checking each names a Ray actor on one of
    the cluster's worker nodes (`ray:HOST/actorN@NODE/cpu:...`)."""
    nodes = {node.node_id[:12] for node in cluster.worker_nodes}
    workers = {}
    for r in rounds:
        verdict = json.loads((run / "artifacts" / f"round-{r['round']:03d}" / "verify.json").read_text())
        label = verdict["environment"].get(POOL_ENV_KEY, "")
        where = label.split("/")[1] if label.count("/") >= 2 else ""
        assert label.startswith("ray:") and where.startswith("actor") and "@" in where, label
        assert where.split("@")[1] in nodes, (label, nodes)
        workers[r["round"]] = label
    return workers


def test_team_of_two_over_the_ray_cluster(cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kloop run --team 2 --cluster auto`: the local team test's scenario, verified on Ray actors,
    shows the same structure (branches, rounds, best, parents, rebase) as on the local pool."""
    from tests.loop.test_team import REBASE_LINES, check_rebase_run, team_run

    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    proc = team_run(tmp_path, REBASE_LINES, "--stall-after", "0", "--cluster", "auto")
    summary = check_rebase_run(tmp_path, proc, "ray")
    workers = _ray_workers(tmp_path / "run", summary["rounds"], cluster)
    assert len(workers) == 6, workers  # every round of both branches was judged on an actor


def _node_verifying(cluster: Cluster) -> Any | None:
    """The worker node under whose raylet a verification sandbox runs now (None: none yet)."""
    import psutil

    for node in cluster.worker_nodes:
        with contextlib.suppress(psutil.Error, KeyError, IndexError):
            raylet = psutil.Process(node.all_processes["raylet"][0].process.pid)
            for child in raylet.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    # a box forked from the fork server keeps the server's command line; its name says what it is
                    if child.name() == BOX_NAME or "kloop.verify.sandbox" in " ".join(child.cmdline()):
                        return node
    return None


def test_team_run_survives_a_node_killed_mid_verification(cluster: Cluster, tmp_path: Path) -> None:
    """A `--team 2` run over Ray loses a node while the node's actor is inside a branch's
    verification: that candidate is requeued and judged on the other node (attempts 2 in its
    pool.json), its lineage row carries that verdict, never a rejection for the lost worker, and the
    run completes with both branches' rounds. The node is added back for the tests after this one."""
    from tests.loop.helpers import FAST_VERIFY, ROWSCALE, VECTORIZED, write_campaign
    from tests.loop.test_end_to_end import ROW_LOOP

    from kloop.verify.result import VerifyResult

    lines = {"b1": [{"claim": "vectorized", "files": {"main.py": VECTORIZED}}],
             "b2": [{"claim": "row loop", "files": {"main.py": ROW_LOOP}}]}
    for branch, steps in lines.items():
        write_campaign(tmp_path / f"campaign-{branch}.jsonl", steps)
    run = tmp_path / "run"
    env = {**os.environ, "KLOOP_VERIFY_OPTIONS": json.dumps(FAST_VERIFY), "RAY_ADDRESS": cluster.address}
    driver = subprocess.Popen(
        [sys.executable, "-m", "kloop.cli", "run", str(ROWSCALE), "--writer", f"replay:{tmp_path}/campaign-{{branch}}.jsonl",
         "--reviewer", "rules", "--stages", "iterate", "--device", "cpu", "--team", "2", "--cluster", "auto",
         "--out", str(run)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, victim = time.monotonic() + 240, None
        while victim is None and driver.poll() is None and time.monotonic() < deadline:
            victim = _node_verifying(cluster)
            time.sleep(0.05)
        assert victim is not None, "no verification was seen on a node before the run ended"
        cluster.remove_node(victim)  # its raylet, the actor's worker and the sandbox under it
        _, stderr = driver.communicate(timeout=400)
    finally:
        if driver.poll() is None:
            driver.kill()
        cluster.add_node(**NODE)
    assert driver.returncode == 0, stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed", summary["reason"]
    assert sorted(r["branch"] for r in summary["rounds"]) == ["b1", "b2"]
    logs = {r["round"]: json.loads((run / "artifacts" / f"round-{r['round']:03d}" / "logs" / "pool.json").read_text())
            for r in summary["rounds"]}
    requeued = [n for n, log in logs.items() if log["attempts"] == 2]
    assert len(requeued) == 1, logs
    assert "lost" in logs[requeued[0]]["lost"][0], logs
    row = next(r for r in summary["rounds"] if r["round"] == requeued[0])
    verdict = VerifyResult.model_validate_json(
        (run / "artifacts" / f"round-{requeued[0]:03d}" / "verify.json").read_text())
    assert judged(verdict), verdict.reasons  # a full verdict on the candidate, not a lost worker
    assert row["verify_status"] == verdict.status.value
    alive = {node.node_id[:12] for node in cluster.worker_nodes} - {victim.node_id[:12]}
    assert verdict.environment[POOL_ENV_KEY].split("/")[1].split("@")[1] in alive  # judged on the surviving node


def test_ray_pool_verifies_on_an_actor(pool: RayPool) -> None:
    """A verdict from an actor, the task put in the object store once, not sent in each job."""
    outcome = pool.submit(_job("r1", VECTORIZED)).result(timeout=300)
    assert outcome.kind is OutcomeKind.verdict, outcome.error
    assert judged(outcome.verify_result())
    assert outcome.worker is not None and outcome.worker.pool == "ray"
    assert outcome.verify_result().environment[POOL_ENV_KEY].startswith("ray:")
    assert list(pool.task_objects) == [Bundle.from_dir(SILU).digest]


def test_an_actor_refuses_a_task_object_that_is_not_the_named_task(cluster: Cluster) -> None:
    """The task object is fetched by reference; an object whose bundle is not the digest the job names
    is kloop's failure (harness), never verified. Called in this process: nothing is verified."""
    from kloop.pool.ray_pool import VerifierActor

    job = _job("forged", VECTORIZED)
    other = ray.put(Bundle.from_dir(VECTORIZED).model_dump_json())  # a real bundle, not the task's
    out = VerifierActor("t", "cpu").verify(job.model_dump_json(exclude={"task"}), job.task.digest, [other])
    outcome = JobOutcome.model_validate_json(out)
    assert outcome.kind is OutcomeKind.harness and "holds bundle" in (outcome.error or ""), outcome


def test_killed_node_requeues_and_a_new_node_joins(cluster: Cluster, pool: RayPool) -> None:
    """Two jobs on two actors; the node seen running a verification sandbox is removed mid-job.

    The fast option set is enough: the node is killed while its sandbox is alive, not after a
    guessed delay (the slow set only made that guess safe, at 40 s a job)."""
    futures = [pool.submit(_job(f"k{i}", VECTORIZED)) for i in range(2)]
    deadline, victim = time.monotonic() + 120, None
    while victim is None and not all(f.done() for f in futures) and time.monotonic() < deadline:
        victim = _node_verifying(cluster)
        time.sleep(0.05)
    assert victim is not None, "no verification was seen on a node"
    cluster.remove_node(victim)  # kills the node's raylet, workers and the sandbox under them
    outcomes = [f.result(timeout=600) for f in futures]
    assert all(o.kind is OutcomeKind.verdict for o in outcomes), [o.error for o in outcomes]
    assert all(judged(o.verify_result()) for o in outcomes)  # none counted as rejected
    requeued = [o for o in outcomes if o.attempts == 2]
    assert len(requeued) == 1 and "lost" in requeued[0].lost[0], [o.lost for o in outcomes]
    assert requeued[0].worker is not None and requeued[0].worker.node != victim.node_id[:12]
    cluster.add_node(**NODE)  # the node comes back: its resource appears, an actor is placed there
    _wait_workers(pool, 2)
    again = pool.submit(_job("after", VECTORIZED)).result(timeout=300)
    assert again.kind is OutcomeKind.verdict and again.attempts == 1
