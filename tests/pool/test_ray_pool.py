"""The Ray pool on a real two-node local Ray cluster, custom resources in place of GPUs.

One cluster for the whole module (Ray start-up costs seconds on this machine). The fault test
kills a node while its actor holds a candidate: the candidate is requeued and judged on the
other node, never counted as rejected; a node added back joins the pool again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402 - after the skip when Ray is absent
from tests.pool.conftest import FAST, SILU, SLOW, VECTORIZED, judged  # noqa: E402

from kloop.pool.bundle import Bundle  # noqa: E402
from kloop.pool.job import POOL_ENV_KEY, OutcomeKind, VerifyJob  # noqa: E402
from kloop.pool.ray_pool import CPU_RESOURCE, RayPool  # noqa: E402
from kloop.pool.verifier import job_options  # noqa: E402

FAST_HEALTH = {"health_check_period_ms": 500, "health_check_failure_threshold": 3, "health_check_timeout_ms": 500}
NODE: dict[str, Any] = {"num_cpus": 1, "resources": {CPU_RESOURCE: 1}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    cl = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "_system_config": FAST_HEALTH})
    for _ in range(2):
        cl.add_node(**NODE)
    cl.wait_for_nodes()
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


def test_ray_pool_verifies_on_an_actor(pool: RayPool) -> None:
    outcome = pool.submit(_job("r1", VECTORIZED)).result(timeout=300)
    assert outcome.kind is OutcomeKind.verdict, outcome.error
    assert judged(outcome.verify_result())
    assert outcome.worker is not None and outcome.worker.pool == "ray"
    assert outcome.verify_result().environment[POOL_ENV_KEY].startswith("ray:")


def test_killed_node_requeues_and_a_new_node_joins(cluster: Cluster, pool: RayPool) -> None:
    futures = [pool.submit(_job(f"k{i}", VECTORIZED, SLOW)) for i in range(2)]
    deadline = time.monotonic() + 120
    while len(pool.busy()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pool.busy()) == 2, pool.busy()
    time.sleep(1.0)  # both actors are inside a verification
    victim = next(n for n in cluster.worker_nodes)
    cluster.remove_node(victim)  # kills the node's raylet, workers and the sandbox under them
    outcomes = [f.result(timeout=600) for f in futures]
    assert all(o.kind is OutcomeKind.verdict for o in outcomes), [o.error for o in outcomes]
    assert all(judged(o.verify_result()) for o in outcomes)  # none counted as rejected
    requeued = [o for o in outcomes if o.attempts == 2]
    assert len(requeued) == 1 and "lost" in requeued[0].lost[0], [o.lost for o in outcomes]
    cluster.add_node(**NODE)  # the node comes back: its resource appears, an actor is placed there
    _wait_workers(pool, 2)
    again = pool.submit(_job("after", VECTORIZED)).result(timeout=300)
    assert again.kind is OutcomeKind.verdict and again.attempts == 1

